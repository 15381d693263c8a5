"""Durable store (SQLite); the only place with SQL. `open_store` recovers a data dir into the
engine and returns the journal that persists what changes from then on."""

from __future__ import annotations

import functools
from collections.abc import Callable

from rabbitish.engine.message import PropertyCodec
from rabbitish.engine.node import Node
from rabbitish.store.access import journal_access, load_access
from rabbitish.store.journal import BACKLOG_LIMIT, SqliteJournal
from rabbitish.store.lock import DataDirLock
from rabbitish.store.pager import KEEP_BYTES, Pager
from rabbitish.store.recovery import RecoveryStats, recover
from rabbitish.store.schema import StoreError, db_path, open_database

__all__ = ["RecoveryStats", "SqliteJournal", "StoreError", "open_store"]


async def open_store(
    data_dir: str,
    fsync: bool,
    node: Node,
    codec: PropertyCodec,
    progress: Callable[[int, int], None] | None = None,
    backlog_limit: int = BACKLOG_LIMIT,
    page_out_bytes: int = KEEP_BYTES,
) -> tuple[SqliteJournal, RecoveryStats]:
    """Validate and recover `data_dir`, then journal every later durable change. Raises
    StoreError (one line: which file, what to do) without touching a file it cannot use."""
    path = db_path(data_dir)
    conn = open_database(path, fsync)
    lock = DataDirLock(path.parent)
    try:
        lock.acquire()
    except StoreError:
        conn.close()
        raise
    pager = Pager(path, page_out_bytes)
    try:
        load_access(conn, node)
        stats = recover(conn, node, codec, pager, progress)
    finally:
        conn.close()
    journal = SqliteJournal(path, fsync, node.scheduler.now, backlog_limit)
    journal.on_failure = functools.partial(_store_alarm, node)
    journal.pager = pager
    journal.lock = lock
    await journal.start()
    node.use_journal(journal)
    journal_access(node, journal)
    return journal, stats


def _store_alarm(node: Node, reason: str | None) -> None:
    """Writes failing raise the node's store alarm (publishers are blocked); a success clears it."""
    if reason is None:
        node.alarms.clear("store")
    else:
        node.alarms.raise_alarm("store", f"store write failed ({reason})")
