"""The streaming reader's micro-batches as prepared transactions (rabbitish, which announces
half transactions): a planned batch's messages are acked into one or more prepared
transactions (of at most `prefetch` messages each: the consumer's credit) named after the query
and each one's first offset, so the broker, not a log under the checkpoint, keeps them until
Spark has committed the batch.

The offsets Spark stores carry the names: `{"seq": end, "reader": R, "txn": T}` says messages
before `end` are numbered, that R names the query (picked on its first batch and kept in
Spark's offset log, as Spark keeps its query id) and that T holds the batch ending at `end`
(T is a list of names, in order, when the batch is several prepared transactions). A
restarted query reads T's messages again from the broker by those names (a publish to
amq.rabbitish.txn with routing key `read`), and `commit(end)` commits T: the acks apply and the
messages leave their queue, in one step on the broker."""

from __future__ import annotations

from typing import Any

from pamqp import commands

from rabbitish.spark.amqp_client import Channel, Connection, encode_properties
from rabbitish.spark.broker import half_properties
from rabbitish.spark.schema import DeliveryRows
from rabbitish.wire_names import HALF_HEADER, TXN_EXCHANGE

TXN_PREFIX = "spark-read-"


def txn_name(reader: str, start: int) -> str:
    """The prepared transaction holding the batch that starts at offset `start` of query
    `reader`: deterministic, so a restarted driver finds what a dead one prepared."""
    return f"{TXN_PREFIX}{reader}-{start}"


def txn_names(value: Any) -> list[str]:
    """The prepared transactions an offset's `txn` (or `prev`) names, in order: one name, or
    a list when the batch is made of several (absent: none)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(name) for name in value]


def prepare(channel: Channel, last_tag: int, name: str, wait: bool = True) -> None:
    """Ack every delivery up to `last_tag` (the batch: the oldest unacked deliveries of the
    tx channel) into prepared transaction `name`; returns once the broker has it on disk, or
    (not `wait`) once it is sent: it is on disk when `channel.tx_commits_wait()` returns.
    Decisions staged before it apply at the same tx.commit."""
    channel.basic_ack(last_tag, multiple=True)
    channel.publish(TXN_EXCHANGE, "prepare", half_properties(name), b"")
    if wait:
        channel.tx_commit()
    else:
        channel.tx_commit_send()


def decide_batches(channel: Channel, names: list[str]) -> None:
    """Commit prepared batches on the tx channel: their messages leave the queue. Repeating a
    commit is a no-op on the broker, and so is committing a name it never held."""
    if names:
        stage_decisions(channel, names)
        channel.tx_commit()


def stage_decisions(channel: Channel, names: list[str]) -> None:
    """The commit decisions of prepared batches, staged in the channel's tx: they apply at its
    next tx.commit, also when that commit prepares another batch (docs/transactions.md)."""
    for name in names:
        channel.publish(TXN_EXCHANGE, "commit", half_properties(name), b"")


class BatchReader:
    """Reads a prepared batch's messages again: the broker puts copies on an exclusive queue of
    this connection, in the order they were acked, and they are taken with basic.get."""

    def __init__(self, connection: Connection) -> None:
        self.channel = connection.channel()
        self.channel.confirm_select()
        declared = self.channel.queue_declare("", exclusive=True, auto_delete=True)
        self.queue = str(declared.queue)
        self._rows = DeliveryRows()

    def read(self, name: str) -> list[tuple[Any, ...]] | None:
        """The rows of prepared transaction `name`, or None when the broker does not hold it
        (it returns the mandatory request). A re-read row says redelivered: the message was
        delivered before."""
        props = commands.Basic.Properties(headers={HALF_HEADER: name}, reply_to=self.queue)
        self.channel.publish(TXN_EXCHANGE, "read", encode_properties(props), b"", mandatory=True)
        if not self.channel.confirmed():
            return None
        rows: list[tuple[Any, ...]] = []
        while True:
            message = self.channel.basic_get(self.queue, no_ack=True)
            if message is None:
                return rows
            row = self._rows.row(message)
            rows.append((*row[:-1], True))
