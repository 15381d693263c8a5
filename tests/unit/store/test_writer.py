"""The store's writer on its own, no broker: records reach SQLite in batches, waiters hear when
their position is on disk, a failing write is told to its waiters and retried, unwritten bodies
are bounded while writes fail, and a clean close is marked. Failures come through the writer's
`before_write` seam, raising what SQLite raises on a full disk."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rabbitish.engine.message import Message
from rabbitish.protocol.codec import CODEC
from rabbitish.store import ops
from rabbitish.store.pager import Pager
from rabbitish.store.schema import CLEAN_STOP, db_path, open_database
from rabbitish.store.writer import GATHER_OPS, GATHER_SECONDS, INLINE_OPS, JournalWriter

DISK_FULL = "OperationalError: database or disk is full"


def disk_full() -> None:
    raise sqlite3.OperationalError("database or disk is full")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A fresh, valid store database (what open_store leaves for the writer)."""
    path = db_path(tmp_path)
    open_database(path, fsync=False).close()
    return path


@pytest.fixture
async def writer(path: Path) -> AsyncIterator[JournalWriter]:
    writer = JournalWriter(path, fsync=False, retry_delay=0.01)
    await writer.start()
    yield writer
    await writer.close()


def policy(name: str) -> ops.PutPolicy:
    return ops.PutPolicy("/", name, 0, "^x", "all", 0, "{}")


