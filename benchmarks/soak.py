"""Soak: many concurrent connections with a mixed workload and random client kills, for minutes;
then nothing may be left behind and memory must not creep. Not part of the suite (it runs for
minutes and loads the machine); its figures go to docs/reliability.md.

Each client connection opens two channels: one publishes transient messages to one of a few
shared queues (bounded with x-max-length so a slow consumer cannot grow a backlog), in confirm
mode, in transactions or plain; the other declares an exclusive queue of its own and consumes
from a shared queue with manual acks (one in twenty held back for up to 10 s) and a prefetch,
so a killed client leaves unacked messages, a consumer and an exclusive queue behind for the
broker to clean up. Every few
hundred milliseconds a random client is killed (its socket aborted, no close) and replaced.

At the end every client closes; the broker must then show, through the management API, no
connections, channels or consumers, no unacked messages and no exclusive queue. RSS is sampled
throughout: the growth from the end of warm-up to the end of the run must stay under 10 %.

    python -m benchmarks.soak [--connections 1000] [--minutes 10] [--kill-every 0.3]
    python -m benchmarks.soak --url amqp://... --management http://host:port --pid PID
    python -m benchmarks.soak --mixed [--minutes 30]   (benchmarks/mixed_soak.py)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import logging
import random
import resource
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import aiormq
from aiormq.connection import TCPTransportFactory

from benchmarks.backlog import rss_bytes
from benchmarks.measure import process_tree
from tests.support.broker_process import BrokerProcess
from tests.support.ports import ReservedPort

SHARED_QUEUES = 8
MAX_LENGTH = 2000
MIB = 1024 * 1024


class _Recording(TCPTransportFactory):
    """aiormq's TCP transport, remembered so the client can be killed (socket aborted)."""

    writer: asyncio.StreamWriter | None = None

    async def create(self, url: Any, **kwargs: Any) -> Any:
        reader, writer = await super().create(url, **kwargs)
        self.writer = writer
        return reader, writer


@dataclass
class Stats:
    opened: int = 0
    killed: int = 0
    published: int = 0
    consumed: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    backlog: int = 0  # messages ready in the queues when the run ended
    rss: list[tuple[float, int]] = field(default_factory=list)


class Client:
    """One connection with a publishing and a consuming channel."""

    def __init__(self, url: str, rng: random.Random, stats: Stats) -> None:
        self.url = url
        self.rng = rng
        self.stats = stats
        self.factory = _Recording()
        self.conn: Any = None
        self.task: asyncio.Task[None] | None = None
        self.mode = rng.choice(["plain", "confirm", "tx"])

    async def start(self) -> None:
        self.conn = aiormq.Connection(self.url, transport_factory=self.factory)
        await self.conn.connect()
        self.stats.opened += 1
        pub = await self.conn.channel(publisher_confirms=self.mode == "confirm")
        sub = await self.conn.channel(publisher_confirms=False)
        if self.mode == "tx":
            await pub.tx_select()
        await sub.queue_declare("", exclusive=True)
        await sub.basic_qos(prefetch_count=self.rng.choice([1, 5, 20]))
        queue = f"soak-{self.rng.randrange(SHARED_QUEUES)}"

        async def on_message(message: Any) -> None:
            self.stats.consumed += 1
            if self.rng.random() < 0.05:  # some stay unacked a while: a kill catches them
                await asyncio.sleep(self.rng.uniform(1, 10))
            with contextlib.suppress(Exception):
                await sub.basic_ack(message.delivery.delivery_tag)

        await sub.basic_consume(queue, on_message)
        self.task = asyncio.create_task(self._publish(pub))

    async def _publish(self, pub: Any) -> None:
        body = b"x" * self.rng.choice([10, 100, 1000, 10000])
        while True:
            await asyncio.sleep(self.rng.uniform(0.5, 1.5))
            queue = f"soak-{self.rng.randrange(SHARED_QUEUES)}"
            try:
                await pub.basic_publish(body, routing_key=queue)
                if self.mode == "tx":
                    await pub.tx_commit()
                self.stats.published += 1
            except (aiormq.exceptions.AMQPError, ConnectionError, asyncio.CancelledError):
                return

    def kill(self) -> None:
        """Abort the socket: no connection.close, the broker must clean up."""
        if self.task is not None:
            self.task.cancel()
        if self.factory.writer is not None:
            self.factory.writer.transport.abort()
        self.stats.killed += 1

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.close(), 10)


