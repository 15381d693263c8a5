"""Connections from Spark tasks and the driver: plain AMQP 0-9-1 (amqp_client), so the data
source works against RabbitMQ too, and the handshake says whether half transactions are there.
A Python worker that Spark reuses for task after task keeps its tx channel between them
(`reused_session`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pamqp import commands

from rabbitish.spark.amqp_client import AmqpError, Channel, Connection, encode_properties
from rabbitish.wire_names import HALF_HEADER, HALF_TRANSACTIONS_CAPABILITY, TXN_EXCHANGE

__all__ = ["Session", "decide", "reused_session", "session"]

# A kept channel idle longer than this is closed rather than reused: well inside the heartbeat
# timeouts brokers propose (60 s), which an idle connection does not answer.
REUSE_WITHIN_SECONDS = 20.0


@dataclass(frozen=True)
class Session:
    """A channel on a connection of its own, and what the broker announced about half
    transactions when the connection opened."""

    channel: Channel
    half: bool


def _half(connection: Connection) -> bool:
    return connection.server_capabilities.get(HALF_TRANSACTIONS_CAPABILITY) is True


@contextmanager
def session(url: str, tx: bool) -> Iterator[Session]:
    """A channel (in tx mode when `tx`) whose connection is closed on exit: closing it
    unsettled is what undoes an unfinished task (uncommitted tx work is discarded, unacked
    messages go back to their queue)."""
    conn = Connection(url)
    try:
        channel = conn.channel()
        if tx:
            channel.tx_select()
        yield Session(channel, _half(conn))
    finally:
        conn.close()


@dataclass
class _Kept:
    connection: Connection
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
        kept.connection.close()
        kept = None
    if kept is None:
        conn = Connection(url)
        try:
            channel = conn.channel()
            channel.tx_select()
        except BaseException:
            conn.close()
            raise
        kept = _Kept(conn, Session(channel, _half(conn)), 0.0)
    try:
        yield kept.session
    except BaseException:
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
        kept.connection.process(0)
    except AmqpError:
        return False
    return kept.connection.is_open and kept.session.channel.is_open


def half_properties(txn_id: str) -> bytes:
    """The encoded properties of a message of half transaction (or decision about) `txn_id`."""
    return encode_properties(commands.Basic.Properties(headers={HALF_HEADER: txn_id}))


def decide(channel: Channel, txn_ids: Iterator[str] | list[str], outcome: str) -> None:
    """Publish a commit or rollback decision per ID; unknown IDs are dropped by the broker, so
    deciding an ID that holds nothing is harmless."""
    for txn_id in txn_ids:
        channel.publish(TXN_EXCHANGE, outcome, half_properties(txn_id), b"")
