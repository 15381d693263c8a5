"""The scenarios whose figures drift with the machine, measured in slices that alternate between
the brokers: tx_commit_1 and tx_commit_100 (a disk sync per commit) in slices of `TX_SLICE`
seconds, tx_ack in slices of `ACK_SLICE` messages (from a queue filled for it first, not
timed), and the latency round trip (p50 and p99) in blocks of `BLOCK` round trips. One slice
on each broker first, not counted, warms up its connection; then a slice on each in turn, the
order reversed every time, until each has had its share (`--seconds` of each tx_commit
scenario, `--messages` acked, `--rounds` round trips). Each broker keeps one connection (and
queue, and consumer) for all its slices.

Why slices: on a shared virtual machine one broker's latency p50 moved from 43 to 71 us over a
minute of back-to-back runs, and either broker's tx_commit_1 rate between 1,556 and 2,543
commits/s from one 3 s run to the next, the disk's sync time with it. Measured one after the
other, a minute apart, the two brokers met different machines in effect; interleaved every
fraction of a second, both meet the same one. A commit-per-message broker's CPU per commit
follows its rate (about half a CPU either way, so a slower disk spell means more CPU per
commit), which is why the CPU figures drift too.

Both drivers have sessions: pika's blocking client and a raw socket (the pipelined driver),
and the Go program (every frame its own write, benchmarks/per_write.py), which runs its
scenario again on the same connection for every slice."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pika
from pamqp import commands

from benchmarks.durable import confirm_publish
from benchmarks.measure import Figure, cpu_seconds
from benchmarks.per_write import ACK_EVERY, PREFETCH, DriverProcess
from benchmarks.wire import frames, message, open_channel
from tests.support.raw_amqp import RawClient

BLOCK = 500  # latency round trips per block: tens of milliseconds, many CPU ticks in all
TX_SLICE = 0.5  # seconds per tx_commit slice
ACK_SLICE = 2000  # messages per tx_ack slice
PIKA_ACK_EVERY = 100  # the pipelined driver's tx_ack (pika): acks per tx.commit

Brokers = dict[str, tuple[str, list[int]]]  # name -> (url, pids whose CPU counts)
Results = dict[str, dict[str, Figure]]  # broker -> scenario -> figure


@dataclass
class Slice:
    """What one slice did: operations in `seconds` and, for latency, each round trip (us)."""

    count: int
    seconds: float
    trips_us: list[float]


class Session(Protocol):
    def run(self) -> Slice:
        """One slice of the scenario."""
        ...


def alternate(
    sessions: dict[str, Session], slices: int, pids: dict[str, list[int]]
) -> dict[str, tuple[list[Slice], float]]:
    """One uncounted slice on each, then `slices` on each in alternating order; per broker,
    its counted slices and the CPU seconds its processes spent in them."""
    names = list(sessions)
    for session in sessions.values():
        session.run()
    found: dict[str, list[Slice]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    for index in range(slices):
        for name in names if index % 2 == 0 else names[::-1]:
            before = cpu_seconds(pids[name])
            found[name].append(sessions[name].run())
            cpu[name] += cpu_seconds(pids[name]) - before
    return {name: (found[name], cpu[name]) for name in names}


def rate(slices: list[Slice], cpu: float, pids: list[int]) -> Figure:
    """Operations per second over all the slices, and CPU us per operation."""
    count = sum(s.count for s in slices)
    return count / sum(s.seconds for s in slices), cpu / count * 1e6 if pids else None


def latency(slices: list[Slice], cpu: float, pids: list[int]) -> dict[str, Figure]:
    """p50 and p99 of every round trip of the slices, with CPU us per round trip."""
    ordered = sorted(t for s in slices for t in s.trips_us)
    per_trip = cpu / len(ordered) * 1e6 if pids else None
    return {
        "latency_p50": (ordered[len(ordered) // 2], per_trip),
        "latency_p99": (ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)], per_trip),
    }


# ---------------------------------------------------------------------- the pipelined driver
class RawRoundTrips:
    """A raw-socket consumer (no-ack) on an exclusive queue, which it publishes to: one write
    holds the publish's three frames; `count` round trips a slice."""

    def __init__(self, client: RawClient, body_size: int, count: int) -> None:
        self.client = client
        self.count = count
        open_channel(client)
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        client.send_method(1, commands.Basic.Consume(queue=queue, no_ack=True))
        client.expect("Basic.ConsumeOk")
        self.one = message(queue, body_size)

    def run(self) -> Slice:
        client, one, trips = self.client, self.one, []
        clock = time.perf_counter
        began = clock()
        for _ in range(self.count):
            start = clock()
            client.send(one)
            frames(client, lambda ftype, _payload: ftype == 3)
            trips.append((clock() - start) * 1e6)
        return Slice(self.count, clock() - began, trips)


