"""The database layout, its version, and the checks that refuse a data dir we did not write or
cannot read, before anything in it is touched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA_VERSION = 1
DB_NAME = "rabbitish.db"
APPLICATION_ID = 0x52424954  # "RBIT": marks the file as ours in the SQLite header

DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE exchanges (
    vhost TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
    auto_delete INTEGER NOT NULL, internal INTEGER NOT NULL,
    arguments BLOB NOT NULL, arg_types TEXT NOT NULL,
    PRIMARY KEY (vhost, name)
);
CREATE TABLE queues (
    vhost TEXT NOT NULL, name TEXT NOT NULL, auto_delete INTEGER NOT NULL,
    arguments BLOB NOT NULL, arg_types TEXT NOT NULL,
    PRIMARY KEY (vhost, name)
);
CREATE TABLE bindings (
    vhost TEXT NOT NULL, source TEXT NOT NULL, dest_kind TEXT NOT NULL,
    destination TEXT NOT NULL, routing_key TEXT NOT NULL, args_key BLOB NOT NULL,
    arguments BLOB NOT NULL,
    PRIMARY KEY (vhost, source, dest_kind, destination, routing_key, args_key)
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY, exchange TEXT NOT NULL, routing_key TEXT NOT NULL,
    properties BLOB NOT NULL, body BLOB NOT NULL, priority INTEGER NOT NULL,
    expiration_ms INTEGER
);
CREATE TABLE queue_messages (
    vhost TEXT NOT NULL, queue TEXT NOT NULL, seq INTEGER NOT NULL,
    message_id INTEGER NOT NULL, delivered INTEGER NOT NULL DEFAULT 0, expires_at REAL,
    PRIMARY KEY (vhost, queue, seq)
) WITHOUT ROWID;
CREATE INDEX queue_messages_by_message ON queue_messages (message_id);
"""


class StoreError(Exception):
    """The data dir cannot be used; the message is one line saying which file and what to do."""


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_NAME


def open_database(path: Path, fsync: bool) -> sqlite3.Connection:
    """Open (creating if absent) and validate the database. Refuses, without writing anything,
    a file that is not SQLite, is damaged, belongs to another program, or has another version."""
    fresh = not path.exists() or path.stat().st_size == 0
    if not fresh:
        _check_header(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        if not fresh:
            _check_existing(conn, path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if fsync else 'OFF'}")
        if fresh:
            # One transaction: a crash while creating leaves an empty file, not half a schema.
            conn.executescript(
                f"BEGIN; {DDL} PRAGMA application_id={APPLICATION_ID}; "
                f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
            )
    except sqlite3.DatabaseError as err:
        raise StoreError(
            f"{path}: cannot be read as a rabbitish database ({err}); move it away or pass "
            "another --data-dir"
        ) from err
    return conn


def _check_header(path: Path) -> None:
    with path.open("rb") as f:
        header = f.read(100)
    if not header.startswith(b"SQLite format 3\x00"):
        raise StoreError(
            f"{path}: not a SQLite database, so not rabbitish data; move it away or pass "
            "another --data-dir"
        )
    if len(header) < 100:
        raise StoreError(f"{path}: truncated SQLite file; restore it from a backup or move it away")


def _check_existing(conn: sqlite3.Connection, path: Path) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id != APPLICATION_ID:
        raise StoreError(
            f"{path}: a SQLite database of another program, not rabbitish data; move it away or "
            "pass another --data-dir"
        )
    check = conn.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise StoreError(f"{path}: damaged database ({check}); restore it from a backup")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer rabbitish (schema {version}, this one reads "
            f"{SCHEMA_VERSION}); upgrade rabbitish"
        )
    if version < SCHEMA_VERSION:
        migrate(conn, version)


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Bring an older schema up to date. Version 1 is the first; later versions add steps."""
    raise StoreError(f"schema version {version} is not one this rabbitish can migrate")
