"""How cost grows: rate, broker CPU per message and broker RSS as one dimension of the load
grows, for rabbitish and a local RabbitMQ in the same run (side_by_side.py: fresh brokers for
every point, rabbitish then RabbitMQ). The dimensions:

- connections: N connections, each publishing transient 100-byte messages at a fixed rate
  (`--per-connection-rate`) to one queue that one consumer drains (no-ack);
- queues: N queues bound to one topic exchange (`k<i>.*`), each message routed to one of them
  by a routing key of its own (`k<i>.<seq>`: no two alike, as keys carrying ids are);
- consumers: N consumers (one connection each, prefetch 10, an ack per message) on one queue
  that a confirm-mode publisher fills;
- size: message bodies 16 B -> 16 MiB through one queue, publisher (confirms) and consumer
  (acks) at once, about the same bytes at every size;
- depth: a queue filled to N messages, then the publish rate onto it and the consume rate off
  its head (both measured, each over the same number of messages);
- transactions: N channels each in a transaction, each publishing one message and committing,
  all at once, round after round (commits/s), a no-ack consumer taking the messages.

Clients are raw frames on one asyncio loop (benchmarks/raw_async.py). CPU is the broker's user +
system time from /proc over the measured window, per message (per commit for transactions);
RSS is the broker's VmRSS at the end of the window (its peak during it for sizes). Rates on a
shared machine are noisy: read the shape of the curves and the CPU per message.

    python -m benchmarks.scaling [--quick] [--dimensions queues,depth] [--plot PNG] [--json FILE]
    python -m benchmarks.scaling --replot FILE --plot PNG     (draw saved results again)
    python -m benchmarks.scaling --url amqp://... --pid PID    (one running broker)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import resource
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pamqp import commands

from benchmarks.backlog import PeakRss, rss_bytes
from benchmarks.measure import cpu_seconds
from benchmarks.raw_async import (
    Peer,
    Progress,
    content,
    method_frame,
    publish_frame,
    reply,
)
from benchmarks.side_by_side import add_broker_options, side_by_side

MIB = 1024 * 1024
BODY = 100  # bytes, wherever the size is not the dimension


@dataclass(frozen=True)
class Settings:
    """How much work each point does; `FULL` and `QUICK` below, tests use smaller still."""

    seconds: float = 10.0  # measured window of the timed dimensions (connections, transactions)
    warmup: float = 2.0
    settle: float = 1.0  # pause after a point, so its teardown stays out of the next window
    per_connection_rate: float = 20.0  # msgs/s each connection publishes
    messages: int = 50_000  # per point: queues, consumers
    depth_messages: int = 20_000  # published onto, then consumed off, the deep queue
    size_bytes: int = 1024 * MIB  # bytes per size point (at least size_min messages)
    size_min: int = 20
    size_max: int = 20_000
    window_bytes: int = 8 * MIB  # unconfirmed bytes at most; prefetch by bytes as well
    timeout: float = 600.0


FULL = Settings()
QUICK = Settings(
    seconds=3.0,
    warmup=1.0,
    settle=0.5,
    messages=10_000,
    depth_messages=5_000,
    size_bytes=32 * MIB,
    size_min=10,
    size_max=5_000,
)


@dataclass
class Point:
    """One measurement: `x` on the dimension's axis, the rate (msgs/s or commits/s), broker CPU
    per operation (None without the broker's pids) and RSS (None likewise), and more columns a
    dimension adds (the depth's consume side)."""

    x: int
    rate: float
    cpu_us: float | None
    rss_mib: float | None
    extra: dict[str, float | None] = field(default_factory=dict)


Measure = Callable[[str, list[int], int, Settings], Awaitable[Point]]


@dataclass(frozen=True)
class Dimension:
    name: str
    axis: str  # the x axis' label
    unit: str  # what the rate counts
    full: tuple[int, ...]
    quick: tuple[int, ...]
    measure: Measure


# ---------------------------------------------------------------------- shared pieces
def _name(kind: str) -> str:
    return f"scaling-{kind}-{uuid.uuid4().hex[:8]}"


def _cpu(pids: list[int]) -> float:
    return cpu_seconds(pids) if pids else 0.0


def _rss(pids: list[int]) -> float | None:
    return rss_bytes(pids) / MIB if pids else None


def _per_op(pids: list[int], cpu: float, operations: int) -> float | None:
    return cpu / max(operations, 1) * 1e6 if pids else None


async def _channel(peer: Peer, channel: int = 1, *, confirm: bool = False) -> None:
    await peer.call(channel, commands.Channel.Open())
    if confirm:
        await peer.call(channel, commands.Confirm.Select())


async def _declare(peer: Peer, queue: str, channel: int = 1, exclusive: bool = False) -> None:
    await peer.call(channel, commands.Queue.Declare(queue=queue, exclusive=exclusive))


async def _consume(peer: Peer, queue: str, prefetch: int | None, channel: int = 1) -> None:
    """A consumer on `queue`: no-ack without a prefetch, else acking every delivery."""
    if prefetch is not None:
        await peer.call(channel, commands.Basic.Qos(prefetch_count=prefetch))
        peer.acking = True
    await peer.call(channel, commands.Basic.Consume(queue=queue, no_ack=prefetch is None))


async def _close_all(peers: list[Peer]) -> None:
    await asyncio.gather(*(peer.close() for peer in peers), return_exceptions=True)


def _messages(count: int, queue: str, size: int, frame_max: int) -> list[bytes]:
    """`count` copies of one publish to `queue` through the default exchange."""
    return [publish_frame(1, "", queue) + content(1, size, frame_max)] * count


# ---------------------------------------------------------------------- the dimensions
async def connections(url: str, pids: list[int], count: int, s: Settings) -> Point:
    """`count` publishing connections at a fixed rate each, one no-ack consumer."""
    queue = _name("connections")
    progress = Progress()
    sink = await Peer.open(url, progress)
    await _channel(sink)
    await _declare(sink, queue, exclusive=True)
    await _consume(sink, queue, None)
    publishers = []
    try:
        for _ in range(count):
            peer = await Peer.open(url, progress)
            await _channel(peer)
            publishers.append(peer)
        one = publish_frame(1, "", queue) + content(1, BODY, sink.frame_max)
        loop = asyncio.get_running_loop()
        stop = loop.time() + s.warmup + s.seconds
        ticker = asyncio.ensure_future(_publish_at(publishers, one, s.per_connection_rate, stop))
        await asyncio.sleep(s.warmup)
        cpu, got, began = _cpu(pids), sink.delivered, time.perf_counter()
        await ticker
        elapsed = time.perf_counter() - began
        delivered = sink.delivered - got
        cpu = _cpu(pids) - cpu
        rss = _rss(pids)
        offered = count * s.per_connection_rate
        return Point(
            count,
            delivered / elapsed,
            _per_op(pids, cpu, delivered),
            rss,
            {"offered msgs/s": offered},
        )
    finally:
        await _close_all([*publishers, sink])


async def _publish_at(peers: list[Peer], one: bytes, rate: float, stop: float) -> None:
    """Every peer publishes `one` at `rate` per second, spread evenly: each 10 ms tick writes to
    the next peers in turn, as many as are due."""
    loop = asyncio.get_running_loop()
    due, cursor, last = 0.0, 0, loop.time()
    while (now := loop.time()) < stop:
        due = min(due + (now - last) * rate * len(peers), 2.0 * len(peers))
        last = now
        while due >= 1.0:
            peers[cursor].send(one)
            cursor = (cursor + 1) % len(peers)
            due -= 1.0
        await asyncio.sleep(0.01)


async def queues(url: str, pids: list[int], count: int, s: Settings) -> Point:
    """`count` queues bound to one topic exchange; each message is routed to one of them."""
    exchange = _name("topic")
    peer = await Peer.open(url)
    try:
        await _channel(peer, confirm=True)
        await peer.call(1, commands.Exchange.Declare(exchange=exchange, exchange_type="topic"))
        names = [f"{exchange}.{i}" for i in range(count)]
        declare_ok = reply(commands.Queue.DeclareOk)
        bind_ok = reply(commands.Queue.BindOk)
        for start in range(0, count, 1000):
            chunk = names[start : start + 1000]
            await peer.pipelined(
                [method_frame(1, commands.Queue.Declare(queue=q, exclusive=True)) for q in chunk],
                declare_ok,
                s.timeout,
            )
            await peer.pipelined(
                [
                    method_frame(
                        1, commands.Queue.Bind(queue=q, exchange=exchange, routing_key=f"k{i}.*")
                    )
                    for i, q in enumerate(chunk, start)
                ],
                bind_ok,
                s.timeout,
            )
        body = content(1, BODY, peer.frame_max)
        messages = [
            publish_frame(1, exchange, f"k{i % count}.{i}") + body for i in range(s.messages)
        ]
        cpu, began = _cpu(pids), time.perf_counter()
        await peer.publish_confirmed(messages, 1000, s.timeout)
        elapsed = time.perf_counter() - began
        cpu = _cpu(pids) - cpu
        rss = _rss(pids)
        await peer.call(1, commands.Exchange.Delete(exchange=exchange))
        return Point(count, s.messages / elapsed, _per_op(pids, cpu, s.messages), rss)
    finally:
        await _close_all([peer])  # its exclusive queues go with it


async def consumers(url: str, pids: list[int], count: int, s: Settings) -> Point:
    """`count` consumers on one queue (a connection each, prefetch 10, an ack per message)."""
    queue = _name("consumers")
    progress = Progress()
    publisher = await Peer.open(url, progress)
    takers: list[Peer] = []
    try:
        await _channel(publisher, confirm=True)
        await _declare(publisher, queue)
        for _ in range(count):
            peer = await Peer.open(url, progress)
            await _channel(peer)
            await _consume(peer, queue, 10)
            takers.append(peer)
        messages = _messages(s.messages, queue, BODY, publisher.frame_max)
        cpu, began = _cpu(pids), time.perf_counter()
        await publisher.publish_confirmed(messages, 1000, s.timeout)
        await progress.until(
            lambda: sum(p.delivered for p in takers) >= s.messages, s.timeout, "deliveries"
        )
        elapsed = time.perf_counter() - began
        cpu = _cpu(pids) - cpu
        rss = _rss(pids)
        return Point(count, s.messages / elapsed, _per_op(pids, cpu, s.messages), rss)
    finally:
        await _close_all(takers)
        with contextlib.suppress(Exception):
            await publisher.call(1, commands.Queue.Delete(queue=queue))
        await _close_all([publisher])


async def size(url: str, pids: list[int], body: int, s: Settings) -> Point:
    """Messages of `body` bytes through one queue, published (confirms) and consumed (acks) at
    once; about `size_bytes` in all. RSS: the peak while they flow."""
    queue = _name("size")
    count = max(s.size_min, min(s.size_max, s.size_bytes // body))
    in_flight = max(1, min(1000, s.window_bytes // body))
    progress = Progress()
    publisher = await Peer.open(url, progress)
    taker = await Peer.open(url, progress)
    try:
        await _channel(publisher, confirm=True)
        await _declare(publisher, queue)
        await _channel(taker)
        await _consume(taker, queue, min(100, in_flight))
        messages = _messages(count, queue, body, publisher.frame_max)
        with PeakRss(pids) as rss:
            cpu, began = _cpu(pids), time.perf_counter()
            await publisher.publish_confirmed(messages, in_flight, s.timeout)
            await progress.until(lambda: taker.delivered >= count, s.timeout, "deliveries")
            elapsed = time.perf_counter() - began
            cpu = _cpu(pids) - cpu
        return Point(
            body,
            count / elapsed,
            _per_op(pids, cpu, count),
            rss.peak / MIB if pids else None,
            {"MiB/s": count * body / MIB / elapsed, "messages": count},
        )
    finally:
        await _close_all([taker])
        with contextlib.suppress(Exception):
            await publisher.call(1, commands.Queue.Delete(queue=queue))
        await _close_all([publisher])


async def depth(url: str, pids: list[int], deep: int, s: Settings) -> Point:
    """A queue `deep` messages long: the rate of publishing `depth_messages` more onto it, then
    of consuming as many off its head (prefetch 100, an ack each)."""
    queue = _name("depth")
    progress = Progress()
    publisher = await Peer.open(url, progress)
    taker = await Peer.open(url, progress)
    try:
        await _channel(publisher, confirm=True)
        await _declare(publisher, queue)
        one = publish_frame(1, "", queue) + content(1, BODY, publisher.frame_max)
        for start in range(0, deep, 100_000):  # the fill: not measured
            await publisher.publish_confirmed([one] * min(100_000, deep - start), 5000, s.timeout)
        rss = _rss(pids)
        extra = s.depth_messages
        cpu, began = _cpu(pids), time.perf_counter()
        await publisher.publish_confirmed([one] * extra, 1000, s.timeout)
        publish_s = time.perf_counter() - began
        publish_cpu = _cpu(pids) - cpu
        await _channel(taker)
        await taker.call(1, commands.Basic.Qos(prefetch_count=100))
        taker.acking = True
        cpu, began = _cpu(pids), time.perf_counter()
        taker.send(method_frame(1, commands.Basic.Consume(queue=queue, consumer_tag="deep")))
        await progress.until(lambda: taker.delivered >= extra, s.timeout, "deliveries")
        consume_s = time.perf_counter() - began
        consume_cpu = _cpu(pids) - cpu
        return Point(
            deep,
            extra / publish_s,
            _per_op(pids, publish_cpu, extra),
            rss,
            {
                "consume msgs/s": extra / consume_s,
                "consume CPU us/msg": _per_op(pids, consume_cpu, extra),
            },
        )
    finally:
        await _close_all([taker])  # what it holds unacked goes back before the delete
        with contextlib.suppress(Exception):
            await publisher.call(1, commands.Queue.Delete(queue=queue), timeout=s.timeout)
        await _close_all([publisher])


async def transactions(url: str, pids: list[int], count: int, s: Settings) -> Point:
    """`count` channels, each in a transaction that publishes one message and commits; all at
    once, round after round, for `seconds` (after `warmup`); a no-ack consumer takes them."""
    queue = _name("tx")
    peer = await Peer.open(url)
    try:
        channels = range(1, count + 1)
        open_ok, select_ok = reply(commands.Channel.OpenOk), reply(commands.Tx.SelectOk)
        await peer.pipelined([method_frame(c, commands.Channel.Open()) for c in channels], open_ok)
        await peer.pipelined([method_frame(c, commands.Tx.Select()) for c in channels], select_ok)
        await _declare(peer, queue, exclusive=True)
        # a no-ack consumer on a channel of its own drains the queue, so it does not grow
        await _channel(peer, count + 1)
        await _consume(peer, queue, None, count + 1)
        commit = commands.Tx.Commit()
        one_round = b"".join(
            publish_frame(c, "", queue) + content(c, BODY, peer.frame_max) + method_frame(c, commit)
            for c in channels
        )
        await _commit_rounds(peer, one_round, count, s.warmup, s.timeout)
        cpu, began = _cpu(pids), time.perf_counter()
        done = await _commit_rounds(peer, one_round, count, s.seconds, s.timeout)
        elapsed = time.perf_counter() - began
        cpu = _cpu(pids) - cpu
        rss = _rss(pids)
        commits = done * count
        return Point(count, commits / elapsed, _per_op(pids, cpu, commits), rss)
    finally:
        await _close_all([peer])


async def _commit_rounds(
    peer: Peer, one_round: bytes, count: int, seconds: float, timeout: float
) -> int:
    """Send rounds of `count` commits, each round once the last one's commit-oks are all in,
    for `seconds` (at least one round); how many rounds."""
    commit_ok = reply(commands.Tx.CommitOk)
    done = 0
    stop = time.perf_counter() + seconds
    while done == 0 or time.perf_counter() < stop:
        wanted = peer.replies[commit_ok] + count
        peer.send(one_round)
        await peer.wait_replies(commit_ok, wanted, timeout)
        done += 1
    return done


DIMENSIONS = {
    d.name: d
    for d in (
        Dimension(
            "connections",
            "connections (each publishing at a fixed rate)",
            "msgs/s",
            (1, 10, 100, 300, 1000),
            (1, 10, 100),
            connections,
        ),
        Dimension(
            "queues",
            "queues bound to one topic exchange",
            "msgs/s",
            (1, 10, 100, 1000, 10_000),
            (1, 10, 100, 1000),
            queues,
        ),
        Dimension(
            "consumers",
            "consumers on one queue",
            "msgs/s",
            (1, 3, 10, 30, 100),
            (1, 10, 30),
            consumers,
        ),
        Dimension(
            "size",
            "message size (bytes)",
            "msgs/s",
            (16, 256, 4096, 65536, MIB, 16 * MIB),
            (16, 1024, 65536, MIB),
            size,
        ),
        Dimension(
            "depth",
            "queue depth (messages)",
            "msgs/s",
            (0, 1000, 10_000, 100_000, 1_000_000),
            (0, 1000, 10_000, 100_000),
            depth,
        ),
        Dimension(
            "transactions",
            "open transactions (channels committing at once)",
            "commits/s",
            (1, 10, 100, 1000),
            (1, 10, 100),
            transactions,
        ),
    )
}


# ---------------------------------------------------------------------- running
def measure_dimension(
    dimension: Dimension, points: tuple[int, ...], settings: Settings, url: str, pids: list[int]
) -> list[Point]:
    """Every point of one dimension against one broker, in order."""

    async def run() -> list[Point]:
        found = []
        for x in points:
            found.append(await dimension.measure(url, pids, x, settings))
            await asyncio.sleep(settings.settle)
        return found

    return asyncio.run(run())


@dataclass
class Result:
    """One dimension on every broker, and when and under what load it ran."""

    dimension: str
    began: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    brokers: dict[str, list[Point]]


def run(args: argparse.Namespace) -> Iterator[Result]:
    settings = QUICK if args.quick else FULL
    if args.per_connection_rate is not None:
        settings = replace(settings, per_connection_rate=args.per_connection_rate)
    for name in args.dimensions:
        dimension = DIMENSIONS[name]
        points = dimension.quick if args.quick else dimension.full
        began = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        load = os.getloadavg()
        brokers: dict[str, list[Point]] = {}
        for x in points:
            # Fresh brokers for every point (unless --url): memory a broker took for an earlier
            # point would stay in its RSS, and the rounds of the two brokers alternate.
            def one(url: str, pids: list[int], _args: argparse.Namespace) -> list[Point]:
                return measure_dimension(dimension, (x,), settings, url, pids)  # noqa: B023

            for broker, found in side_by_side(args, one).items():
                brokers.setdefault(broker, []).extend(found)
        yield Result(name, began, load, os.getloadavg(), brokers)


def _raise_fd_limit() -> None:
    """A thousand connections need as many descriptors here and in the broker started here."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))


def save(results: list[Result], path: Path) -> None:
    path.write_text(json.dumps([asdict(r) for r in results], indent=1))


def load(path: Path) -> list[Result]:
    results = []
    for raw in json.loads(path.read_text()):
        brokers = {name: [Point(**p) for p in points] for name, points in raw["brokers"].items()}
        raw.update(
            brokers=brokers,
            load_before=tuple(raw["load_before"]),
            load_after=tuple(raw["load_after"]),
        )
        results.append(Result(**raw))
    return results


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--dimensions",
        type=lambda text: [d.strip() for d in text.split(",") if d.strip()],
        default=list(DIMENSIONS),
        help=f"comma-separated, of: {', '.join(DIMENSIONS)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer points, smaller maxima")
    parser.add_argument("--per-connection-rate", type=float, help="msgs/s (default 20)")
    parser.add_argument("--plot", type=Path, help="write the figure to this PNG")
    parser.add_argument("--json", type=Path, help="save the results to this file")
    parser.add_argument("--replot", type=Path, help="draw results saved with --json; run nothing")
    add_broker_options(parser)
    args = parser.parse_args(argv)
    unknown = set(args.dimensions) - set(DIMENSIONS)
    if unknown:
        parser.error(f"unknown dimension(s): {', '.join(sorted(unknown))}")
    return args


def main() -> None:
    from benchmarks.scaling_report import draw, markdown

    args = parse()
    if args.replot:
        results = load(args.replot)
    else:
        _raise_fd_limit()
        results = []
        for result in run(args):
            results.append(result)
            print(markdown([result]), flush=True)
            if args.json:
                save(results, args.json)
    if args.replot:
        print(markdown(results))
    if args.plot:
        draw(results, args.plot)
        print(f"figure: {args.plot}")


if __name__ == "__main__":
    main()
