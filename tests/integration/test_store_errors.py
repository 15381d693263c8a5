"""A data dir that is corrupt or not ours stops start-up with one clear line (which file, what to
do), exit code 2 from the CLI or `StoreError` from `Broker`, and leaves every file exactly as it
was: no rewrite, no SQLite -wal / -shm files created next to a refused database."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pika
import pytest

import rabbitish
from rabbitish.store import StoreError
from rabbitish.store.lock import LOCK_NAME
from rabbitish.store.pager import RECOVERED_BODIES
from rabbitish.store.schema import DB_NAME
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel as _channel

PAGE = 4096


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A real rabbitish data dir, cleanly stopped, with wiring and enough messages for several
    pages of tables and overflow pages."""
    data = tmp_path_factory.mktemp("template")
    with running_broker(data_dir=str(data)) as broker:
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        ch.exchange_declare("tpl-x", "topic", durable=True)
        ch.queue_declare("tpl-q", durable=True)
        ch.queue_bind("tpl-q", "tpl-x", "a.#")
        persistent = pika.BasicProperties(delivery_mode=2)
        for i in range(60):
            ch.basic_publish("tpl-x", "a.b", bytes([i % 251]) * 5000, persistent)
        ch.queue_declare("tpl-q", durable=True)  # a round trip: every publish was handled
        conn.close()
    assert sorted(os.listdir(data)) == [DB_NAME, LOCK_NAME]
    return data


def _copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest / DB_NAME


def truncated_header(template: Path, dest: Path) -> Path:
    db = _copy(template, dest)
    db.write_bytes(db.read_bytes()[:50])
    return db


def truncated_pages(template: Path, dest: Path) -> Path:
    db = _copy(template, dest)
    db.write_bytes(db.read_bytes()[: 3 * PAGE + 1000])
    return db


def truncated_whole_pages(template: Path, dest: Path) -> Path:
    db = _copy(template, dest)
    db.write_bytes(db.read_bytes()[: 3 * PAGE])
    return db


def random_bytes(template: Path, dest: Path) -> Path:
    dest.mkdir()
    db = dest / DB_NAME
    db.write_bytes(random.Random(7).randbytes(20000))
    return db


def foreign_sqlite(template: Path, dest: Path) -> Path:
    """Another program's database, in WAL mode like ours (reading it would create -wal/-shm)."""
    dest.mkdir()
    db = dest / DB_NAME
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE contacts (name TEXT, email TEXT)")
    conn.execute("INSERT INTO contacts VALUES ('ann', 'ann@example.org')")
    conn.commit()
    conn.close()
    return db


def newer_schema(template: Path, dest: Path) -> Path:
    db = _copy(template, dest)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    return db


