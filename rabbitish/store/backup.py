"""Online backup: a consistent copy of a data dir, taken while its broker serves.

Everything durable is in one SQLite database (bodies included: `messages.body`; the pager
reads bodies back from it, and spill.py's segment files hold only transient bodies, deleted at
every start), so the copy is that database alone. SQLite's backup API copies it from a
connection of our own in one step: one read transaction, so the copy is the database as of
one commit, with every transaction wholly in or wholly out (a 0-9-1 tx.commit, a 1.0
discharge, a half-message decision: each is one SQLite transaction). In WAL mode that read
blocks no writer: the broker keeps committing into the WAL while the copy is made, and a
checkpoint stops short of the pages the copy still reads. Whatever the broker confirmed before
the backup began was committed before the read transaction started, so it is in the copy.

The copy is written beside its final name, checked (quick_check, schema version), synced and
renamed into place, so DEST never holds a partial database under the name a broker opens."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rabbitish.store.lock import DataDirLock
from rabbitish.store.schema import (
    CLEAN_STOP,
    DB_NAME,
    StoreError,
    _read_only_uri,
    _validate,
    fsync_dir,
    remove_database,
)

PARTIAL = ".partial"  # the copy's name until it is checked and synced


@dataclass(frozen=True, slots=True)
class BackupResult:
    source: Path
    dest: Path
    bytes: int
    schema_version: int
    queues: int
    messages: int
    seconds: float
    live: bool  # taken from a running broker
    clean_stop: bool  # the copy records a clean stop (else its messages come back redelivered)


def backup(data_dir: str | Path, dest: str | Path) -> BackupResult:
    """Copy the database of `data_dir` to `dest`/rabbitish.db. `dest` must not hold a database
    yet. Raises StoreError (one line) for a source that is not a rabbitish data dir, or a
    destination that cannot take the copy."""
    started = time.monotonic()
    source_dir, dest_dir = Path(data_dir), Path(dest)
    source = source_dir / DB_NAME
    if not source.is_file():
        raise StoreError(f"{source}: no rabbitish database here; pass the broker's --data-dir")
    target = _prepare_dest(source_dir, dest_dir)
    _validate(source)
    lock = DataDirLock(source_dir)
    try:  # a stopped broker's dir is held for the copy, so none starts on it meanwhile
        lock.acquire()
        live = False
    except StoreError:
        live = True  # held by the running broker: read beside it
    try:
        uri = f"file:{quote(str(source.resolve()))}?mode=ro" if live else _read_only_uri(source)
        partial = target.with_name(target.name + PARTIAL)
        remove_database(partial)
        try:
            _copy(uri, partial, str(source))
            os.replace(partial, target)
        finally:
            remove_database(partial)
    finally:
        lock.release()
    fsync_dir(dest_dir)
    version, queues, messages, clean = _summary(target)
    return BackupResult(
        source_dir,
        dest_dir,
        target.stat().st_size,
        version,
        queues,
        messages,
        time.monotonic() - started,
        live,
        clean,
    )


def _prepare_dest(source_dir: Path, dest_dir: Path) -> Path:
    if dest_dir.resolve() == source_dir.resolve():
        raise StoreError(f"{dest_dir}: the data dir itself; pass a new directory as DEST")
    if dest_dir.exists() and not dest_dir.is_dir():
        raise StoreError(f"{dest_dir}: not a directory; pass a new directory as DEST")
    # What an interrupted backup left (DEST/rabbitish.db.partial...) is ours to replace.
    ours = {f"{DB_NAME}{PARTIAL}{suffix}" for suffix in ("", "-journal", "-wal", "-shm")}
    leftovers = sorted(p.name for p in dest_dir.iterdir()) if dest_dir.exists() else []
    leftovers = [name for name in leftovers if name not in ours]
    if leftovers:
        raise StoreError(
            f"{dest_dir}: not empty ({', '.join(leftovers[:3])}); pass a new or empty directory"
        )
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(
            f"{dest_dir}: cannot create it ({err.strerror}); pass another DEST"
        ) from err
    return dest_dir / DB_NAME


def _copy(uri: str, partial: Path, name: str) -> None:
    try:
        src = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            dst = sqlite3.connect(partial, isolation_level=None)
            try:
                src.backup(dst)  # pages=-1: the whole database in one step, one read transaction
                dst.execute("PRAGMA journal_mode=WAL")
                check = dst.execute("PRAGMA quick_check(1)").fetchone()[0]
                if check != "ok":
                    raise StoreError(f"{name}: the copy does not check ({check}); nothing kept")
            finally:
                dst.close()  # the last connection: the copy's WAL is folded in and removed
        finally:
            src.close()
    except sqlite3.Error as err:
        raise StoreError(f"{name}: backup failed ({err}); nothing kept") from err
    fd = os.open(partial, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _summary(db: Path) -> tuple[int, int, int, bool]:
    conn = sqlite3.connect(f"file:{quote(str(db.resolve()))}?mode=ro&immutable=1", uri=True)
    try:
        version = int(
            conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        )
        queues = conn.execute("SELECT count(*) FROM queues").fetchone()[0]
        messages = conn.execute("SELECT count(*) FROM queue_messages").fetchone()[0]
        clean = conn.execute("SELECT 1 FROM meta WHERE key = ?", (CLEAN_STOP,)).fetchone()
        return version, queues, messages, clean is not None
    finally:
        conn.close()
