"""Typed journal operations, and how one batch of them becomes one SQLite transaction.

The engine's changes arrive as small records in order. Message records (enqueue, remove, mark
delivered) are the hot path: a run of them between two other records is folded per queue row
before anything is written, so a message enqueued and removed within one batch is never
written, a message routed to several queues is written once, and each kind of change is a few
statements whatever the batch size. Every other record (wiring, half messages) is rare and is
written in order, after the run before it, so the folding never reorders changes that depend on
each other."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

if TYPE_CHECKING:
    from rabbitish.engine.message import Message

Row = tuple[Any, ...]
Key = tuple[str, str, int]  # vhost, queue, seq: one message's place in one queue
Sql = tuple[str, ...]

_INSERT_MESSAGE = (
    "INSERT OR IGNORE INTO messages (id, exchange, routing_key, properties, body, priority, "
    "expiration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# The hot-path statements below write many rows per statement (a multi-row VALUES, or a JSON
# array of keys), so a batch is a few sqlite3 calls, not one per row: each call releases and
# retakes the GIL, which the event loop thread holds most of the time.
_INSERT_MESSAGES = (
    "INSERT OR IGNORE INTO messages (id, exchange, routing_key, properties, body, priority, "
    "expiration_ms) VALUES "
)
_INSERT_QMS = (
    "INSERT OR REPLACE INTO queue_messages (vhost, queue, seq, message_id, delivered, "
    "expires_at) VALUES "
)
_DELETE_QMS = (
    "DELETE FROM queue_messages WHERE vhost = ? AND queue = ? AND seq IN "
    "(SELECT value FROM json_each(?))"
)
_MARK_DELIVERED = (
    "UPDATE queue_messages SET delivered = 1 WHERE vhost = ? AND queue = ? AND seq IN "
    "(SELECT value FROM json_each(?))"
)
# A message row goes when no queue and no held half message refers to it any more.
_DELETE_ORPHANS = (
    "DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?)) AND NOT EXISTS "
    "(SELECT 1 FROM queue_messages WHERE message_id = messages.id) AND NOT EXISTS "
    "(SELECT 1 FROM half_messages WHERE message_id = messages.id)"
)
_DELETE_ALL_ORPHANS = (
    "DELETE FROM messages WHERE id NOT IN (SELECT message_id FROM queue_messages) "
    "AND id NOT IN (SELECT message_id FROM half_messages)"
)
MAX_ROWS = 256  # rows per multi-row INSERT (a power of two; 7 columns stay far under the limit)


@functools.cache
def _values(width: int, rows: int) -> str:
    return ", ".join(["(" + ", ".join("?" * width) + ")"] * rows)


def insert_rows(db: sqlite3.Connection, head: str, rows: list[Row]) -> None:
    """`head` ("INSERT ... VALUES ") for every row, in statements of power-of-two row counts
    (so a few statement texts, each prepared once and cached, cover every batch size)."""
    if not rows:
        return
    width = len(rows[0])
    done, total = 0, len(rows)
    while done < total:
        size = min(MAX_ROWS, 1 << ((total - done).bit_length() - 1))
        chunk = rows[done : done + size]
        db.execute(head + _values(width, size), [value for row in chunk for value in row])
        done += size


def by_queue(keys: Iterable[Key]) -> list[tuple[str, str, str]]:
    """(vhost, queue, JSON array of seqs) per queue, for the json_each statements."""
    seqs: dict[tuple[str, str], list[int]] = {}
    for vhost, queue, seq in keys:
        seqs.setdefault((vhost, queue), []).append(seq)
    return [(vhost, queue, json.dumps(s)) for (vhost, queue), s in seqs.items()]


def message_row(message: Message, body: bytes) -> Row:
    return (
        message.id,
        message.exchange,
        message.routing_key,
        message.raw_properties,
        body,
        message.priority,
        message.expiration_ms,
    )


# ---------------------------------------------------------------------- hot-path records
class Enqueue(NamedTuple):
    """A persistent message on a durable queue. `body` is taken on the event loop thread (a
    paged-out body is read back there); the other message fields never change."""

    vhost: str
    queue: str
    seq: int
    message: Message
    body: bytes
    delivered: int
    expires_at: float | None  # wall clock


class Remove(NamedTuple):
    vhost: str
    queue: str
    seq: int
    message_id: int


class MarkDelivered(NamedTuple):
    vhost: str
    queue: str
    seq: int


# ---------------------------------------------------------------------- ordered records
class Statements:
    """A record written as its statements, in order, with its own fields as parameters."""

    __slots__: tuple[str, ...] = ()
    sql: ClassVar[Sql] = ()

    def params(self) -> list[Row]:
        row = tuple(getattr(self, name) for name in self.__slots__)
        return [row] * len(self.sql)

    def write(self, db: sqlite3.Connection) -> set[int]:
        for sql, params in zip(self.sql, self.params(), strict=True):
            db.execute(sql, params)
        return set()


@dataclass(frozen=True, slots=True)
class PutExchange(Statements):
    vhost: str
    name: str
    type_name: str
    auto_delete: int
    internal: int
    arguments: bytes
    arg_types: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO exchanges VALUES (?, ?, ?, ?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeleteExchange(Statements):
    vhost: str
    name: str

    sql: ClassVar[Sql] = (
        "DELETE FROM exchanges WHERE vhost = ?1 AND name = ?2",
        "DELETE FROM bindings WHERE vhost = ?1 AND (source = ?2 OR "
        "(dest_kind = 'exchange' AND destination = ?2))",
    )


@dataclass(frozen=True, slots=True)
class PutQueue(Statements):
    vhost: str
    name: str
    auto_delete: int
    arguments: bytes
    arg_types: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO queues VALUES (?, ?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeleteQueue(Statements):
    vhost: str
    name: str

    sql: ClassVar[Sql] = (
        "DELETE FROM queues WHERE vhost = ?1 AND name = ?2",
        "DELETE FROM bindings WHERE vhost = ?1 AND dest_kind = 'queue' AND destination = ?2",
        "DELETE FROM queue_messages WHERE vhost = ?1 AND queue = ?2",
        "DELETE FROM half_messages WHERE vhost = ?1 AND queue = ?2",
        "DELETE FROM half_settlements WHERE vhost = ?1 AND queue = ?2",
    )

    def write(self, db: sqlite3.Connection) -> set[int]:
        Statements.write(self, db)
        db.execute(_DELETE_ALL_ORPHANS)
        return set()


@dataclass(frozen=True, slots=True)
class PutBinding(Statements):
    vhost: str
    source: str
    dest_kind: str
    destination: str
    routing_key: str
    args_key: bytes
    arguments: bytes

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO bindings VALUES (?, ?, ?, ?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeleteBinding(Statements):
    vhost: str
    source: str
    dest_kind: str
    destination: str
    routing_key: str
    args_key: bytes

    sql: ClassVar[Sql] = (
        "DELETE FROM bindings WHERE vhost = ? AND source = ? AND dest_kind = ? AND "
        "destination = ? AND routing_key = ? AND args_key = ?",
    )


@dataclass(frozen=True, slots=True)
class PutPolicy(Statements):
    vhost: str
    name: str
    operator: int
    pattern: str
    apply_to: str
    priority: float
    definition: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO policies VALUES (?, ?, ?, ?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeletePolicy(Statements):
    vhost: str
    name: str
    operator: int

    sql: ClassVar[Sql] = ("DELETE FROM policies WHERE vhost = ? AND name = ? AND operator = ?",)


@dataclass(frozen=True, slots=True)
class HoldHalf(Statements):
    """A persistent half message held for a durable queue: its message row and its place."""

    vhost: str
    txn_id: str
    ord: int
    queue: str
    message: Message
    body: bytes

    sql: ClassVar[Sql] = (
        _INSERT_MESSAGE,
        "INSERT OR REPLACE INTO half_messages (vhost, txn_id, ord, queue, message_id) "
        "VALUES (?, ?, ?, ?, ?)",
    )

    def params(self) -> list[Row]:
        mid = self.message.id
        return [
            message_row(self.message, self.body),
            (self.vhost, self.txn_id, self.ord, self.queue, mid),
        ]

    def write(self, db: sqlite3.Connection) -> set[int]:
        Statements.write(self, db)
        return {self.message.id}


@dataclass(frozen=True, slots=True)
class SaveHalfTxn(Statements):
    vhost: str
    id: str
    created_at: float
    check_queue: str | None
    immunity: float | None
    checks_sent: int
    last_check_at: float | None
    prepared: int

    sql: ClassVar[Sql] = (
        "INSERT OR REPLACE INTO half_txns (vhost, id, created_at, check_queue, immunity, "
        "checks_sent, last_check_at, prepared) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )


@dataclass(frozen=True, slots=True)
class LockSettlements:
    """The settlements one prepare locked: each stored message at (queue, seq) stays, locked
    until the decision; `outcome` is how a commit settles it. One record per prepare, however
    many messages it locks (a streaming reader prepares thousands at a time)."""

    rows: list[Row]  # (vhost, txn_id, ord, queue, seq, outcome, delivery_failed, undeliverable)


_LOCK_SETTLEMENT = (
    "INSERT OR REPLACE INTO half_settlements (vhost, txn_id, ord, queue, seq, outcome, "
    "delivery_failed, undeliverable_here) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True, slots=True)
class DecideHalf(Statements):
    """A decided half transaction: after the enqueues of a commit (written before it), its
    held rows go, the message rows no queue holds go, and the decision is remembered."""

    vhost: str
    id: str
    durable: bool
    message_ids: tuple[int, ...]
    committed: int
    forget: str | None

    def write(self, db: sqlite3.Connection) -> set[int]:
        if self.durable:
            db.execute(
                "DELETE FROM half_messages WHERE vhost = ? AND txn_id = ?", (self.vhost, self.id)
            )
            db.execute(
                "DELETE FROM half_settlements WHERE vhost = ? AND txn_id = ?",
                (self.vhost, self.id),
            )
            db.execute("DELETE FROM half_txns WHERE vhost = ? AND id = ?", (self.vhost, self.id))
            db.execute(_DELETE_ORPHANS, (json.dumps(self.message_ids),))
        db.execute(
            "INSERT OR REPLACE INTO half_decisions (vhost, id, committed) VALUES (?, ?, ?)",
            (self.vhost, self.id, self.committed),
        )
        if self.forget is not None:
            db.execute(
                "DELETE FROM half_decisions WHERE vhost = ? AND id = ?", (self.vhost, self.forget)
            )
        return set()


Op = Enqueue | Remove | MarkDelivered | LockSettlements | Statements


# ---------------------------------------------------------------------- one batch
class _Run:
    """Message records between two ordered records, folded per queue row: the net effect of
    the run is the same as writing each record in turn."""

    __slots__ = ("delivered", "inserts", "removes")

    def __init__(self) -> None:
        self.inserts: dict[Key, Enqueue] = {}
        self.removes: dict[Key, int] = {}  # rows written by an earlier batch -> message id
        self.delivered: set[Key] = set()

    def flush(self, db: sqlite3.Connection) -> set[int]:
        """Write the run; returns the ids of the message rows it wrote."""
        written: set[int] = set()
        if self.removes:
            db.executemany(_DELETE_QMS, by_queue(self.removes))
        if self.inserts:
            rows: dict[int, Row] = {}
            for op in self.inserts.values():
                message = op.message
                if message.id not in rows:
                    rows[message.id] = message_row(message, op.body)
            insert_rows(db, _INSERT_MESSAGES, list(rows.values()))
            insert_rows(
                db,
                _INSERT_QMS,
                [
                    (op.vhost, op.queue, op.seq, op.message.id, op.delivered, op.expires_at)
                    for op in self.inserts.values()
                ],
            )
            written = set(rows)
        if self.delivered:
            db.executemany(_MARK_DELIVERED, by_queue(self.delivered))
        if self.removes:
            orphans = set(self.removes.values()) - written
            if orphans:
                db.execute(_DELETE_ORPHANS, (json.dumps(sorted(orphans)),))
        self.inserts, self.removes, self.delivered = {}, {}, set()
        return written


def _write_locks(db: sqlite3.Connection, locks: list[Row]) -> None:
    """The LockSettlements rows gathered so far, in their order; the list is emptied."""
    if locks:
        db.executemany(_LOCK_SETTLEMENT, locks)
        locks.clear()


def write_batch(db: sqlite3.Connection, ops: list[Op]) -> set[int]:
    """Write `ops` as one SQLite transaction (synced on COMMIT when the connection runs
    synchronous=FULL); returns the ids of the message rows written. On an error nothing of
    the batch stays and the error propagates."""
    run = _Run()
    inserts, removes, delivered = run.inserts, run.removes, run.delivered
    locks: list[Row] = []  # LockSettlements rows not yet written
    written: set[int] = set()
    db.execute("BEGIN")
    try:
        # `kind is Enqueue` (one type() call per op, on the writer's hot loop) does not narrow
        # `op` for mypy as isinstance would: the ignores below stand for that narrowing.
        for op in ops:
            kind = type(op)
            if kind is Enqueue:
                key = op[:3]  # type: ignore[index]
                inserts[key] = op  # type: ignore[assignment]
                delivered.discard(key)
            elif kind is Remove:
                key = op[:3]  # type: ignore[index]
                if inserts.pop(key, None) is None:
                    removes[key] = op[3]  # type: ignore[index, misc, assignment]
                delivered.discard(key)
            elif kind is MarkDelivered:
                key = tuple(op)  # type: ignore[arg-type]
                pending = inserts.get(key)
                if pending is not None:
                    inserts[key] = pending._replace(delivered=1)
                else:
                    delivered.add(key)
            elif kind is LockSettlements:
                # Consecutive prepares' locks go in one executemany, written where the first
                # of them stands.
                if inserts or removes or delivered:
                    _write_locks(db, locks)
                    written |= run.flush(db)
                    inserts, removes, delivered = run.inserts, run.removes, run.delivered
                locks.extend(op.rows)  # type: ignore[union-attr]
            else:
                _write_locks(db, locks)
                written |= run.flush(db)
                inserts, removes, delivered = run.inserts, run.removes, run.delivered
                written |= op.write(db)  # type: ignore[union-attr]
        _write_locks(db, locks)
        written |= run.flush(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return written
