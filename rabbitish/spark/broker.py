"""Connections from Spark tasks and the driver: plain pika, so the data source works against
RabbitMQ too, and the handshake says whether half transactions are there."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pika
from pika.adapters.blocking_connection import BlockingChannel

from rabbitish.wire_names import HALF_HEADER, HALF_TRANSACTIONS_CAPABILITY, TXN_EXCHANGE

__all__ = ["Session", "decide", "session"]


@dataclass(frozen=True)
class Session:
    """A channel on a connection of its own, and what the broker announced about half
    transactions when the connection opened."""

    channel: BlockingChannel
    half: bool


@contextmanager
def session(url: str, tx: bool) -> Iterator[Session]:
    """A channel (in tx mode when `tx`) whose connection is closed on exit: closing it
    unsettled is what undoes an unfinished task (uncommitted tx work is discarded, unacked
    messages go back to their queue)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        capabilities = conn._impl.server_capabilities or {}
        channel = conn.channel()
        if tx:
            channel.tx_select()
        yield Session(channel, capabilities.get(HALF_TRANSACTIONS_CAPABILITY) is True)
    finally:
        if conn.is_open:
            conn.close()


def decide(channel: BlockingChannel, txn_ids: Iterator[str] | list[str], outcome: str) -> None:
    """Publish a commit or rollback decision per ID; unknown IDs are dropped by the broker, so
    deciding an ID that holds nothing is harmless."""
    for txn_id in txn_ids:
        props = pika.BasicProperties(headers={HALF_HEADER: txn_id})
        channel.basic_publish(TXN_EXCHANGE, outcome, b"", props)
