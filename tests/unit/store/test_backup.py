"""The online backup on its own, no broker: a database with a live writer (its commits still
in the WAL, a transaction open) is copied with every committed row and none of the open one;
a stopped data dir is copied as it is, and left as it was; what cannot be a backup is refused
in one line."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from rabbitish.store.backup import backup
from rabbitish.store.lock import DataDirLock
from rabbitish.store.schema import CLEAN_STOP, DB_NAME, StoreError, db_path, open_database


def _rows(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {row[0] for row in conn.execute("SELECT key FROM meta")}
    finally:
        conn.close()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    open_database(db_path(data), fsync=False).close()
    return data


def test_a_live_database_is_copied_with_its_wal_and_without_an_open_transaction(data, tmp_path):
    lock = DataDirLock(data)
    lock.acquire()  # as a running broker holds it
    writer = sqlite3.connect(db_path(data), isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # committed rows stay in the WAL only
    for i in range(50):
        writer.execute("INSERT INTO meta VALUES (?, 'x')", (f"committed-{i}",))
    writer.execute("BEGIN")
    writer.execute("INSERT INTO meta VALUES ('open', 'x')")
    try:
        assert os.path.getsize(f"{db_path(data)}-wal") > 0
        done = backup(data, tmp_path / "copy")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        lock.release()
    copied = _rows(tmp_path / "copy" / DB_NAME)
    assert {f"committed-{i}" for i in range(50)} <= copied
    assert "open" not in copied
    assert done.live and not done.clean_stop and done.schema_version >= 4
    assert sorted(os.listdir(tmp_path / "copy")) == [DB_NAME]
    open_database(tmp_path / "copy" / DB_NAME, fsync=False).close()  # a valid data dir


def test_what_an_interrupted_backup_left_is_replaced(data, tmp_path):
    dest = tmp_path / "copy"
    dest.mkdir()
    (dest / f"{DB_NAME}.partial").write_bytes(b"half a database")
    (dest / f"{DB_NAME}.partial-journal").write_bytes(b"x")
    backup(data, dest)
    assert sorted(os.listdir(dest)) == [DB_NAME]


def test_a_stopped_data_dir_is_copied_as_it_is_and_left_untouched(data, tmp_path):
    conn = sqlite3.connect(db_path(data), isolation_level=None)
    conn.execute("INSERT INTO meta VALUES (?, '1')", (CLEAN_STOP,))
    conn.close()
    stopped = DataDirLock(data)
    stopped.acquire()
    stopped.release()  # the lock file a stopped broker leaves
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in data.iterdir()}
    done = backup(data, tmp_path / "copy")
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in data.iterdir()} == before
    assert not done.live and done.clean_stop
    assert _rows(tmp_path / "copy" / DB_NAME) == _rows(db_path(data))


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("dest-not-empty", "not empty"),
        ("dest-is-source", "the data dir itself"),
        ("no-database", "no rabbitish database here"),
        ("not-ours", "not a SQLite database"),
    ],
)
def test_refusals_are_one_line(case, words, data, tmp_path):
    dest = tmp_path / "copy"
    source = data
    if case == "dest-not-empty":
        dest.mkdir()
        (dest / "something").write_text("x")
    elif case == "dest-is-source":
        dest = data
    elif case == "no-database":
        source = tmp_path / "empty"
        source.mkdir()
    else:
        db_path(data).write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError) as info:
        backup(source, dest)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert not (dest / DB_NAME).exists() or case == "dest-is-source"
