"""The streaming reader's micro-batches as prepared transactions (rabbitish, which announces
half transactions): a planned batch's messages are acked into a prepared transaction named after
the query and the batch's first offset, so the broker, not a log under the checkpoint, keeps
them until Spark has committed the batch.

The offsets Spark stores carry the names: `{"seq": end, "reader": R, "txn": T}` says messages
before `end` are numbered, that R names the query (picked on its first batch and kept in
Spark's offset log, as Spark keeps its query id) and that T holds the batch ending at `end`. A
restarted query reads T's messages again from the broker by that name (a publish to
amq.rabbitish.txn with routing key `read`), and `commit(end)` commits T: the acks apply and the
messages leave their queue, in one step on the broker."""

from __future__ import annotations

from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import UnroutableError

from rabbitish.spark.schema import message_row
from rabbitish.wire_names import HALF_HEADER, TXN_EXCHANGE

TXN_PREFIX = "spark-read-"


def txn_name(reader: str, start: int) -> str:
    """The prepared transaction holding the batch that starts at offset `start` of query
    `reader`: deterministic, so a restarted driver finds what a dead one prepared."""
    return f"{TXN_PREFIX}{reader}-{start}"


def prepare(channel: BlockingChannel, last_tag: int, name: str) -> None:
    """Ack every delivery up to `last_tag` (the batch: the oldest unacked deliveries of the
    tx channel) into prepared transaction `name`; returns once the broker has it on disk.
    Decisions staged before it apply at the same tx.commit."""
    channel.basic_ack(last_tag, multiple=True)
    props = pika.BasicProperties(headers={HALF_HEADER: name})
    channel.basic_publish(TXN_EXCHANGE, "prepare", b"", props)
    channel.tx_commit()


def decide_batches(channel: BlockingChannel, names: list[str]) -> None:
    """Commit prepared batches on the tx channel: their messages leave the queue. Repeating a
    commit is a no-op on the broker, and so is committing a name it never held."""
    if names:
        stage_decisions(channel, names)
        channel.tx_commit()


def stage_decisions(channel: BlockingChannel, names: list[str]) -> None:
    """The commit decisions of prepared batches, staged in the channel's tx: they apply at its
    next tx.commit, also when that commit prepares another batch (docs/transactions.md)."""
    for name in names:
        props = pika.BasicProperties(headers={HALF_HEADER: name})
        channel.basic_publish(TXN_EXCHANGE, "commit", b"", props)


class BatchReader:
    """Reads a prepared batch's messages again: the broker puts copies on an exclusive queue of
    this connection, in the order they were acked, and they are taken with basic.get."""

    def __init__(self, connection: pika.BlockingConnection) -> None:
        self.channel = connection.channel()
        self.channel.confirm_delivery()
        self.queue = self.channel.queue_declare("", exclusive=True, auto_delete=True).method.queue

    def read(self, name: str) -> list[tuple[Any, ...]] | None:
        """The rows of prepared transaction `name`, or None when the broker does not hold it.
        A re-read row says redelivered: the message was delivered before."""
        props = pika.BasicProperties(headers={HALF_HEADER: name}, reply_to=self.queue)
        try:
            self.channel.basic_publish(TXN_EXCHANGE, "read", b"", props, mandatory=True)
        except UnroutableError:
            return None
        rows: list[tuple[Any, ...]] = []
        while True:
            method, properties, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return rows
            row = message_row(method, properties, body)
            rows.append((*row[:-1], True))
