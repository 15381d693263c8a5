"""The power-loss file system itself (tests/support/powerloss/): what a cut keeps and what it
throws away, first on the model alone, then mounted with SQLite on it."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pika
import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.clients import bodies
from tests.support.powerloss.model import PowerLossTree
from tests.support.powerloss.mount import PowerLoss, skip_reason
from tests.support.waiting import wait_until


def listing(root) -> dict[str, bytes]:
    found = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def test_only_synced_data_and_names_survive_a_drop(tmp_path):
    tree = PowerLossTree(tmp_path)
    tree.mkdir("/d", 0o755)
    tree.fsyncdir(tree.root)  # the name of d
    kept = tree.create("/d/kept", 0o644)
    tree.write(kept, b"synced", 0)
    tree.fsync(kept)  # its data and its name
    tree.write(kept, b"SYNCED and more", 0)
    lost = tree.create("/d/lost", 0o644)
    tree.write(lost, b"never synced", 0)
    named = tree.create("/d/named", 0o644)
    tree.write(named, b"data never synced", 0)
    tree.fsyncdir(tree.directory("/d"))  # names only: "named" (and "lost") exist, empty
    tree.unlink("/d/lost")  # not synced: the empty file stays
    report = tree.cut("drop", random.Random(1))
    assert listing(tmp_path) == {"d/kept": b"synced", "d/lost": b"", "d/named": b""}
    assert report.lost_names == 1 and report.lost_writes >= 3


def test_a_name_is_durable_once_its_file_or_directory_is_synced_not_another(tmp_path):
    tree = PowerLossTree(tmp_path)
    first = tree.create("/a.new", 0o644)
    tree.write(first, b"one", 0)
    tree.fsync(first)
    tree.rename("/a.new", "/a")
    second = tree.create("/b.new", 0o644)
    tree.write(second, b"two", 0)
    tree.fsync(second)  # its own creation only: a.new -> a is still pending
    tree.mkdir("/d", 0o755)
    third = tree.create("/d/c", 0o644)
    tree.write(third, b"three", 0)
    tree.fsync(third)  # its creation needs its directory's: both are durable
    tree.rename("/b.new", "/b")
    tree.fsyncdir(tree.directory("/"))  # every entry of / : both renames
    tree.rename("/d/c", "/d/c2")  # pending
    report = tree.cut("drop", random.Random(1))
    assert listing(tmp_path) == {"a": b"one", "b": b"two", "d/c": b"three"}
    assert report.lost_names == 1


def test_a_new_directory_is_durable_once_its_parent_is_synced(tmp_path):
    """POSIX: a directory's name is in its parent. Syncing what is under a new directory (or the
    directory itself) makes its creation reach the disk, but a cut takes it away again, with all
    it holds, unless the parent was synced since."""
    tree = PowerLossTree(tmp_path)
    tree.mkdir("/a", 0o755)
    tree.mkdir("/a/b", 0o755)
    inner = tree.create("/a/b/f", 0o644)
    tree.write(inner, b"synced", 0)
    tree.fsync(inner)
    tree.fsyncdir(tree.directory("/a/b"))
    tree.fsyncdir(tree.directory("/a"))  # names b, but a itself is still unnamed in /
    tree.mkdir("/c", 0o755)
    tree.fsyncdir(tree.root)  # names c (and a)
    tree.mkdir("/c/d", 0o755)
    other = tree.create("/c/d/g", 0o644)
    tree.fsync(other)  # d is never named
    report = tree.cut("drop", random.Random(1))
    assert listing(tmp_path) == {"a/b/f": b"synced"}
    assert sorted(os.listdir(tmp_path)) == ["a", "c"]
    assert report.lost_dirs == ["/c/d"]


def test_truncates_are_lost_or_kept_with_the_data(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    tree = PowerLossTree(tmp_path)
    node = tree.file("/f")
    tree.truncate(node, 4)
    tree.write(node, b"xy", 6)  # a hole of two zero bytes
    tree.fsync(node)
    tree.truncate(node, 2)
    tree.cut("drop", random.Random(1))
    assert (tmp_path / "f").read_bytes() == b"0123\0\0xy"


@pytest.mark.parametrize("seed", range(20))
def test_torn_keeps_earlier_writes_and_a_prefix_of_the_last(tmp_path, seed):
    (tmp_path / "f").write_bytes(b"abcdefgh")
    tree = PowerLossTree(tmp_path)
    node = tree.file("/f")
    tree.write(node, b"XY", 0)  # unsynced, but not the last: kept whole
    tree.write(node, b"123456", 5)  # the last: overwrites 3 bytes, extends by 3
    tree.mkdir("/new", 0o755)  # names are kept in this mode
    report = tree.cut("torn", random.Random(seed))
    kept = int(report.torn[0].split("kept ")[1].split(" ")[0])
    assert 0 <= kept < 6
    expected = bytearray(b"XYcdefgh")
    expected[5 : 5 + kept] = b"123456"[:kept]
    expected = expected[: max(8, 5 + kept)]
    assert (tmp_path / "f").read_bytes() == bytes(expected)
    assert (tmp_path / "new").is_dir()


@pytest.fixture
def mounted(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    return tmp_path


# A process that commits to SQLite on the mount, says how many commits returned synced, then
# commits more without syncing and waits to be cut.
WRITER = """
import os, random, sqlite3, sys, time
rng = random.Random(sys.argv[2])
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY, body BLOB)")
check = db.execute("PRAGMA quick_check").fetchone()[0]
before = db.execute("SELECT count(*) FROM t").fetchone()[0]
for _ in range(rng.randint(5, 40)):
    db.execute("INSERT INTO t (body) VALUES (?)", (os.urandom(rng.randint(1, 9000)),))
