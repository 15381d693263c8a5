"""How one batch of journal records becomes SQL: work that cancels within the batch is never
written, a body goes in once however many queues hold it, and the result is the same as writing
each record in turn."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import pytest

from rabbitish.store import ops
from rabbitish.store.schema import DDL, HALF_DDL, PREPARED_DDL


class Traced(sqlite3.Connection):
    """Remembers every statement it runs."""

    statements: list[str]


@pytest.fixture
def db():
    conn = sqlite3.connect(":memory:", isolation_level=None, factory=Traced)
    conn.executescript(DDL + HALF_DDL + PREPARED_DDL)
    conn.statements = []
    conn.set_trace_callback(conn.statements.append)
    yield conn
    conn.close()


def message(mid: int) -> SimpleNamespace:
    return SimpleNamespace(
        id=mid, exchange="", routing_key="q", raw_properties=b"", priority=0, expiration_ms=None
    )


def enqueue(queue: str, seq: int, msg: SimpleNamespace) -> ops.Enqueue:
    return ops.Enqueue("/", queue, seq, msg, b"body", 0, None)  # type: ignore[arg-type]


def rows(db: Traced) -> tuple[list, list]:
    messages = db.execute("SELECT id FROM messages ORDER BY id").fetchall()
    places = db.execute(
        "SELECT queue, seq, message_id, delivered FROM queue_messages ORDER BY queue, seq"
    ).fetchall()
    return messages, places


def writes(db: Traced) -> list[str]:
    return [s for s in db.statements if s.split()[0] in {"INSERT", "DELETE", "UPDATE"}]


def test_enqueued_then_removed_in_one_batch_is_never_written(db):
    m = message(1)
    written = ops.write_batch(db, [enqueue("a", 1, m), ops.Remove("/", "a", 1, 1)])
    assert written == set()
    assert rows(db) == ([], [])
    assert writes(db) == []


def test_body_is_stored_once_for_many_queues(db):
    m = message(7)
    batch = [enqueue(q, 1, m) for q in ("a", "b", "c")]
    assert ops.write_batch(db, batch) == {7}
    assert rows(db) == ([(7,)], [("a", 1, 7, 0), ("b", 1, 7, 0), ("c", 1, 7, 0)])
    assert sum("INTO messages" in s for s in writes(db)) == 1


def test_removals_of_earlier_batches_and_orphans(db):
    m, n = message(1), message(2)
    ops.write_batch(db, [enqueue("a", 1, m), enqueue("b", 1, m), enqueue("a", 2, n)])
    ops.write_batch(db, [ops.Remove("/", "a", 1, 1), ops.Remove("/", "a", 2, 2)])
    assert rows(db) == ([(1,)], [("b", 1, 1, 0)])  # message 1 still held by b
    ops.write_batch(db, [ops.Remove("/", "b", 1, 1)])
    assert rows(db) == ([], [])


def test_delivered_folds_into_a_pending_insert(db):
    m = message(1)
    ops.write_batch(db, [enqueue("a", 1, m), ops.MarkDelivered("/", "a", 1)])
    assert rows(db)[1] == [("a", 1, 1, 1)]
    ops.write_batch(db, [enqueue("a", 2, m)])
    ops.write_batch(db, [ops.MarkDelivered("/", "a", 2)])
    assert rows(db)[1] == [("a", 1, 1, 1), ("a", 2, 1, 1)]


def test_ordered_records_split_the_folding(db):
    """A queue deleted and declared again within one batch: messages before the delete go with
    it, messages after it stay."""
    m, n = message(1), message(2)
    batch = [
        ops.PutQueue("/", "a", 0, b"", "{}"),
        enqueue("a", 1, m),
        ops.DeleteQueue("/", "a"),
        ops.PutQueue("/", "a", 0, b"", "{}"),
        enqueue("a", 1, n),
    ]
    ops.write_batch(db, batch)  # type: ignore[arg-type]
    assert rows(db) == ([(2,)], [("a", 1, 2, 0)])


def test_a_failed_batch_leaves_nothing(db):
    m = message(1)
    db.execute(
        "CREATE TRIGGER full BEFORE INSERT ON queue_messages "
        "BEGIN SELECT RAISE(FAIL, 'disk full'); END"
    )
    with pytest.raises(sqlite3.IntegrityError):
        ops.write_batch(db, [enqueue("a", 1, m)])
    assert not db.in_transaction
    assert rows(db) == ([], [])


def test_a_prepared_transactions_locks_go_with_its_decision_and_its_queue(db):
    m = message(1)
    save = ops.SaveHalfTxn("/", "P", 1.0, None, None, 0, None, 1)
    lock = ops.LockSettlements([("/", "P", 0, "a", 1, "ack", 1, 0)])
    ops.write_batch(db, [enqueue("a", 1, m), save, lock])
    assert db.execute("SELECT prepared FROM half_txns").fetchall() == [(1,)]
    assert db.execute("SELECT queue, seq, outcome FROM half_settlements").fetchall() == [
        ("a", 1, "ack")
    ]
    decide = ops.DecideHalf("/", "P", True, (), 1, None)
    ops.write_batch(db, [ops.Remove("/", "a", 1, 1), decide])
    assert db.execute("SELECT count(*) FROM half_settlements").fetchone() == (0,)
    assert rows(db) == ([], [])
    ops.write_batch(
        db, [enqueue("b", 1, m), ops.LockSettlements([("/", "Q", 0, "b", 1, "ack", 1, 0)])]
    )
    ops.write_batch(db, [ops.DeleteQueue("/", "b")])
    assert db.execute("SELECT count(*) FROM half_settlements").fetchone() == (0,)


def test_consecutive_prepares_locks_are_one_executemany_in_their_place(db):
    """Locks between message records are written in order: the records before them first,
    then the locks of consecutive prepares together, then what follows; every lock row
    arrives."""

    def locks(*ords: int) -> ops.LockSettlements:
        return ops.LockSettlements([("/", "t1", o, "a", o, "ack", 0, 1) for o in ords])

    m = message(1)
    batch = [enqueue("a", 1, m), locks(1), locks(2, 3), enqueue("a", 2, message(2)), locks(4)]
    ops.write_batch(db, [*batch, ops.MarkDelivered("/", "a", 1)])
    locked = db.execute("SELECT ord, seq, outcome, undeliverable_here FROM half_settlements")
    assert sorted(locked.fetchall()) == [
        (1, 1, "ack", 1),
        (2, 2, "ack", 1),
        (3, 3, "ack", 1),
        (4, 4, "ack", 1),
    ]
    assert rows(db)[1] == [("a", 1, 1, 1), ("a", 2, 2, 0)]
    order = [
        "locks" if "half_settlements" in s else "messages"
        for s in writes(db)
        if "half_settlements" in s or "INTO queue_messages" in s
    ]
    # message 1's row, the first three locks, message 2's row, the last lock
    assert order == ["messages", "locks", "locks", "locks", "messages", "locks"]
