"""The single writer. The engine's durable changes become SQL statements queued in order on the
event loop; one task takes whatever has accumulated and writes it as one SQLite transaction on
aiosqlite's thread (runs of the same statement as one executemany), so concurrent commits and
confirms from many channels share one transaction and one sync (group commit). With fsync the
database runs synchronous=FULL, so the COMMIT returns once the batch is on disk; without it,
synchronous=OFF. After each batch the task wakes the waiters it covers and lets the pager drop
the bodies of long queues' messages it has just written (pager.py reads them back, on the event
loop thread). Recovery fills the engine before this journal is attached, so it journals only
changes made after start."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from pamqp import encode

from rabbitish.engine.exchanges.base import freeze
from rabbitish.store.lock import DataDirLock
from rabbitish.store.pager import KEEP_IN_MEMORY, Pager

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Binding, Exchange
    from rabbitish.engine.half import HalfTxn
    from rabbitish.engine.message import Message, QueueEntry
    from rabbitish.engine.queue import Queue

log = logging.getLogger("rabbitish.store")

Op = tuple[str, tuple[Any, ...]]

_INSERT_MESSAGE = (
    "INSERT OR IGNORE INTO messages (id, exchange, routing_key, properties, body, priority, "
    "expiration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_QM = (
    "INSERT OR REPLACE INTO queue_messages (vhost, queue, seq, message_id, delivered, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_DELETE_QM = "DELETE FROM queue_messages WHERE vhost = ? AND queue = ? AND seq = ?"
# A message row goes when no queue and no held half message refers to it any more.
_DELETE_ORPHAN = (
    "DELETE FROM messages WHERE id = ? AND NOT EXISTS "
    "(SELECT 1 FROM queue_messages WHERE message_id = ?) AND NOT EXISTS "
    "(SELECT 1 FROM half_messages WHERE message_id = ?)"
)
_DELETE_ALL_ORPHANS = (
    "DELETE FROM messages WHERE id NOT IN (SELECT message_id FROM queue_messages) "
    "AND id NOT IN (SELECT message_id FROM half_messages)"
)
_INSERT_HALF = (
    "INSERT OR REPLACE INTO half_messages (vhost, txn_id, ord, queue, message_id) "
    "VALUES (?, ?, ?, ?, ?)"
)
_SAVE_HALF_TXN = (
    "INSERT OR REPLACE INTO half_txns (vhost, id, created_at, check_queue, immunity, "
    "checks_sent, last_check_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_MARK_DELIVERED = (
    "UPDATE queue_messages SET delivered = 1 WHERE vhost = ? AND queue = ? AND seq = ?"
)


def encode_table(table: dict[str, Any]) -> bytes:
    return encode.field_table(table)


def binding_args_key(arguments: dict[str, Any]) -> bytes:
    return repr(freeze(arguments)).encode()


def _dest_kind(destination: Any) -> str:
    from rabbitish.engine.queue import Queue

    return "queue" if isinstance(destination, Queue) else "exchange"


class SqliteJournal:
    def __init__(self, path: Path, fsync: bool, clock: Callable[[], float]) -> None:
        self.path = path
        self.fsync = fsync
        self.clock = clock  # the engine's monotonic clock, to turn expiry times into wall time
        self._ops: list[Op] = []
        self.position = 0
        self.synced = 0
        self._waiters: deque[tuple[int, Callable[[], None]]] = deque()
        self._wake = asyncio.Event()
        self._db: aiosqlite.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.pager: Pager | None = None
        self.lock: DataDirLock | None = None
        self._page_candidates: list[Message] = []
        self.batches = 0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._db = await aiosqlite.connect(self.path, isolation_level=None)
        await self._db.execute("PRAGMA journal_mode=WAL")
        await self._db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'OFF'}")
        self._task = asyncio.get_running_loop().create_task(self._writer(), name="journal")

    async def close(self) -> None:
        """Write what is pending, then stop."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._db is not None:
            await self._db.close()
            self._db = None
        if self.pager is not None:
            self.pager.close()
            self.pager = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # ------------------------------------------------------------------ waiting
    def when_synced(self, position: int, callback: Callable[[], None]) -> None:
        if position <= self.synced:
            callback()
        else:
            self._waiters.append((position, callback))

    # ------------------------------------------------------------------ writer
    def _op(self, sql: str, params: tuple[Any, ...]) -> None:
        self._ops.append((sql, params))
        self.position += 1
        self._wake.set()

    async def _writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._ops:
                ops, self._ops = self._ops, []
                candidates, self._page_candidates = self._page_candidates, []
                upto = self.position
                try:
                    await self._write(ops)
                except Exception:
                    log.exception("journal write failed; %d changes not persisted", len(ops))
                    raise
                self.synced = upto
                self.batches += 1
                if self.pager is not None:
                    for message in candidates:  # on disk now: the body can leave memory
                        self.pager.page_out(message)
                waiters = self._waiters
                while waiters and waiters[0][0] <= upto:
                    waiters.popleft()[1]()
            if self._closing and not self._ops:
                return

    async def _write(self, ops: list[Op]) -> None:
        db = self._db
        assert db is not None
        await db.execute("BEGIN")
        run_sql, run_params = ops[0][0], [ops[0][1]]
        for sql, params in ops[1:]:
            if sql == run_sql:
                run_params.append(params)
                continue
            await db.executemany(run_sql, run_params)
            run_sql, run_params = sql, [params]
        await db.executemany(run_sql, run_params)
        await db.execute("COMMIT")

    # ------------------------------------------------------------------ wiring
    def exchange_declared(self, exchange: Exchange, arg_types: dict[str, str]) -> None:
        if exchange.durable and exchange.name and not exchange.name.startswith("amq."):
            self._op(
                "INSERT OR REPLACE INTO exchanges VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    exchange.vhost,
                    exchange.name,
                    exchange.type_name,
                    int(exchange.auto_delete),
                    int(exchange.internal),
                    encode_table(exchange.arguments),
                    json.dumps(arg_types),
                ),
            )

    def exchange_deleted(self, exchange: Exchange) -> None:
        if exchange.durable:
            self._op(
                "DELETE FROM exchanges WHERE vhost = ? AND name = ?",
                (exchange.vhost, exchange.name),
            )
            self._op(
                "DELETE FROM bindings WHERE vhost = ? AND (source = ? OR "
                "(dest_kind = 'exchange' AND destination = ?))",
                (exchange.vhost, exchange.name, exchange.name),
            )

    def queue_declared(self, queue: Queue, arg_types: dict[str, str]) -> None:
        if queue.durable:
            self._op(
                "INSERT OR REPLACE INTO queues VALUES (?, ?, ?, ?, ?)",
                (
                    queue.vhost.name,
                    queue.name,
                    int(queue.auto_delete),
                    encode_table(queue.arguments),
                    json.dumps(arg_types),
                ),
            )

    def queue_deleted(self, queue: Queue) -> None:
        if queue.durable:
            vhost = queue.vhost.name
            self._op("DELETE FROM queues WHERE vhost = ? AND name = ?", (vhost, queue.name))
            self._op(
                "DELETE FROM bindings WHERE vhost = ? AND dest_kind = 'queue' AND destination = ?",
                (vhost, queue.name),
            )
            self._op(
                "DELETE FROM queue_messages WHERE vhost = ? AND queue = ?", (vhost, queue.name)
            )
            self._op("DELETE FROM half_messages WHERE vhost = ? AND queue = ?", (vhost, queue.name))
            self._op(_DELETE_ALL_ORPHANS, ())

    def binding_added(self, binding: Binding) -> None:
        if binding.source.durable and binding.destination.durable:
            self._op(
                "INSERT OR REPLACE INTO bindings VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    binding.source.vhost,
                    binding.source.name,
                    _dest_kind(binding.destination),
                    binding.destination.name,
                    binding.routing_key,
                    binding_args_key(binding.arguments),
                    encode_table(binding.arguments),
                ),
            )

    def binding_removed(self, binding: Binding) -> None:
        if binding.source.durable and binding.destination.durable:
            self._op(
                "DELETE FROM bindings WHERE vhost = ? AND source = ? AND dest_kind = ? AND "
                "destination = ? AND routing_key = ? AND args_key = ?",
                (
                    binding.source.vhost,
                    binding.source.name,
                    _dest_kind(binding.destination),
                    binding.destination.name,
                    binding.routing_key,
                    binding_args_key(binding.arguments),
                ),
            )

    # ------------------------------------------------------------------ messages
    def _message_row(self, message: Message) -> None:
        self._op(
            _INSERT_MESSAGE,
            (
                message.id,
                message.exchange,
                message.routing_key,
                message.raw_properties,
                message.body,
                message.priority,
                message.expiration_ms,
            ),
        )

    def message_enqueued(self, queue: Queue, entry: QueueEntry) -> None:
        message = entry.message
        if not (queue.durable and message.persistent):
            return
        self._message_row(message)
        expires = None
        if entry.expires_at is not None:
            expires = time.time() + (entry.expires_at - self.clock())
        self._op(
            _INSERT_QM,
            (
                queue.vhost.name,
                queue.name,
                entry.seq,
                message.id,
                int(entry.delivery_count > 0),
                expires,
            ),
        )
        if self.pager is not None and queue.message_count > KEEP_IN_MEMORY:
            self._page_candidates.append(message)

    def message_removed(self, queue: Queue, entry: QueueEntry) -> None:
        message = entry.message
        if queue.durable and message.persistent:
            self._op(_DELETE_QM, (queue.vhost.name, queue.name, entry.seq))
            self._op(_DELETE_ORPHAN, (message.id, message.id, message.id))

    def message_delivered(self, queue: Queue, entry: QueueEntry) -> None:
        if queue.durable and entry.message.persistent:
            self._op(_MARK_DELIVERED, (queue.vhost.name, queue.name, entry.seq))

    # ------------------------------------------------------------------ half messages
    def half_held(self, queue: Queue, message: Message, txn_id: str, ord_: int) -> None:
        self._message_row(message)
        self._op(_INSERT_HALF, (queue.vhost.name, txn_id, ord_, queue.name, message.id))

    def half_txn_saved(self, vhost: str, txn: HalfTxn) -> None:
        self._op(
            _SAVE_HALF_TXN,
            (
                vhost,
                txn.id,
                txn.created_at,
                txn.check_queue,
                txn.immunity,
                txn.checks_sent,
                txn.last_check_at,
            ),
        )

    def half_decided(self, vhost: str, txn: HalfTxn, commit: bool, forget: str | None) -> None:
        """Runs after a commit's enqueues, in the same batch: the rows of the held messages go
        and the message rows the queues now hold stay, all in one SQLite transaction."""
        if txn.durable:
            self._op("DELETE FROM half_messages WHERE vhost = ? AND txn_id = ?", (vhost, txn.id))
            self._op("DELETE FROM half_txns WHERE vhost = ? AND id = ?", (vhost, txn.id))
            for mid in sorted({message.id for _, message, _ in txn.entries}):
                self._op(_DELETE_ORPHAN, (mid, mid, mid))
        self._op(
            "INSERT OR REPLACE INTO half_decisions (vhost, id, committed) VALUES (?, ?, ?)",
            (vhost, txn.id, int(commit)),
        )
        if forget is not None:
            self._op("DELETE FROM half_decisions WHERE vhost = ? AND id = ?", (vhost, forget))
