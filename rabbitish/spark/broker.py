"""Connections from Spark tasks and the driver: plain pika, so the data source works against
RabbitMQ too, and the handshake says whether half transactions are there. A Python worker that
Spark reuses for task after task keeps its tx channel between them (`reused_session`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pika
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import AMQPError

from rabbitish.wire_names import HALF_HEADER, HALF_TRANSACTIONS_CAPABILITY, TXN_EXCHANGE

__all__ = ["Session", "decide", "reused_session", "session"]

# A kept channel idle longer than this is closed rather than reused: well inside the heartbeat
# timeouts brokers propose (60 s), which an idle pika connection does not answer.
REUSE_WITHIN_SECONDS = 20.0


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


@dataclass
class _Kept:
    connection: pika.BlockingConnection
    session: Session
    idle_since: float


_kept: dict[str, _Kept] = {}  # url -> the tx channel this process keeps between tasks


@contextmanager
def reused_session(url: str) -> Iterator[Session]:
    """A tx channel, the one this process kept from an earlier use when it is still open.
    Kept again only after a clean exit, where the caller has committed everything it staged;
    any exception closes the connection, which discards an unfinished tx, so a failed task
    never leaves work behind for the next one to commit."""
    kept = _kept.pop(url, None)
    if kept is not None and not _usable(kept):
        if kept.connection.is_open:
            kept.connection.close()
        kept = None
    if kept is None:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        try:
            capabilities = conn._impl.server_capabilities or {}
            channel = conn.channel()
            channel.tx_select()
        except BaseException:
            if conn.is_open:
                conn.close()
            raise
        half = capabilities.get(HALF_TRANSACTIONS_CAPABILITY) is True
        kept = _Kept(conn, Session(channel, half), 0.0)
    try:
        yield kept.session
    except BaseException:
        if kept.connection.is_open:
            kept.connection.close()
        raise
    kept.idle_since = time.monotonic()
    _kept[url] = kept


def _usable(kept: _Kept) -> bool:
    """Open, recently used, and the broker has not closed it meanwhile (what it sent while
    the channel sat idle is read first)."""
    if time.monotonic() - kept.idle_since > REUSE_WITHIN_SECONDS:
        return False
    try:
        kept.connection.process_data_events(time_limit=0)
    except AMQPError:
        return False
    return kept.connection.is_open and kept.session.channel.is_open


def decide(channel: BlockingChannel, txn_ids: Iterator[str] | list[str], outcome: str) -> None:
    """Publish a commit or rollback decision per ID; unknown IDs are dropped by the broker, so
    deciding an ID that holds nothing is harmless."""
    for txn_id in txn_ids:
        props = pika.BasicProperties(headers={HALF_HEADER: txn_id})
        channel.basic_publish(TXN_EXCHANGE, outcome, b"", props)
