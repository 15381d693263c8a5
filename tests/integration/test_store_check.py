"""`rabbitish serve --data-dir D --check` loads a data dir as a start would, without serving or
writing to it: a summary and exit 0, or one line naming what cannot be loaded and exit 2. A row
recovery cannot rebuild stops a real start the same way, naming the object and the way out."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pika
import pytest

from rabbitish.store.schema import DB_NAME
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel

PERSISTENT = pika.BasicProperties(delivery_mode=2)


def check(data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rabbitish", "serve", "--data-dir", str(data), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def serve_refused(data: Path) -> subprocess.CompletedProcess[str]:
    """A real start on `data` that must refuse (exit before serving)."""
    argv = ["--data-dir", str(data), "--port", "0", "--management-port", "0"]
    return subprocess.run(
        [sys.executable, "-m", "rabbitish", "serve", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )


def files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def populated(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with running_broker(data_dir=str(data)) as broker, pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.exchange_declare("chk-x", "topic", durable=True)
        server_named = ch.queue_declare("", durable=True).method.queue
        ch.queue_declare("chk-q", durable=True, arguments={"x-max-priority": 5})
        ch.queue_bind("chk-q", "chk-x", "a.#")
        ch.queue_bind(server_named, "chk-x", "b.#")
        for i in range(3):
            ch.basic_publish("chk-x", "a.b", b"m%d" % i, PERSISTENT)
    return data


def loads_untouched(data: Path) -> str:
    """`--check` loads `data` (exit 0) and leaves every file as it was; its summary."""
    before = files(data)
    done = check(data)
    assert done.returncode == 0, done.stderr
    assert files(data) == before
    return done.stdout


def test_check_summarises_a_good_data_dir_and_writes_nothing(populated):
    assert "1 exchanges, 2 queues, 2 bindings, 3 messages" in loads_untouched(populated)


def test_check_reads_an_older_schema_without_migrating_it(populated):
    db = sqlite3.connect(populated / DB_NAME, isolation_level=None)
    db.executescript(
        "DROP TABLE half_txns; DROP TABLE half_messages; DROP TABLE half_decisions; "
        "DROP TABLE vhosts; DROP TABLE users; DROP TABLE permissions; DROP TABLE policies; "
        "UPDATE meta SET value = '1' WHERE key = 'schema_version';"
    )
    db.close()
    assert "3 messages" in loads_untouched(populated)


def test_check_refuses_a_data_dir_in_use(populated):
    with running_broker(data_dir=str(populated)):
        done = check(populated)
    assert done.returncode == 2
    assert "in use by another running rabbitish" in done.stderr


@pytest.mark.parametrize("where", ["missing", "not-sqlite"])
def test_check_refuses_what_is_not_a_data_dir(tmp_path, where):
    data = tmp_path / "data"
    if where == "not-sqlite":
        data.mkdir()
        (data / DB_NAME).write_bytes(b"hello" * 100)
    done = check(data)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(data / DB_NAME) in done.stderr


# A stored row damaged behind the broker's back -> the object the message must name.
DAMAGE = {
    "exchange type": (
        "UPDATE exchanges SET type = 'x-unknown' WHERE name = 'chk-x'",
        "cannot recover exchange 'chk-x' in vhost '/' (",
    ),
    "queue arguments": (
        "UPDATE queues SET arguments = x'00000009ffff' WHERE name = 'chk-q'",
        "cannot recover queue 'chk-q' in vhost '/' (",
    ),
    "binding arguments": (
        "UPDATE bindings SET arguments = x'00000009ffff' WHERE destination = 'chk-q'",
        "cannot recover binding of queue 'chk-q' to exchange 'chk-x' (routing key 'a.#')",
    ),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_an_unrecoverable_row_is_named_by_check_and_by_serve(populated, case):
    sql, named = DAMAGE[case]
    db = sqlite3.connect(populated / DB_NAME, isolation_level=None)
    db.execute(sql)
    db.close()
    for done, stream in ((check(populated), "stderr"), (serve_refused(populated), "stderr")):
        text = getattr(done, stream)
        assert done.returncode == 2, text
        assert named in text, text
        assert "restore it from a backup" in text and "Traceback" not in text