def damaged_page(template: Path, dest: Path) -> Path:
    """Garbage over the start of a page in the middle of the file, as a bad sector would."""
    db = _copy(template, dest)
    data = bytearray(db.read_bytes())
    middle = (len(data) // PAGE // 2) * PAGE
    data[middle : middle + 64] = b"\xde\xad\xbe\xef" * 16
    db.write_bytes(bytes(data))
    return db


def dir_is_a_file(template: Path, dest: Path) -> Path:
    dest.write_text("not a directory\n")
    return dest


def parent_is_a_file(template: Path, dest: Path) -> Path:
    dest.write_text("not a directory\n")
    return dest / "sub"


def db_is_a_dir(template: Path, dest: Path) -> Path:
    db = dest / DB_NAME
    db.mkdir(parents=True)
    return db


# case -> (builder, the words the message must contain besides the path)
CASES: dict[str, tuple[Callable[[Path, Path], Path], tuple[str, ...]]] = {
    "truncated-header": (truncated_header, ("truncated", "restore it from a backup")),
    "truncated-pages": (truncated_pages, ("truncated", "restore it from a backup")),
    "truncated-whole-pages": (truncated_whole_pages, ("damaged", "restore it from a backup")),
    "random-bytes": (random_bytes, ("not a SQLite database", "move it away")),
    "foreign-sqlite": (foreign_sqlite, ("another program", "move it away")),
    "newer-schema": (newer_schema, ("newer rabbitish", "schema 99")),
    "damaged-page": (damaged_page, ("damaged", "restore it from a backup")),
    "data-dir-is-a-file": (dir_is_a_file, ("not a directory", "--data-dir")),
    "parent-is-a-file": (parent_is_a_file, ("cannot create the data directory", "--data-dir")),
    "db-is-a-directory": (db_is_a_dir, ("directory", "move it away")),
}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under (or at) root with its bytes (None for directories)."""
    if root.is_file():
        return {str(root): root.read_bytes()}
    found: dict[str, bytes | None] = {str(root): None}
    for path in root.rglob("*"):
        found[str(path)] = path.read_bytes() if path.is_file() else None
    return found


def _data_dir(case: str, tmp_path: Path, template: Path) -> tuple[Path, Path, Path]:
    """What to snapshot, the --data-dir to pass, and the path the message must name."""
    build, _words = CASES[case]
    root = tmp_path / "data"
    culprit = build(template, root)
    return root, culprit.parent if culprit.name == DB_NAME else culprit, culprit


def _assert_message(text: str, case: str, culprit: Path) -> None:
    assert "\n" not in text.strip(), text
    assert str(culprit) in text, text
    for word in CASES[case][1]:
        assert word in text, text


@pytest.mark.parametrize("case", list(CASES))
def test_cli_refuses_with_one_line_and_exit_2(case, tmp_path, template):
    root, data, culprit = _data_dir(case, tmp_path, template)
    before = snapshot(root)
    result = subprocess.run(
        [sys.executable, "-m", "rabbitish", "serve", "--port", "0", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    _assert_message(lines[0], case, culprit)
    assert snapshot(root) == before


@pytest.mark.parametrize("case", list(CASES))
async def test_broker_raises_store_error_and_touches_nothing(case, tmp_path, template):
    root, data, culprit = _data_dir(case, tmp_path, template)
    before = snapshot(root)
    broker = rabbitish.Broker(port=0, data_dir=str(data))
    with pytest.raises(StoreError) as info:
        await broker.start()
    _assert_message(str(info.value), case, culprit)
    assert broker.port is None  # never listened
    assert snapshot(root) == before


async def test_template_itself_starts_and_recovers(tmp_path, template):
    """The cases above are refusals of damage, not of a healthy copy of the same data."""
    data = tmp_path / "data"
    shutil.copytree(template, data)
    async with rabbitish.Broker(port=0, data_dir=str(data)) as broker:
        assert broker.recovery.queues == 1
        assert broker.recovery.bindings == 1
        assert broker.recovery.messages == 60


async def test_crash_leftover_wal_is_read_not_refused(tmp_path, template):
    """A -wal file left by a crash holds committed data: validation must read it, not refuse."""
    data = tmp_path / "data"
    shutil.copytree(template, data)
    db = data / DB_NAME
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("DELETE FROM queue_messages WHERE seq % 2 = 0")
    # Copy the db with its -wal while the writer still holds them, as kill -9 would leave them.
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for name in os.listdir(data):
        shutil.copy(data / name, crashed / name)
    writer.close()
    assert (crashed / f"{DB_NAME}-wal").stat().st_size > 0
    async with rabbitish.Broker(port=0, data_dir=str(crashed)) as broker:
        assert broker.recovery.messages == 30


async def test_a_checkpoint_torn_by_a_power_cut_is_recovered_from_the_wal(tmp_path, template):
    """A power cut during a checkpoint can leave the database file ending in part of a page
    (a state the power-loss tests' torn mode models): the -wal file still holds every page of it, so
    the start must let SQLite recover them, not refuse the file as truncated."""
    data = tmp_path / "data"
    shutil.copytree(template, data)
    db = data / DB_NAME
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.executescript(
        "BEGIN; INSERT INTO messages SELECT id + 1000, exchange, routing_key, properties, body,"
        " priority, expiration_ms FROM messages; INSERT INTO queue_messages SELECT vhost, queue,"
        " seq + 1000, message_id + 1000, delivered, expires_at FROM queue_messages; COMMIT;"
    )
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for name in os.listdir(data):
        shutil.copy(data / name, crashed / name)
    writer.close()
    # The checkpoint had begun writing the first new page when the power went.
    with open(crashed / DB_NAME, "ab") as torn:
        torn.write(random.Random(3).randbytes(PAGE // 3))
    assert (crashed / DB_NAME).stat().st_size % PAGE
    async with rabbitish.Broker(port=0, data_dir=str(crashed)) as broker:
        assert broker.recovery.messages == 120


async def test_data_dir_is_created_when_missing(tmp_path):
    data = tmp_path / "a" / "b" / "data"
    async with rabbitish.Broker(port=0, data_dir=str(data)):
        assert (data / DB_NAME).is_file()
    assert sorted(os.listdir(data)) == [DB_NAME, LOCK_NAME]


def test_data_dir_path_with_uri_characters(tmp_path, uid):
    """Paths are paths: a data dir named like a URI fragment still holds the broker's data,
    including bodies paged out of memory (a queue longer than recovery reads back at start)."""
    data = str(tmp_path / "data #1 %41?x")
    expected = [f"m{i}".encode() for i in range(RECOVERED_BODIES + 100)]
    with running_broker(data_dir=data) as broker, _channel(broker.url) as ch:
        ch.queue_declare(uid, durable=True)
        ch.tx_select()
        for body in expected:
            ch.basic_publish("", uid, body, pika.BasicProperties(delivery_mode=2))
        ch.tx_commit()
    with running_broker(data_dir=data) as broker, _channel(broker.url) as ch:
        got = []
        while (reply := ch.basic_get(uid, auto_ack=True))[0] is not None:
            got.append(reply[2])
        assert got == expected


async def test_second_broker_on_the_same_data_dir_is_refused(tmp_path):
    """Two brokers writing one database would overwrite each other's messages."""
    data = tmp_path / "data"
    async with rabbitish.Broker(port=0, data_dir=str(data)):
        with pytest.raises(StoreError, match="in use by another running rabbitish"):
            await rabbitish.Broker(port=0, data_dir=str(data)).start()
    async with rabbitish.Broker(port=0, data_dir=str(data)):  # free again once stopped
        pass
