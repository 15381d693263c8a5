"""The engine's Journal on SQLite, driven by a real engine and no broker: durable changes become
rows, transient ones nothing, and the Journal's waiting (position, when_synced, refusing) is the
writer's."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.engine.vhost import VirtualHost
from rabbitish.protocol.codec import CODEC
from rabbitish.store.journal import SqliteJournal
from rabbitish.store.schema import db_path, open_database
from rabbitish.store.writer import JournalWriter

PERSISTENT = b"\x10\x00\x02"  # property flags: delivery-mode only; delivery-mode 2
TRANSIENT = b"\x00\x00"


def disk_full() -> None:
    raise sqlite3.OperationalError("database or disk is full")


@pytest.fixture
async def journal(tmp_path: Path) -> AsyncIterator[SqliteJournal]:
    path = db_path(tmp_path)
    open_database(path, fsync=False).close()
    journal = SqliteJournal(JournalWriter(path, fsync=False), ManualScheduler().now)
    await journal.start()
    yield journal
    await journal.close()


@pytest.fixture
def vhost(journal: SqliteJournal) -> VirtualHost:
    node = Node(ManualScheduler(), codec=CODEC)
    node.use_journal(journal)
    return node.vhosts["/"]


async def synced(journal: SqliteJournal) -> None:
    done = asyncio.get_running_loop().create_future()
    journal.when_synced(journal.position, lambda: done.set_result(None), done.set_exception)
    await asyncio.wait_for(done, 5)


def rows(journal: SqliteJournal, sql: str) -> list[tuple]:
    with sqlite3.connect(journal.writer.path) as db:
        return db.execute(sql).fetchall()


async def test_durable_wiring_becomes_rows_and_transient_wiring_none(journal, vhost):
    vhost.declare_exchange("logs", "topic", durable=True)
    vhost.declare_exchange("scratch", "fanout")
    durable = vhost.declare_queue("kept", owner=None, durable=True)
    transient = vhost.declare_queue("gone", owner=None)
    vhost.bind(durable, "logs", "a.#")
    vhost.bind(transient, "logs", "b.#")  # to a transient queue: not journaled
    await synced(journal)
    assert rows(journal, "SELECT vhost, name, type FROM exchanges") == [("/", "logs", "topic")]
    assert rows(journal, "SELECT vhost, name FROM queues") == [("/", "kept")]
    bindings = rows(journal, "SELECT source, dest_kind, destination, routing_key FROM bindings")
    assert bindings == [("logs", "queue", "kept", "a.#")]

    vhost.delete_queue("kept", owner=None)
    vhost.delete_exchange("logs")
    await synced(journal)
    assert rows(journal, "SELECT * FROM queues") == []
    assert rows(journal, "SELECT * FROM exchanges") == []


async def test_persistent_messages_on_durable_queues_are_journaled_until_removed(journal, vhost):
    vhost.declare_queue("kept", owner=None, durable=True)
    vhost.declare_queue("gone", owner=None)
    before = journal.position
    for queue in ("kept", "gone"):
        vhost.publish("", queue, CODEC.new_message("", queue, PERSISTENT, b"p"))
        vhost.publish("", queue, CODEC.new_message("", queue, TRANSIENT, b"t"))
    assert journal.position == before + 1  # the one persistent message on the durable queue
    await synced(journal)
    assert rows(journal, "SELECT body FROM messages") == [(b"p",)]
    assert rows(journal, "SELECT queue, seq, delivered FROM queue_messages") == [("kept", 0, 0)]

    delivery = vhost.queues["kept"].get(settled=True)  # basic.get with no-ack
    assert delivery is not None
    await synced(journal)
    assert rows(journal, "SELECT * FROM queue_messages") == []
    assert rows(journal, "SELECT * FROM messages") == []


async def test_the_journal_waits_and_refuses_as_its_writer_does(journal, vhost):
    writer = journal.writer
    vhost.declare_queue("kept", owner=None, durable=True)
    assert journal.position == writer.position == 1
    heard: list[str] = []
    journal.when_synced(journal.position, lambda: heard.append("synced"))
    await synced(journal)
    assert heard == ["synced"]
    assert writer.synced == 1
    assert not journal.refusing

    writer.backlog_limit = 1  # any unwritten body is too much
    writer.before_write = disk_full
    vhost.publish("", "kept", CODEC.new_message("", "kept", PERSISTENT, b"p"))
    failed = asyncio.get_running_loop().create_future()
    journal.when_synced(journal.position, lambda: None, failed.set_result)
    assert await asyncio.wait_for(failed, 5) == "OperationalError: database or disk is full"
    assert journal.refusing
    refused = vhost.publish("", "kept", CODEC.new_message("", "kept", PERSISTENT, b"p"))
    assert not refused.accepted

    writer.before_write = None
    await synced(journal)
    assert not journal.refusing
