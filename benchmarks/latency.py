"""The latency scenarios (p50 and p99 of a transient publish -> deliver round trip), measured in
blocks that alternate between the brokers: `BLOCK` round trips on one, then as many on the
other, the order reversed every block, until each has done its share.

Why blocks: on a shared virtual machine one broker's p50 moved from 43 to 71 us over a minute
of back-to-back runs, more than the difference between the brokers. Timed one after the other,
a minute apart, the two brokers' tails came from different machines in effect; interleaved
every few tens of milliseconds, both see the same one. Each broker keeps one connection and
consumer for all its blocks; one block on each before the first counted one warms them up.

Both drivers have a session: a raw socket publishing the frames of one message in one write
(the pipelined driver) and the Go program (every frame its own write, benchmarks/per_write.py),
which runs the scenario again for every block on the same connection."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pika
from pamqp import commands

from benchmarks.measure import Figure, cpu_seconds
from benchmarks.per_write import DriverProcess
from benchmarks.wire import frames, message, open_channel
from tests.support.raw_amqp import RawClient

BLOCK = 500  # round trips per block: tens of milliseconds, many CPU ticks in all

Brokers = dict[str, tuple[str, list[int]]]  # name -> (url, pids whose CPU counts)


class RoundTrips(Protocol):
    def block(self, count: int) -> list[float]:
        """`count` round trips, each in microseconds."""
        ...


class RawRoundTrips:
    """A raw-socket consumer (no-ack) on an exclusive queue, which it publishes to: one write
    holds the publish's three frames."""

    def __init__(self, client: RawClient, body_size: int) -> None:
        self.client = client
        open_channel(client)
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        client.send_method(1, commands.Basic.Consume(queue=queue, no_ack=True))
        client.expect("Basic.ConsumeOk")
        self.one = message(queue, body_size)

    def block(self, count: int) -> list[float]:
        client, one, times = self.client, self.one, []
        clock = time.perf_counter
        for _ in range(count):
            start = clock()
            client.send(one)
            frames(client, lambda ftype, _payload: ftype == 3)
            times.append((clock() - start) * 1e6)
        return times


class GoRoundTrips:
    """The Go program's latency scenario, run once per block on one connection."""

    def __init__(self, driver: DriverProcess) -> None:
        self.driver = driver

    def block(self, count: int) -> list[float]:
        outcome = self.driver.run()
        assert len(outcome.latencies_us) == count, "the program runs blocks of one size"
        return outcome.latencies_us


def interleaved(
    sessions: dict[str, tuple[RoundTrips, list[int]]], rounds: int, block: int
) -> dict[str, dict[str, Figure]]:
    """`rounds` round trips per broker (rounded up to whole blocks), in alternating blocks
    after one uncounted block on each; per broker, latency_p50 and latency_p99 with the
    broker's CPU per round trip (None without pids)."""
    names = list(sessions)
    for session, _pids in sessions.values():
        session.block(block)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    for index in range(-(-rounds // block)):
        for name in names if index % 2 == 0 else names[::-1]:
            session, pids = sessions[name]
            before = cpu_seconds(pids)
            times[name] += session.block(block)
            cpu[name] += cpu_seconds(pids) - before
    results = {}
    for name in names:
        ordered = sorted(times[name])
        pids = sessions[name][1]
        per_trip = cpu[name] / len(ordered) * 1e6 if pids else None
        results[name] = {
            "latency_p50": (ordered[len(ordered) // 2], per_trip),
            "latency_p99": (ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)], per_trip),
        }
    return results


def pipelined(
    brokers: Brokers, rounds: int, body_size: int, block: int = BLOCK
) -> dict[str, dict[str, Figure]]:
    """The raw-socket session on every broker, interleaved."""
    block = min(block, rounds)
    with contextlib.ExitStack() as stack:
        sessions: dict[str, tuple[RoundTrips, list[int]]] = {}
        for name, (url, pids) in brokers.items():
            session = RawRoundTrips(stack.enter_context(RawClient(url).open()), body_size)
            sessions[name] = (session, pids)
        return interleaved(sessions, rounds, block)


def per_write(
    binary: Path, brokers: Brokers, rounds: int, body_size: int, block: int = BLOCK
) -> dict[str, dict[str, Figure]]:
    """The Go program's session on every broker, interleaved, each on a queue of its own."""
    block = min(block, rounds)
    with contextlib.ExitStack() as stack:
        sessions: dict[str, tuple[RoundTrips, list[int]]] = {}
        for name, (url, pids) in brokers.items():
            queue = stack.enter_context(_queue(url))
            driver = DriverProcess(
                binary, url, pids, "latency", queue=queue, body=body_size, messages=block, warmup=0
            )
            sessions[name] = (GoRoundTrips(stack.enter_context(driver)), pids)
        return interleaved(sessions, rounds, block)


@contextlib.contextmanager
def _queue(url: str) -> Iterator[str]:
    """A transient queue for the Go program, deleted after."""
    name = f"bench-go-latency-{uuid.uuid4().hex[:8]}"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        conn.channel().queue_declare(name)
        yield name
        conn.channel().queue_delete(name)
    finally:
        conn.close()