print(check, before, flush=True)
print(db.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
db.execute("PRAGMA synchronous=OFF")
for _ in range(rng.randint(0, 20)):
    db.execute("INSERT INTO t (body) VALUES (?)", (b"unsynced",))
print("waiting", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("mode", ["drop", "torn"])
def test_sqlite_keeps_every_synced_commit_across_cuts(mounted, mode):
    """SQLite in WAL mode with synchronous=FULL on the mount, SIGKILLed by each cut: every
    commit that returned before the cut is there, the database checks ok, whatever the cut
    threw away (synchronous=OFF commits may be lost)."""
    rng = random.Random(7)
    synced = 0
    with PowerLoss(mounted, mode, rng) as power:
        for _ in range(5):
            writer = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(power.mount_point / "t.db"), str(rng.random())],
                stdout=subprocess.PIPE,
                text=True,
            )
            check, before = writer.stdout.readline().split()
            assert check == "ok"
            assert int(before) >= synced, "a synced commit was lost"
            synced = int(writer.stdout.readline())
            assert writer.stdout.readline() == "waiting\n"
            power.cut(writer)
            writer.stdout.close()
        assert len(power.cuts) == 5


@pytest.mark.parametrize("mode", ["drop", "torn"])
def test_a_broker_that_does_not_sync_loses_confirmed_messages_at_a_cut(mounted, mode):
    """The cut has teeth: with `--fsync never` (commits left to the OS, which kill -9 does not
    lose), a power cut loses messages whose confirms had arrived."""
    power = PowerLoss(mounted, mode, random.Random(3)).mount()
    broker = BrokerProcess("--fsync", "never", data_dir=power.data_dir, keep_port=True)
    try:
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.queue_declare("unsynced", durable=True)
            ch.confirm_delivery()
            for i in range(50):
                ch.basic_publish("", "unsynced", b"%d" % i, pika.BasicProperties(delivery_mode=2))
        power.cut(broker.proc)
        broker.kill()
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            kept = conn.channel().queue_declare("unsynced", durable=True).method.message_count
        assert kept < 50
    finally:
        broker.close()
        power.unmount()


@pytest.mark.parametrize("mode", ["drop", "torn"])
def test_a_cut_while_bodies_are_spilled_leaves_a_data_dir_that_starts(mounted, mode):
    """Spilled bodies (store/spill.py: segment files under the data dir, never synced: they
    hold transient messages only) lost or torn by a cut: the next start clears them and every
    confirmed persistent message is there, its body whole."""
    power = PowerLoss(mounted, mode, random.Random(5)).mount()
    broker = BrokerProcess(
        "--memory-high-watermark",
        "2GiB",
        "--memory-paging-ratio",
        "0.001",  # paging from the first sample on
        data_dir=power.data_dir,
        keep_port=True,
    )
    spill = power.data_dir / "spill"
    try:
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.queue_declare("backlog")  # transient: its bodies have no other copy
            ch.queue_declare("kept", durable=True)
            ch.confirm_delivery()
            for i in range(100):
                ch.basic_publish("", "kept", b"%d" % i, pika.BasicProperties(delivery_mode=2))

            def spilled() -> bool:
                ch.basic_publish("", "backlog", b"x" * 4000)
                return any(p.stat().st_size for p in spill.glob("*.seg"))

            wait_until(spilled, timeout=30, message="no body was spilled")
        power.cut(broker.proc)
        broker.kill()
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            assert ch.queue_declare("kept", durable=True).method.message_count == 100
            assert ch.queue_declare("backlog").method.message_count == 0
            # Read back through the new spill files (the durable queue is paged too).
            assert bodies(ch, "kept") == [b"%d" % i for i in range(100)]
    finally:
        broker.close()
        power.unmount()


def test_the_data_dir_the_broker_makes_survives_a_cut(mounted):
    """The broker makes its data dir (and missing parents) and syncs each parent: without
    that, a power cut can take the whole data dir away, confirmed messages and all (the ledgers
    found it the first time this file system held directory names to POSIX)."""
    power = PowerLoss(mounted, "drop", random.Random(11)).mount()
    broker = BrokerProcess(data_dir=power.mount_point / "a" / "b" / "data", keep_port=True)
    try:
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.queue_declare("kept", durable=True)
            ch.confirm_delivery()
            for i in range(10):
                ch.basic_publish("", "kept", b"%d" % i, pika.BasicProperties(delivery_mode=2))
        power.cut(broker.proc)
        broker.kill()
        assert (power.backing / "a" / "b" / "data" / "rabbitish.db").is_file()
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            assert bodies(conn.channel(), "kept") == [b"%d" % i for i in range(10)]
    finally:
        broker.close()
        power.unmount()