def _get(management: str, path: str) -> Any:
    request = urllib.request.Request(
        management + path,
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.load(reply)


def _declare_shared(url: str) -> None:
    async def declare() -> None:
        conn = await aiormq.connect(url)
        channel = await conn.channel()
        for i in range(SHARED_QUEUES):
            await channel.queue_declare(f"soak-{i}", arguments={"x-max-length": MAX_LENGTH})
        await conn.close()

    asyncio.run(declare())


async def _soak(url: str, pids: list[int], args: argparse.Namespace, stats: Stats) -> None:
    asyncio.get_running_loop().set_exception_handler(lambda _loop, _context: None)  # killed
    rng = random.Random(args.seed)
    clients: list[Client] = []
    for start in range(0, args.connections, 50):  # open in batches
        batch = [Client(url, rng, stats) for _ in range(min(50, args.connections - start))]
        await asyncio.gather(*(c.start() for c in batch))
        clients += batch
    print(f"{len(clients)} connections open", flush=True)
    began = time.monotonic()
    replacing: set[asyncio.Task[None]] = set()

    async def replace(index: int) -> None:
        fresh = Client(url, rng, stats)
        try:
            await fresh.start()
        except Exception as exc:  # counted: a broker refusing connections shows here
            stats.errors += 1
            kind = f"{type(exc).__name__}: {exc}"[:100]
            stats.error_kinds[kind] = stats.error_kinds.get(kind, 0) + 1
            return
        clients[index] = fresh

    async def sample() -> None:
        while True:
            stats.rss.append((time.monotonic() - began, rss_bytes(pids)))
            await asyncio.sleep(5)

    sampler = asyncio.create_task(sample())
    end = began + args.minutes * 60
    while time.monotonic() < end:
        await asyncio.sleep(args.kill_every)
        index = rng.randrange(len(clients))
        clients[index].kill()
        task = asyncio.create_task(replace(index))
        replacing.add(task)
        task.add_done_callback(replacing.discard)
    sampler.cancel()
    stats.backlog = sum(q.get("messages_ready", 0) for q in _get(args.management, "/api/queues"))
    await asyncio.gather(*replacing, return_exceptions=True)
    await asyncio.gather(*(c.close() for c in clients))


def _leftovers(management: str) -> dict[str, int]:
    queues = _get(management, "/api/queues")
    return {
        "connections": len(_get(management, "/api/connections")),
        "channels": len(_get(management, "/api/channels")),
        "consumers": len(_get(management, "/api/consumers")),
        "unacked messages": sum(q.get("messages_unacknowledged", 0) for q in queues),
        "exclusive queues": sum(1 for q in queues if q.get("exclusive")),
    }


def run(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, Any]:
    management = args.management
    _declare_shared(url)
    stats = Stats()
    started = time.monotonic()
    asyncio.run(_soak(url, pids, args, stats))
    deadline = time.monotonic() + 60
    left = _leftovers(management)
    while any(left.values()) and time.monotonic() < deadline:  # closes still settling
        time.sleep(1)
        left = _leftovers(management)
    # RSS: the median of the first 30 s after warm-up against the median of the last 30 s.
    warm = [rss for t, rss in stats.rss if args.warmup <= t <= args.warmup + 30]
    late = [rss for t, rss in stats.rss if t >= args.minutes * 60 - 30]
    warm_rss = statistics.median(warm or [stats.rss[0][1]])
    end_rss = statistics.median(late or [stats.rss[-1][1]])
    return {
        "minutes": round((time.monotonic() - started) / 60, 1),
        "connections held": args.connections,
        "connections opened": stats.opened,
        "clients killed": stats.killed,
        "RSS samples": len(stats.rss),
        "messages published": stats.published,
        "messages consumed": stats.consumed,
        "messages ready at the end": stats.backlog,
        "client errors": stats.errors,
        "client error kinds": stats.error_kinds,
        "RSS after warm-up MiB": round(warm_rss / MIB, 1),
        "RSS at the end MiB": round(end_rss / MIB, 1),
        "RSS peak MiB": round(max(r for _, r in stats.rss) / MIB, 1),
        "RSS growth %": round((end_rss - warm_rss) / warm_rss * 100, 1),
        **{f"left: {k}": v for k, v in left.items()},
    }


def main() -> int:
    if "--mixed" in sys.argv[1:]:  # the long mixed soak: benchmarks/mixed_soak.py
        from benchmarks.mixed_soak import main as mixed

        return mixed([a for a in sys.argv[1:] if a != "--mixed"])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, default=0.3, help="seconds between kills")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds before RSS counts")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--url", help="a running broker (with --management and --pid)")
    parser.add_argument("--management", help="its management API, http://host:port")
    parser.add_argument("--pid", type=int, help="its process id (for RSS)")
    args = parser.parse_args()
    args.warmup = min(args.warmup, args.minutes * 60 / 3)
    logging.getLogger("aiormq").setLevel(logging.CRITICAL)  # killed clients' own complaints
    # Both ends of every connection are file descriptors: the broker started here inherits this.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.url:
        figures = run(args.url, process_tree(args.pid), args)
    else:
        with (
            tempfile.TemporaryDirectory(prefix="rabbitish-soak-") as data,
            ReservedPort() as port,
        ):
            port.release()  # the broker binds it
            with BrokerProcess("--management-port", str(port.port), data_dir=data) as broker:
                assert broker.proc is not None
                args.management = f"http://127.0.0.1:{port.port}"
                figures = run(broker.url, process_tree(broker.proc.pid), args)
    print(json.dumps(figures, indent=2))
    left = sum(v for k, v in figures.items() if k.startswith("left: "))
    return 0 if left == 0 and figures["RSS growth %"] < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
