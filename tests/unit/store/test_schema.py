"""Migrations on their own: each older schema reaches today's, and schemas 1 and 2, which had no
clean-stop mark, get one only when their last broker closed the database (no -wal file left)."""

from __future__ import annotations

import sqlite3

import pytest

from rabbitish.store.schema import (
    APPLICATION_ID,
    CLEAN_STOP,
    DDL,
    HALF_DDL,
    SCHEMA_VERSION,
    db_path,
    migrate,
    open_database,
)


def _old(version: int) -> sqlite3.Connection:
    """An in-memory database of schema 1 or 2, as those versions created it."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    extra = HALF_DDL if version == 2 else ""
    conn.executescript(
        f"BEGIN; {DDL} {extra} PRAGMA application_id={APPLICATION_ID}; "
        f"INSERT INTO meta VALUES ('schema_version', '{version}'); COMMIT;"
    )
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("closed_cleanly", [True, False])
def test_schemas_without_a_clean_stop_mark_get_one_only_after_a_clean_close(
    version, closed_cleanly
):
    conn = _old(version)
    migrate(conn, version, closed_cleanly)
    meta = _meta(conn)
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert (CLEAN_STOP in meta) == closed_cleanly


def test_a_schema_that_marks_clean_stops_itself_is_left_to_its_mark(tmp_path):
    """Schema 3 brokers record their clean stops: no mark means the last stop was not clean."""
    path = db_path(tmp_path)
    open_database(path, fsync=False).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "BEGIN; DROP TABLE half_settlements; ALTER TABLE half_txns DROP COLUMN prepared; "
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'; COMMIT;"
    )
    migrate(conn, 3, closed_cleanly=True)
    assert CLEAN_STOP not in _meta(conn)
    assert _meta(conn)["schema_version"] == str(SCHEMA_VERSION)
    conn.close()
