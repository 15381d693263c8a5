"""Store faults on a real file system: a data dir on a tiny tmpfs that fills up, and a read-only
data dir (a read-only bind mount), each in a private mount namespace of the broker process
(`unshare -m`; skipped where that is not permitted). A full disk never leaves a publisher
waiting: confirms are nacked, the cause is logged, and publishing works again once space is
freed, with every confirmed message kept. A read-only data dir is refused at start-up in one
line, and `serve --check` still reads it. A write refused as read-only later on is handled as
any failed write: nacked confirms, the reason in the log, writes kept for a retry."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pika
import pika.exceptions
import pytest

from rabbitish.testing import running_broker
from tests.support.broker_process import BrokerProcess
from tests.support.clients import pika_channel
from tests.support.waiting import wait_until

PERSISTENT = pika.BasicProperties(delivery_mode=2)
PYTHON_RABBITISH = (sys.executable, "-m", "rabbitish")
# $1: the mount point; the rest: the command to run with that mount in place.
TMPFS = 'mount -t tmpfs -o size=2m tmpfs "$1" && head -c 1200000 /dev/zero > "$1/filler"'
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"'


def namespaced(setup: str, mount_point: Path) -> tuple[str, ...]:
    """A command prefix running the rest in a private mount namespace prepared by `setup`."""
    script = f'{setup} && shift && exec "$@"'
    return ("unshare", "-m", "sh", "-c", script, "sh", str(mount_point))


def _mounts_allowed(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [*namespaced(TMPFS, tmp), "true"], capture_output=True, timeout=30, check=False
    )
    return probe.returncode == 0


@pytest.fixture
def mounts(tmp_path: Path) -> Path:
    probe = tmp_path / "probe"
    probe.mkdir()
    if not _mounts_allowed(probe):
        pytest.skip("private mount namespaces (unshare -m, mount) are not permitted here")
    return tmp_path


def test_a_full_disk_nacks_publishes_and_recovers_when_space_is_freed(mounts):
    mount_point = mounts / "small"
    mount_point.mkdir()
    # The disk free limit (50 MB by default) would block publishers before any write fails on
    # this 2 MB disk; with it off, the writes themselves meet the full disk.
    broker = BrokerProcess(
        "--disk-free-limit",
        "0",
        data_dir=mount_point / "data",
        command=(*namespaced(TMPFS, mount_point), *PYTHON_RABBITISH),
        keep_port=True,
    )
    with broker:
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("fill", durable=True)
        confirmed, nacked = [], 0
        for i in range(400):  # 20 KB each: 8 MB, far more than the 0.8 MB left
            body = b"%05d" % i + b"z" * 20_000
            try:
                ch.basic_publish("", "fill", body, PERSISTENT)
                confirmed.append(body)
            except pika.exceptions.NackError:
                nacked += 1
                break
        assert nacked == 1 and confirmed, "the disk never filled up"
        wait_until(lambda: "disk is full" in broker.output(), message=broker.output)

        # Free the space (seen through the broker's own mount namespace); the writer's next
        # retry succeeds, publishers are unblocked and confirms are acks again.
        assert broker.proc is not None
        os.unlink(f"/proc/{broker.proc.pid}/root{mount_point}/filler")
        after = b"after" + b"z" * 100
        ch.basic_publish("", "fill", after, PERSISTENT)

        bodies = []
        while (got := ch.basic_get("fill", auto_ack=True))[0] is not None:
            bodies.append(got[2])
        conn.close()
    kept = [b for b in bodies if b != after]
    assert kept[: len(confirmed)] == confirmed  # every confirmed message, in order
    assert bodies[-1] == after


def _broker_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with running_broker(data_dir=str(data)) as broker, pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("ro", durable=True)
        ch.basic_publish("", "ro", b"kept", PERSISTENT)
    return data


def test_a_read_only_data_dir_is_refused_at_start_and_still_checked(mounts):
    data = _broker_data(mounts)
    prefix = namespaced(READ_ONLY, data)
    serve = subprocess.run(
        [*prefix, *PYTHON_RABBITISH, "serve", "--data-dir", str(data), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert serve.returncode == 2, serve.stderr
    assert f"{data}: data directory is not writable" in serve.stderr
    assert "Traceback" not in serve.stderr
    check = subprocess.run(
        [*prefix, *PYTHON_RABBITISH, "serve", "--data-dir", str(data), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    assert "1 queues, 0 bindings, 1 messages" in check.stdout


def read_only() -> None:
    raise sqlite3.OperationalError("attempt to write a readonly database")


def test_writes_refused_as_read_only_are_nacked_logged_and_retried(tmp_path, caplog):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        with pika_channel(broker.url) as ch:
            ch.confirm_delivery()
            ch.queue_declare("ro-later", durable=True)
            ch.basic_publish("", "ro-later", b"before", PERSISTENT)
            broker.journal.writer.before_write = read_only
            with pytest.raises(pika.exceptions.NackError):
                ch.basic_publish("", "ro-later", b"refused", PERSISTENT)
        assert (
            broker.journal.writer.failure
            == "OperationalError: attempt to write a readonly database"
        )
        broker.journal.writer.before_write = None
        wait_until(lambda: broker.journal.writer.failure is None, timeout=10)
        with pika_channel(broker.url) as ch:
            ch.confirm_delivery()
            ch.basic_publish("", "ro-later", b"after", PERSISTENT)
    assert any("readonly database" in r.getMessage() for r in caplog.records)
