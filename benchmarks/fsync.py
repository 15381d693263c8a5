"""The physical limit of durable work: how many syncs a second the file system under the data
dir takes, and the broker's durable rates as a fraction of it.

    python -m benchmarks.fsync [--dir DIR] [--seconds 2] [--rounds 3] [--messages 20000]
                               [--no-broker] [--no-rabbitmq]

The disk side is a plain loop on a file in DIR: write a block, then sync it (fsync, or fdatasync
as SQLite does on Linux), as fast as it goes; the same with SQLite's own one-row commit in the
store's journal mode (WAL, synchronous=FULL, as the store runs with `--fsync always`); and the
write bandwidth (1 MiB blocks, each synced). The broker side is `rabbitish serve --fsync
always` on a data dir in DIR, running the suite's two durable scenarios that wait for the disk
(benchmarks/durable.py): tx_commit_1 (each commit waits for its own sync, so the disk's sync
rate bounds it) and confirm_publish (pipelined: the store's group commit puts many messages in
one sync, so its bound is the sync rate times the batch, or the write bandwidth), with the bytes
the broker wrote to storage per message (/proc/PID/io). A local RabbitMQ, when installed, runs
the same two scenarios beside it (its data dir is a temporary directory, on the file system of
tempfile.gettempdir()). Rounds interleave the disk loops and the brokers; medians are
reported, each broker's fractions taken against the disk loops run just before it in the same
round."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from statistics import median

BLOCK = 4096  # one page: what a small commit appends to SQLite's WAL, give or take a header
BANDWIDTH_BLOCK = 1 << 20
BANDWIDTH_CAP = 256 << 20  # bytes written at most per bandwidth loop, whatever the duration


@dataclass
class DiskRates:
    """Operations per second of the plain loops, and the write bandwidth in bytes per second."""

    append_fsync: float
    append_fdatasync: float
    rewrite_fdatasync: float
    sqlite_commit: float
    bandwidth: float


def sync_loop(
    directory: Path, seconds: float, sync: Callable[[int], None], append: bool, block: int = BLOCK
) -> float:
    """Syncs per second: write `block` bytes (appended, or over the same bytes of a file that
    already has them) and sync, until `seconds` passed. The file is removed afterwards."""
    path = directory / f"sync-loop-{uuid.uuid4().hex[:8]}"
    data = os.urandom(block)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if not append:
            os.write(fd, data)
            os.fsync(fd)
        count, start = 0, time.perf_counter()
        while True:
            if append:
                os.write(fd, data)
            else:
                os.pwrite(fd, data, 0)
            sync(fd)
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                return count / elapsed
    finally:
        os.close(fd)
        path.unlink()


def bandwidth_loop(directory: Path, seconds: float) -> float:
    """Bytes per second of 1 MiB appends, each followed by fdatasync (at most BANDWIDTH_CAP)."""
    path = directory / f"bandwidth-{uuid.uuid4().hex[:8]}"
    data = os.urandom(BANDWIDTH_BLOCK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        written, start = 0, time.perf_counter()
        while True:
            written += os.write(fd, data)
            os.fdatasync(fd)
            elapsed = time.perf_counter() - start
            if elapsed >= seconds or written >= BANDWIDTH_CAP:
                return written / elapsed
    finally:
        os.close(fd)
        path.unlink()


def sqlite_commits(directory: Path, seconds: float, body: int = 100) -> float:
    """Commits per second of one-row INSERTs (a `body`-byte blob each), each its own
    transaction, in the journal mode the store uses with `--fsync always` (WAL,
    synchronous=FULL: the commit returns once the WAL is synced)."""
    path = directory / f"commits-{uuid.uuid4().hex[:8]}.db"
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE message (id INTEGER PRIMARY KEY, body BLOB)")
        blob = os.urandom(body)
        count, start = 0, time.perf_counter()
        while True:
            db.execute("INSERT INTO message (body) VALUES (?)", (blob,))
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                return count / elapsed
    finally:
        db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def disk_rates(directory: Path, seconds: float) -> DiskRates:
    """Every disk loop once, `seconds` each; the ones a commit's rate is compared with last,
    nearest the broker's scenarios that follow."""
    bandwidth = bandwidth_loop(directory, seconds)
    append_fsync = sync_loop(directory, seconds, os.fsync, append=True)
    append_fdatasync = sync_loop(directory, seconds, os.fdatasync, append=True)
    sqlite_commit = sqlite_commits(directory, seconds)
    rewrite_fdatasync = sync_loop(directory, seconds, os.fdatasync, append=False)
    return DiskRates(append_fsync, append_fdatasync, rewrite_fdatasync, sqlite_commit, bandwidth)