class PikaCommits:
    """pika's blocking client publishing `per_commit` persistent messages per tx.commit to a
    durable queue of its own, for `seconds` a slice."""

    def __init__(
        self, ch: pika.adapters.blocking_connection.BlockingChannel, queue: str,
        per_commit: int, body_size: int, seconds: float,
    ) -> None:  # fmt: skip
        self.ch, self.queue, self.per_commit, self.seconds = ch, queue, per_commit, seconds
        self.body = b"x" * body_size
        self.props = pika.BasicProperties(delivery_mode=2)
        ch.tx_select()

    def run(self) -> Slice:
        ch, queue, body, props = self.ch, self.queue, self.body, self.props
        sent = 0
        clock = time.perf_counter
        start = clock()
        while clock() - start < self.seconds:
            for _ in range(self.per_commit):
                ch.basic_publish("", queue, body, props)
            ch.tx_commit()
            sent += self.per_commit
        return Slice(sent, clock() - start, [])


class PikaTxAcks:
    """pika's blocking client consuming persistent messages in a transaction (prefetch 100,
    an ack each, a tx.commit every `PIKA_ACK_EVERY` acks and at the end of the slice), `count`
    a slice, from a queue filled before; one consumer for all the slices."""

    def __init__(
        self, ch: pika.adapters.blocking_connection.BlockingChannel, queue: str, count: int
    ) -> None:
        self.ch, self.count = ch, count
        ch.basic_qos(prefetch_count=PREFETCH)
        ch.tx_select()
        self.deliveries = ch.consume(queue, inactivity_timeout=30)

    def run(self) -> Slice:
        ch, got = self.ch, 0
        clock = time.perf_counter
        start = clock()
        for method, _props, _body in self.deliveries:
            if method is None:
                raise RuntimeError(f"queue ran dry after {got} of {self.count}")
            ch.basic_ack(method.delivery_tag)
            got += 1
            if got % PIKA_ACK_EVERY == 0 or got == self.count:
                ch.tx_commit()
            if got == self.count:
                break
        return Slice(got, clock() - start, [])


class GoSlices:
    """The Go program's scenario, run once per slice on its one connection."""

    def __init__(self, driver: DriverProcess) -> None:
        self.driver = driver

    def run(self) -> Slice:
        outcome = self.driver.run()
        return Slice(outcome.count, outcome.seconds, outcome.latencies_us)


# ---------------------------------------------------------------------- running them
def pipelined(
    brokers: Brokers, rounds: int, seconds: float, messages: int, body_size: int
) -> Results:
    """tx_commit_1, tx_commit_100, tx_ack (pika) and latency (raw socket), each interleaved."""
    slice_s = min(TX_SLICE, seconds)
    openers = Openers(
        _pika_commits(body_size, slice_s), _pika_acks(body_size), _raw_trips(body_size)
    )
    return _scenarios(brokers, rounds, round(seconds / slice_s), messages, openers)


def per_write(
    binary: Path, brokers: Brokers, rounds: int, seconds: float, messages: int, body_size: int
) -> Results:
    """The same four with the Go program (tx_ack: a tx.commit every 50 acks)."""
    slice_s = min(TX_SLICE, seconds)

    def commits(url: str, pids: list[int], queue: str, per_commit: int) -> DriverProcess:
        return DriverProcess(
            binary, url, pids, "tx_commit", queue=queue, body=body_size, per_commit=per_commit,
            seconds=slice_s,
        )  # fmt: skip

    def acks(url: str, pids: list[int], queue: str, count: int) -> DriverProcess:
        return DriverProcess(
            binary, url, pids, "tx_ack", queue=queue, messages=count, prefetch=PREFETCH,
            ack_every=ACK_EVERY,
        )  # fmt: skip

    def trips(url: str, pids: list[int], queue: str, count: int) -> DriverProcess:
        return DriverProcess(
            binary, url, pids, "latency", queue=queue, body=body_size, messages=count, warmup=0
        )

    openers = Openers(
        _go(commits, durable=True), _go(acks, durable=True, fill=body_size), _go(trips)
    )
    return _scenarios(brokers, rounds, round(seconds / slice_s), messages, openers)