def policies(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [name for (name,) in db.execute("SELECT name FROM policies ORDER BY name")]


def meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, value FROM meta"))


async def synced(writer: JournalWriter, position: int | None = None) -> None:
    """Wait until `position` (by default everything added so far) is on disk."""
    done = asyncio.get_running_loop().create_future()
    writer.when_synced(
        writer.position if position is None else position,
        lambda: done.set_result(None),
        lambda reason: done.set_exception(AssertionError(reason)),
    )
    await asyncio.wait_for(done, 5)


async def failed(writer: JournalWriter) -> str:
    """Wait for the write covering everything added so far to fail; its reason."""
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    writer.when_synced(
        writer.position,
        lambda: done.set_exception(AssertionError("written")),
        done.set_result,
    )
    return await asyncio.wait_for(done, 5)


async def until(check: object, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_records_added_in_one_loop_turn_are_one_batch(writer, path):
    for name in ("a", "b", "c"):
        writer.add(policy(name))
    assert writer.position == 3
    assert writer.synced == 0
    await synced(writer)
    assert writer.synced == 3
    assert writer.batches == 1
    assert policies(path) == ["a", "b", "c"]


async def test_what_is_already_on_disk_is_answered_at_once(writer):
    writer.add(policy("a"))
    await synced(writer)
    heard = []
    writer.when_synced(1, lambda: heard.append("synced"))
    writer.when_synced(0, lambda: heard.append("nothing pending"))
    assert heard == ["synced", "nothing pending"]


async def test_a_small_batch_someone_waits_for_is_written_on_the_loop(writer, path):
    writer.add(policy("a"))
    heard = []
    writer.when_synced(writer.position, lambda: heard.append(writer.writing()))
    await asyncio.sleep(0)  # the loop turn that writes it
    assert heard == [False]  # written and answered in that turn, no thread hand-over
    assert policies(path) == ["a"]


async def test_records_added_while_a_batch_is_written_go_together_in_the_next(writer, path):
    # More than INLINE_OPS records, waited for: the writer thread takes them, the loop goes on.
    for i in range(INLINE_OPS + 1):
        writer.add(policy(f"first-{i:04}"))
    writer.when_synced(writer.position, lambda: None)
    await asyncio.sleep(0)
    assert writer.writing()
    for name in ("late-1", "late-2"):
        writer.add(policy(name))
    await synced(writer)
    assert writer.batches == 2  # the two late records shared one transaction
    assert len(policies(path)) == INLINE_OPS + 3


async def test_records_nobody_waits_for_gather_for_a_moment_into_one_batch(writer, path):
    loop = asyncio.get_running_loop()
    began = loop.time()
    writer.add(policy("a"))
    await asyncio.sleep(0)
    assert writer.batches == 0 and not writer.writing()  # gathering, not written
    writer.add(policy("b"))
    await asyncio.sleep(0)
    writer.add(policy("c"))
    await until(lambda: writer.synced == 3)
    assert loop.time() - began >= GATHER_SECONDS * 0.9  # the loop's clock may round
    assert writer.batches == 1
    assert policies(path) == ["a", "b", "c"]


async def test_a_waiter_ends_the_gathering(writer, path):
    writer.add(policy("a"))
    await asyncio.sleep(0)
    assert writer.batches == 0
    heard = []
    writer.when_synced(writer.position, lambda: heard.append("synced"))
    await asyncio.sleep(0)  # the next loop turn writes it (small and waited for: on the loop)
    assert heard == ["synced"]
    assert policies(path) == ["a"]


async def test_enough_records_go_without_gathering(writer, path):
    for i in range(GATHER_OPS):
        writer.add(policy(f"p-{i:05}"))
    await asyncio.sleep(0)
    assert writer.writing()
    await until(lambda: writer.synced == GATHER_OPS)


async def test_a_failed_write_is_told_to_its_waiters_and_retried(path):
    alarm: list[str | None] = []
    writer = JournalWriter(path, fsync=False, retry_delay=0.01, on_failure=alarm.append)
    await writer.start()
    try:
        writer.before_write = disk_full
        writer.add(policy("a"))
        assert await failed(writer) == DISK_FULL
        assert writer.failure == DISK_FULL
        assert alarm == [DISK_FULL]  # once per failure spell, however many retries
        writer.add(policy("b"))  # kept behind the failed one
        assert await failed(writer) == DISK_FULL
        assert alarm == [DISK_FULL]
        assert policies(path) == []

        writer.before_write = None
        await synced(writer)
        assert writer.failure is None
        assert alarm == [DISK_FULL, None]
        assert policies(path) == ["a", "b"]
    finally:
        await writer.close()


async def test_unwritten_bodies_are_bounded_while_writes_fail(path):
    body = 1000
    writer = JournalWriter(path, fsync=False, retry_delay=0.01, backlog_limit=3 * body)
    await writer.start()
    try:
        writer.before_write = disk_full
        writer.add_message(policy("a"), body)
        await failed(writer)
        assert not writer.refusing  # one body (and OP_OVERHEAD) kept: under the bound
        writer.add_message(policy("b"), body)
        assert not writer.refusing
        writer.add_message(policy("c"), body)
        assert writer.refusing  # three bodies and their overhead: past the bound

        writer.before_write = None
        await synced(writer)
        assert not writer.refusing
        assert policies(path) == ["a", "b", "c"]
    finally:
        await writer.close()


async def test_a_body_offered_to_the_pager_leaves_memory_once_written(writer, path):
    pager = Pager(path)
    writer.pager = pager
    try:
        message = Message("", "q", b"", b"body", CODEC, persistent=True)
        writer.add_message(ops.Enqueue("/", "q", 1, message, message.body, 0, None), 4)
        writer.page_out_when_written(message)
        assert message.in_memory
        await synced(writer)
        assert not message.in_memory
        assert message.body == b"body"  # read back from the store
    finally:
        pager.close()


async def test_a_body_is_not_paged_out_while_its_write_fails(writer, path):
    pager = Pager(path)
    writer.pager = pager
    try:
        writer.before_write = disk_full
        message = Message("", "q", b"", b"body", CODEC, persistent=True)
        writer.add_message(ops.Enqueue("/", "q", 1, message, message.body, 0, None), 4)
        writer.page_out_when_written(message)
        await failed(writer)
        assert message.in_memory
        writer.before_write = None
        await synced(writer)
        assert not message.in_memory
    finally:
        pager.close()


async def test_close_writes_what_is_pending_and_marks_a_clean_stop(path):
    writer = JournalWriter(path, fsync=False)
    await writer.start()
    writer.add(policy("a"))
    await writer.close()
    assert policies(path) == ["a"]
    assert meta(path).get(CLEAN_STOP) == "1"


async def test_close_while_writes_fail_gives_up_and_marks_nothing(path):
    writer = JournalWriter(path, fsync=False, retry_delay=60)
    await writer.start()
    writer.before_write = disk_full
    writer.add(policy("a"))
    await failed(writer)
    writer.add(policy("b"))
    told: list[str] = []
    writer.when_synced(writer.position, lambda: told.append("synced"), told.append)
    await writer.close()  # one more attempt at once, not after the minute's pause
    assert told == [DISK_FULL]
    assert policies(path) == []
    assert CLEAN_STOP not in meta(path)