@dataclass
class BrokerRates:
    tx_commit_1: float  # commits/s
    tx_commit_1_cpu: float  # broker CPU us per commit
    confirm_publish: float  # msgs/s
    confirm_publish_cpu: float  # broker CPU us per message
    confirm_bytes: float  # bytes the broker wrote to storage per confirmed message


def written_bytes(pids: list[int]) -> int:
    """Bytes `pids` caused to be written to storage (write_bytes of /proc/PID/io)."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/io").read_text().splitlines()
        except OSError:
            continue  # gone meanwhile
        total += sum(int(line.split()[1]) for line in lines if line.startswith("write_bytes:"))
    return total


def broker_rates(
    url: str, pids: list[int], messages: int, seconds: float, body: int
) -> BrokerRates:
    """The two durable scenarios that wait for the disk, on a fresh durable queue."""
    import pika

    from benchmarks import durable
    from benchmarks.measure import timed

    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        queue = f"bench-fsync-{uuid.uuid4().hex[:8]}"
        ch.queue_declare(queue, durable=True)
        tx = timed(pids, lambda: durable.tx_publish(url, queue, 1, seconds, body))
        ch.queue_purge(queue)
        before = written_bytes(pids)
        confirm = timed(pids, lambda: durable.confirm_publish(url, queue, messages, body))
        per_message = (written_bytes(pids) - before) / messages
        ch.queue_delete(queue)
    finally:
        conn.close()
    assert tx[1] is not None and confirm[1] is not None
    return BrokerRates(tx[0], tx[1], confirm[0], confirm[1], per_message)


def file_system(directory: Path) -> str:
    """The mount point and type of the file system holding `directory`."""
    target, best = str(directory.resolve()), ("/", "?")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _device, mount, kind, *_ = line.split()
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best[0]):
            best = (mount, kind)
    return f"{best[1]} on {best[0]}"


def _share(
    rounds: list[tuple[DiskRates, BrokerRates]],
    rate: Callable[[BrokerRates], float],
    limit: Callable[[DiskRates], float],
) -> float:
    """The median over rounds of a broker's rate over the disk's, both of that round."""
    return median([rate(b) / limit(d) for d, b in rounds])


def report(
    disks: list[DiskRates], brokers: dict[str, list[tuple[DiskRates, BrokerRates]]], where: Path
) -> str:
    """Medians of the rounds as a markdown table, with where and when it was measured. A
    broker's fractions are taken against the disk loops run just before its scenarios in the
    same round (the disk's rate moves with whatever else writes to it), then the median."""
    disk = DiskRates(*(median([getattr(d, f.name) for d in disks]) for f in fields(DiskRates)))
    lines = [
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; directory {where} "
        f"({file_system(where)}); median of {len(disks)} disk measurement(s), each broker's "
        f"fractions against the one run just before it.",
        "",
        "| measure | rate | fraction of the disk's limit |",
        "|---|---|---|",
        f"| disk: {BLOCK} B append + fsync | {disk.append_fsync:,.0f}/s | |",
        f"| disk: {BLOCK} B append + fdatasync | {disk.append_fdatasync:,.0f}/s | |",
        f"| disk: {BLOCK} B rewrite + fdatasync | {disk.rewrite_fdatasync:,.0f}/s | |",
        f"| disk: 1 MiB append + fdatasync | {disk.bandwidth / 2**20:,.0f} MiB/s | |",
        f"| SQLite: one-row commit, WAL, synchronous=FULL | {disk.sqlite_commit:,.0f}/s | "
        f"{median([d.sqlite_commit / d.rewrite_fdatasync for d in disks]):.2f} of rewrite + "
        f"fdatasync |",
    ]
    for name, rounds in brokers.items():
        tx = median([b.tx_commit_1 for _, b in rounds])
        tx_cpu = median([b.tx_commit_1_cpu for _, b in rounds])
        confirm = median([b.confirm_publish for _, b in rounds])
        confirm_cpu = median([b.confirm_publish_cpu for _, b in rounds])
        per_message = median([b.confirm_bytes for _, b in rounds])
        tx_fsync = _share(rounds, lambda b: b.tx_commit_1, lambda d: d.append_fsync)
        tx_rewrite = _share(rounds, lambda b: b.tx_commit_1, lambda d: d.rewrite_fdatasync)
        tx_sqlite = _share(rounds, lambda b: b.tx_commit_1, lambda d: d.sqlite_commit)
        per_sync = _share(rounds, lambda b: b.confirm_publish, lambda d: d.rewrite_fdatasync)
        bandwidth = _share(
            rounds, lambda b: b.confirm_publish * b.confirm_bytes, lambda d: d.bandwidth
        )
        lines += [
            f"| {name} tx_commit_1 (broker CPU {tx_cpu:,.0f} us/commit) | {tx:,.0f} "
            f"commits/s | {tx_fsync:.2f} of append + fsync, {tx_rewrite:.2f} of rewrite + "
            f"fdatasync, {tx_sqlite:.2f} of SQLite's commit |",
            f"| {name} confirm_publish (broker CPU {confirm_cpu:,.0f} us/msg) | "
            f"{confirm:,.0f} msgs/s | {per_sync:.1f} messages per rewrite + fdatasync; "
            f"{per_message:,.0f} B written per message, {bandwidth:.2f} of the bandwidth |",
        ]
    return "\n".join(lines)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fsync", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--seconds", type=float, default=2.0, help="per disk loop and tx case")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved; medians reported")
    parser.add_argument("--messages", type=int, default=20_000, help="confirm_publish, per round")
    parser.add_argument("--body", type=int, default=100, help="body size in bytes")
    parser.add_argument("--no-broker", action="store_true", help="the disk loops alone")
    parser.add_argument("--no-rabbitmq", action="store_true", help="rabbitish alone")
    return parser.parse_args()


def main() -> None:
    from benchmarks.side_by_side import start_both

    args = parse()
    disks: list[DiskRates] = []
    with (
        tempfile.TemporaryDirectory(prefix="rabbitish-fsync-", dir=args.dir) as scratch,
        contextlib.ExitStack() as stack,
    ):
        work = Path(scratch)
        targets: dict[str, tuple[str, list[int]]] = {}  # name -> (url, pids whose CPU counts)
        if not args.no_broker:
            targets = start_both(stack, work / "data", with_rabbitmq=not args.no_rabbitmq)
        brokers: dict[str, list[tuple[DiskRates, BrokerRates]]] = {name: [] for name in targets}
        for _ in range(args.rounds):
            if not targets:
                disks.append(disk_rates(work, args.seconds))
            for name, (url, pids) in targets.items():
                disk = disk_rates(work, args.seconds)
                disks.append(disk)
                rates = broker_rates(url, pids, args.messages, args.seconds, args.body)
                brokers[name].append((disk, rates))
    print(report(disks, brokers, args.dir))


if __name__ == "__main__":
    main()