# (url, pids, per_commit or messages or round trips per slice, counted slices) -> a session
# open until the stack closes
Opener = Callable[[contextlib.ExitStack, str, list[int], int, int], Session]


@dataclass(frozen=True)
class Openers:
    """A driver's sessions: publishing in transactions, acking in them, round trips."""

    commits: Opener
    acks: Opener
    trips: Opener


def _scenarios(
    brokers: Brokers, rounds: int, tx_slices: int, messages: int, openers: Openers
) -> Results:
    """`tx_slices` slices of each tx_commit scenario, `messages` acked in tx_ack's slices, then
    `rounds` round trips, per broker."""
    pids = {name: found for name, (_url, found) in brokers.items()}
    results: Results = {name: {} for name in brokers}

    def sliced(opener: Opener, per_slice: int, slices: int) -> dict[str, tuple[list[Slice], float]]:
        with contextlib.ExitStack() as stack:
            sessions = {
                name: opener(stack, url, found, per_slice, slices)
                for name, (url, found) in brokers.items()
            }
            return alternate(sessions, slices, pids)

    for scenario, per_commit in (("tx_commit_1", 1), ("tx_commit_100", 100)):
        for name, (slices, cpu) in sliced(openers.commits, per_commit, tx_slices).items():
            results[name][scenario] = rate(slices, cpu, pids[name])
    per_slice = min(ACK_SLICE, messages)
    for name, (slices, cpu) in sliced(openers.acks, per_slice, -(-messages // per_slice)).items():
        results[name]["tx_ack"] = rate(slices, cpu, pids[name])
    block = min(BLOCK, rounds)
    for name, (slices, cpu) in sliced(openers.trips, block, -(-rounds // block)).items():
        results[name].update(latency(slices, cpu, pids[name]))
    return results


def _to_ack(per_slice: int, slices: int) -> int:
    """Messages a tx_ack session's queue needs: every slice's, the uncounted one included, and
    a prefetch's worth more, which the consumer holds when the last slice ends."""
    return (slices + 1) * per_slice + PREFETCH


def _pika_commits(body_size: int, slice_s: float) -> Opener:
    def open_session(
        stack: contextlib.ExitStack, url: str, _pids: list[int], per_commit: int, _slices: int
    ) -> Session:
        queue = stack.enter_context(_queue(url, durable=True))
        conn = pika.BlockingConnection(pika.URLParameters(url))
        stack.callback(conn.close)
        return PikaCommits(conn.channel(), queue, per_commit, body_size, slice_s)

    return open_session


def _pika_acks(body_size: int) -> Opener:
    def open_session(
        stack: contextlib.ExitStack, url: str, _pids: list[int], count: int, slices: int
    ) -> Session:
        queue = stack.enter_context(_queue(url, durable=True))
        confirm_publish(url, queue, _to_ack(count, slices), body_size)
        conn = pika.BlockingConnection(pika.URLParameters(url))
        stack.callback(conn.close)
        return PikaTxAcks(conn.channel(), queue, count)

    return open_session


def _raw_trips(body_size: int) -> Opener:
    def open_session(
        stack: contextlib.ExitStack, url: str, _pids: list[int], count: int, _slices: int
    ) -> Session:
        return RawRoundTrips(stack.enter_context(RawClient(url).open()), body_size, count)

    return open_session


def _go(
    driver: Callable[[str, list[int], str, int], DriverProcess],
    durable: bool = False,
    fill: int | None = None,
) -> Opener:
    """Sessions of the Go program, each on a queue of its own (filled first with messages of
    `fill` bytes for tx_ack)."""

    def open_session(
        stack: contextlib.ExitStack, url: str, pids: list[int], n: int, slices: int
    ) -> Session:
        queue = stack.enter_context(_queue(url, durable))
        if fill is not None:
            confirm_publish(url, queue, _to_ack(n, slices), fill)
        return GoSlices(stack.enter_context(driver(url, pids, queue, n)))

    return open_session


@contextlib.contextmanager
def _queue(url: str, durable: bool = False) -> Iterator[str]:
    """A queue of the session's own, deleted after."""
    name = f"bench-slices-{uuid.uuid4().hex[:8]}"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        conn.channel().queue_declare(name, durable=durable)
        yield name
        conn.channel().queue_delete(name)
    finally:
        conn.close()
