"""The database layout, its version, and the checks that refuse a data dir we did not write or
cannot read, before anything in it is touched."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import quote

SCHEMA_VERSION = 4
DB_NAME = "rabbitish.db"
APPLICATION_ID = 0x52424954  # "RBIT": marks the file as ours in the SQLite header
SQLITE_MAGIC = b"SQLite format 3\x00"
TABLES = frozenset(
    {
        "meta",
        "exchanges",
        "queues",
        "bindings",
        "messages",
        "queue_messages",
        "half_txns",
        "half_messages",
        "half_decisions",
        "half_settlements",
        "vhosts",
        "users",
        "permissions",
        "policies",
    }
)

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

# Version 2: half messages (engine/half.py). Undecided transactions with their check-back state
# (wall-clock times), their durable held messages in publish order, and recent decisions.
HALF_DDL = """
CREATE TABLE half_txns (
    vhost TEXT NOT NULL, id TEXT NOT NULL, created_at REAL NOT NULL, check_queue TEXT,
    immunity REAL, checks_sent INTEGER NOT NULL, last_check_at REAL,
    PRIMARY KEY (vhost, id)
);
CREATE TABLE half_messages (
    vhost TEXT NOT NULL, txn_id TEXT NOT NULL, ord INTEGER NOT NULL, queue TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    PRIMARY KEY (vhost, txn_id, ord)
) WITHOUT ROWID;
CREATE INDEX half_messages_by_message ON half_messages (message_id);
CREATE TABLE half_decisions (
    vhost TEXT NOT NULL, id TEXT NOT NULL, committed INTEGER NOT NULL,
    PRIMARY KEY (vhost, id)
);
"""

# Version 3: access control and settings that RabbitMQ keeps in its schema database: vhosts,
# users (password hashes in RabbitMQ's format), their per-vhost permission regexes, and
# policies (operator policies too), each definition a JSON object.
ACCESS_DDL = """
CREATE TABLE vhosts (
    name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT ''
);
CREATE TABLE users (
    name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, hashing_algorithm TEXT NOT NULL,
    tags TEXT NOT NULL
);
CREATE TABLE permissions (
    user TEXT NOT NULL, vhost TEXT NOT NULL, configure TEXT NOT NULL, write TEXT NOT NULL,
    read TEXT NOT NULL,
    PRIMARY KEY (user, vhost)
);
CREATE TABLE policies (
    vhost TEXT NOT NULL, name TEXT NOT NULL, operator INTEGER NOT NULL, pattern TEXT NOT NULL,
    apply_to TEXT NOT NULL, priority INTEGER NOT NULL, definition TEXT NOT NULL,
    PRIMARY KEY (vhost, name, operator)
);
"""

# Version 4: prepared transactions (engine/half.py `prepare`). A half transaction may be a
# prepared one (kept across a restart even when none of its messages are), and its settlements
# lock stored messages (queue, seq) until the decision, with the outcome a commit applies.
PREPARED_DDL = """
ALTER TABLE half_txns ADD COLUMN prepared INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS half_settlements (
    vhost TEXT NOT NULL, txn_id TEXT NOT NULL, ord INTEGER NOT NULL, queue TEXT NOT NULL,
    seq INTEGER NOT NULL, outcome TEXT NOT NULL, delivery_failed INTEGER NOT NULL,
    undeliverable_here INTEGER NOT NULL,
    PRIMARY KEY (vhost, txn_id, ord)
) WITHOUT ROWID;
"""

# meta key: the access tables got the defaults (default user and vhost) once (store/access.py)
ACCESS_SEEDED = "access_seeded"

# A meta row present only while the broker is stopped after a clean stop that wrote everything.
# Without it (a crash, a kill -9, a failed disk) the next start cannot know which deliveries
# reached the disk, so every recovered message comes back redelivered, as RabbitMQ does after an
# unclean shutdown; the row is removed at start, before anything is served.
CLEAN_STOP = "clean_stop"

MOVE_AWAY = "move it away or pass another --data-dir"
RESTORE = "restore it from a backup, or move it away to start an empty broker"


class StoreError(Exception):
    """The data dir cannot be used; the message is one line saying which file and what to do."""


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_NAME


def open_database(path: Path, fsync: bool) -> sqlite3.Connection:
    """Open (creating if absent) and validate the database. Refuses, without writing anything
    (not even SQLite's -wal / -shm files), a file that is not SQLite, is damaged, belongs to
    another program, or has a newer version."""
    try:
        _check_dir(path.parent)
        if _is_fresh(path):
            _create(path)
            version = SCHEMA_VERSION
        else:
            version = _validate(path)
        closed_cleanly = _closed_cleanly(path)  # before connecting makes a -wal file
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (sqlite3.Error, OSError) as err:
        raise StoreError(
            f"{path}: cannot be opened ({_reason(err)}); check the permissions of the data dir "
            "or pass another --data-dir"
        ) from err
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if fsync else 'OFF'}")
        if version < SCHEMA_VERSION:
            migrate(conn, version, closed_cleanly)
    except sqlite3.Error as err:
        conn.close()
        raise StoreError(f"{path}: cannot be opened ({_reason(err)}); {MOVE_AWAY}") from err
    except StoreError:
        conn.close()
        raise
    return conn


@contextmanager
def read_only_copy(path: Path) -> Iterator[sqlite3.Connection]:
    """The validated database at `path` for reading only (`serve --check`): opened read-only,
    or, when its schema is older, copied to a temporary file and migrated there, so the data
    dir is never written."""
    version = _validate(path)
    closed_cleanly = _closed_cleanly(path)
    try:
        conn = sqlite3.connect(
            _read_only_uri(path), uri=True, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as err:
        raise StoreError(f"{path}: cannot be opened ({_reason(err)}); {RESTORE}") from err
    if version == SCHEMA_VERSION:
        try:
            yield conn
        finally:
            conn.close()
        return
    with tempfile.TemporaryDirectory(prefix="rabbitish-check-") as tmp:
        copy = sqlite3.connect(Path(tmp) / DB_NAME, isolation_level=None, check_same_thread=False)
        try:
            conn.backup(copy)
            conn.close()
            migrate(copy, version, closed_cleanly)
            yield copy
        finally:
            conn.close()
            copy.close()


SQLITE_PROTOCOL = 15  # "locking protocol": a read-only -shm index that needs rebuilding


def _closed_cleanly(path: Path) -> bool:
    """Whether the last process to use the database closed it: SQLite removes the -wal file
    when the last connection closes, and only then (a kill leaves it, whatever it holds)."""
    return not Path(f"{path}-wal").exists()


def _read_only_uri(path: Path) -> str:
    # Without a -wal file the main file is the whole database: `immutable` reads it without
    # creating -wal / -shm files or taking locks. A -wal file (left by a crash) must be read too,
    # through its -shm index opened read-only (`readonly_shm`: SQLite rebuilds a stale index in
    # memory), so that reading a data dir it then refuses changes not a byte of it; only a -wal
    # without its -shm needs the -shm made.
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if not Path(f"{path}-wal").exists():
        return uri + "&immutable=1"
    return uri + ("&readonly_shm=1" if Path(f"{path}-shm").exists() else "")


def _check_dir(data_dir: Path) -> None:
    """The data dir must be (or become) a directory we can write in."""
    if data_dir.exists() and not data_dir.is_dir():
        raise StoreError(f"{data_dir}: not a directory; pass a directory as --data-dir")
    missing = []  # the directories this start makes, innermost first
    for folder in (data_dir, *data_dir.parents):
        if folder.exists():
            break
        missing.append(folder)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        # A new directory's name lives in its parent: until the parent is synced, a power
        # loss can take the whole data dir away, with every message confirmed in it.
        for folder in reversed(missing):
            with suppress(PermissionError):  # a parent we may not read: best effort
                fsync_dir(folder.parent)
    except OSError as err:
        raise StoreError(
            f"{data_dir}: cannot create the data directory ({err.strerror}); "
            "pass another --data-dir"
        ) from err
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise StoreError(f"{data_dir}: data directory is not writable; pass another --data-dir")


def _is_fresh(path: Path) -> bool:
    if path.is_dir():
        raise StoreError(f"{path}: a directory where the database file belongs; {MOVE_AWAY}")
    return not path.exists() or path.stat().st_size == 0


def _create(path: Path) -> None:
    """Build the schema in a side file and rename it into place, so `path` is either absent or
    a complete rabbitish database whose header carries our application_id."""
    tmp = path.with_name(path.name + ".new")
    remove_database(tmp)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(
            f"BEGIN; {DDL} {HALF_DDL} {ACCESS_DDL} {PREPARED_DDL} "
            f"PRAGMA application_id={APPLICATION_ID}; "
            f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
        )
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the names in `directory` (a file renamed in, a directory made) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_database(path: Path) -> None:
    """Delete the SQLite file at `path` and its side files (-journal, -wal, -shm), if any."""
    for leftover in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)


def _validate(path: Path) -> int:
    """Check the raw header first (no SQLite involved), then the content read-only; returns the
    schema version."""
    _check_header(path)
    try:
        try:
            return _check_read_only(_read_only_uri(path), path)
        except sqlite3.OperationalError as err:
            if err.sqlite_errorcode != SQLITE_PROTOCOL or "readonly_shm" not in _read_only_uri(
                path
            ):
                raise
            # A -shm index a killed writer left mid-update cannot be rebuilt without writing
            # it: read again letting SQLite rebuild it (the -shm only; the data stay as they are).
            return _check_read_only(_read_only_uri(path).replace("&readonly_shm=1", ""), path)
    except sqlite3.Error as err:
        raise StoreError(f"{path}: damaged rabbitish database ({_reason(err)}); {RESTORE}") from err


def _check_read_only(uri: str, path: Path) -> int:
    conn = sqlite3.connect(uri, uri=True)
    try:
        return _check_content(conn, path)
    finally:
        conn.close()


def _check_header(path: Path) -> None:
    with path.open("rb") as f:
        header = f.read(100)
    if not header.startswith(SQLITE_MAGIC):
        raise StoreError(f"{path}: not a SQLite database, so not rabbitish data; {MOVE_AWAY}")
    if len(header) < 100:
        raise StoreError(f"{path}: truncated SQLite file ({len(header)} bytes); {RESTORE}")
    if int.from_bytes(header[68:72], "big") != APPLICATION_ID:
        raise StoreError(
            f"{path}: a SQLite database of another program, not rabbitish data; {MOVE_AWAY}"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    size = path.stat().st_size
    # A part page at the end with a -wal file beside it is a checkpoint a power cut tore: the
    # -wal still holds those pages and SQLite writes them again (the content check reads it).
    torn_checkpoint = bool(size % page_size) and _has_wal(path)
    if page_size < 512 or (size % page_size and not torn_checkpoint):
        raise StoreError(
            f"{path}: truncated or damaged rabbitish database ({size} bytes is not a whole "
            f"number of {page_size}-byte pages); {RESTORE}"
        )


def _has_wal(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    return wal.exists() and wal.stat().st_size > 0


def _check_content(conn: sqlite3.Connection, path: Path) -> int:
    check = " ".join(row[0] for row in conn.execute("PRAGMA quick_check(3)"))
    if check != "ok":
        raise StoreError(f"{path}: damaged rabbitish database ({_one_line(check)}); {RESTORE}")
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    row = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None or not str(row[0]).isdigit():
        raise StoreError(f"{path}: rabbitish database without a schema version; {RESTORE}")
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer rabbitish (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); run a rabbitish that new, or pass another --data-dir"
        )
    missing = TABLES - tables
    if version == SCHEMA_VERSION and missing:
        raise StoreError(
            f"{path}: damaged rabbitish database (missing tables: {', '.join(sorted(missing))}); "
            f"{RESTORE}"
        )
    return version


def _reason(err: sqlite3.Error | OSError) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return _one_line(str(err)) or type(err).__name__


def _one_line(text: str, limit: int = 200) -> str:
    """SQLite reports span lines; the error must stay one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    joined = "; ".join(line for line in lines if not line.startswith("***"))
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def migrate(conn: sqlite3.Connection, version: int, closed_cleanly: bool = False) -> None:
    """Bring an older schema up to date, one version per step, each in one transaction.

    Schemas 1 and 2 had no clean-stop mark (CLEAN_STOP): their brokers stopped by closing the
    database, which removes its -wal file. `closed_cleanly` (no -wal file was there) sets the
    mark, so that messages never delivered come back not redelivered, as after any clean
    stop; with a -wal file left (a crash) every message comes back redelivered."""
    if version < 1:
        raise StoreError(f"schema version {version} is not one this rabbitish can migrate")
    if version < 2:
        conn.executescript(
            f"BEGIN; {HALF_DDL} UPDATE meta SET value = '2' WHERE key = 'schema_version'; COMMIT;"
        )
    if version < 3:
        # New, empty access tables: the defaults are seeded again (store/access.py).
        mark = (
            f"INSERT OR REPLACE INTO meta VALUES ('{CLEAN_STOP}', '1');" if closed_cleanly else ""
        )
        conn.executescript(
            f"BEGIN; {ACCESS_DDL} DELETE FROM meta WHERE key = '{ACCESS_SEEDED}'; {mark} "
            "UPDATE meta SET value = '3' WHERE key = 'schema_version'; COMMIT;"
        )
    if version < 4:
        conn.executescript(
            f"BEGIN; {PREPARED_DDL} UPDATE meta SET value = '4' WHERE key = 'schema_version'; "
            "COMMIT;"
        )
