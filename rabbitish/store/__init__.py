"""Durable store (SQLite); the only place with SQL. `open_store` recovers a data dir into the
engine and returns the journal that persists what changes from then on.

The package imports its journal, writer, recovery and SQL statements only when a store is
opened or checked: a broker on :memory: imports `rabbitish.store.spill` (its bodies page out
there under memory pressure) and need not wait for the rest."""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rabbitish.store.lock import DataDirLock
from rabbitish.store.pager import KEEP_BYTES, Pager
from rabbitish.store.schema import CLEAN_STOP, StoreError, db_path, open_database, read_only_copy

if TYPE_CHECKING:
    from rabbitish.engine.message import PropertyCodec
    from rabbitish.engine.node import Node
    from rabbitish.store.journal import SqliteJournal
    from rabbitish.store.recovery import RecoveryStats

__all__ = ["RecoveryStats", "SqliteJournal", "StoreError", "check_store", "open_store"]


def __getattr__(name: str) -> Any:
    # The exported classes, imported when first asked for (see the docstring).
    if name == "SqliteJournal":
        from rabbitish.store.journal import SqliteJournal

        return SqliteJournal
    if name == "RecoveryStats":
        from rabbitish.store.recovery import RecoveryStats

        return RecoveryStats
    raise AttributeError(name)


log = logging.getLogger("rabbitish.store")

# Crash tests: with this variable naming a start-up stage, the start stops there (logging the
# stage) until the process is killed, so a kill lands at a known point of recovery.
PAUSE_ENV = "RABBITISH_PAUSE_START_AT"
STAGES = ("opened", "locked", "messages", "recovered", "marked", "journal")


def _stage(name: str) -> None:
    if os.environ.get(PAUSE_ENV) == name:
        log.warning("start-up paused at stage %s (%s)", name, PAUSE_ENV)
        while True:
            time.sleep(3600)


async def open_store(
    data_dir: str,
    fsync: bool,
    node: Node,
    codec: PropertyCodec,
    progress: Callable[[int, int], None] | None = None,
    backlog_limit: int | None = None,  # None: the writer's own default
    page_out_bytes: int = KEEP_BYTES,
) -> tuple[SqliteJournal, RecoveryStats]:
    """Validate and recover `data_dir`, then journal every later durable change. Raises
    StoreError (one line: which file, what to do) without touching a file it cannot use."""
    from rabbitish.store.access import journal_access, load_access
    from rabbitish.store.journal import SqliteJournal
    from rabbitish.store.recovery import recover
    from rabbitish.store.writer import BACKLOG_LIMIT, JournalWriter

    path = db_path(data_dir)
    conn = open_database(path, fsync)
    _stage("opened")
    lock = DataDirLock(path.parent)
    try:
        lock.acquire()
    except StoreError:
        conn.close()
        raise
    _stage("locked")
    pager = Pager(path, page_out_bytes)

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        _stage("messages")

    try:
        try:
            load_access(conn, node)
            stats = recover(conn, node, codec, pager, report, str(path))
        except StoreError:
            lock.release()
            raise
        _stage("recovered")
        conn.executemany("DELETE FROM half_txns WHERE vhost = ? AND id = ?", stats.stale_half)
        # Locks whose transaction is gone (recovery put their messages back in place).
        conn.execute(
            "DELETE FROM half_settlements WHERE NOT EXISTS (SELECT 1 FROM half_txns t "
            "WHERE t.vhost = half_settlements.vhost AND t.id = half_settlements.txn_id)"
        )
        # From here until the next clean stop, a crash is what the data dir says happened.
        conn.execute("DELETE FROM meta WHERE key = ?", (CLEAN_STOP,))
        _stage("marked")
    finally:
        conn.close()
    writer = JournalWriter(
        path,
        fsync,
        backlog_limit=BACKLOG_LIMIT if backlog_limit is None else backlog_limit,
        pager=pager,
        on_failure=functools.partial(_store_alarm, node),
    )
    journal = SqliteJournal(writer, node.scheduler.now, pager, lock)
    await journal.start()
    node.use_journal(journal)
    journal_access(node, writer)
    _stage("journal")
    return journal, stats


def _store_alarm(node: Node, reason: str | None) -> None:
    """Writes failing raise the node's store alarm (publishers are blocked); a success clears it."""
    if reason is None:
        node.alarms.clear("store")
    else:
        node.alarms.raise_alarm("store", f"store write failed ({reason})")


def check_store(data_dir: str, node: Node, codec: PropertyCodec) -> RecoveryStats:
    """`serve --check`: everything a start does to `data_dir` short of serving (validate, take
    the lock, run the whole recovery into `node`), without writing to it. Raises StoreError."""
    from rabbitish.store.access import load_access
    from rabbitish.store.recovery import recover

    path = db_path(data_dir)
    if not path.exists():
        raise StoreError(
            f"{path}: no rabbitish database here (serve would start an empty broker); "
            "pass the --data-dir the broker ran with"
        )
    DataDirLock(path.parent).probe()
    with read_only_copy(path) as conn:
        load_access(conn, node, seed=False)
        return recover(conn, node, codec, Pager(path, KEEP_BYTES), source=str(path))
