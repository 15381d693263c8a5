"""`python -m benchmarks.hot_path`: CPU per message of the 0-9-1 protocol code alone, in this
process, with no socket and no event loop (the sans-IO harness of tests/unit/harness.py).

Wall-clock rates on a shared virtual machine swing by 30% from one run to the next; this
process's CPU time for the same bytes moves far less, so it shows what a change to the hot path
did to the broker's own work: (a) pipelined transient publishes to a queue without consumers,
fed 2,000 messages per call; (b) one publish fed at a time to a queue with a no-ack consumer on
the same connection, its delivery taken each time (the broker's side of the latency round trip);
(c) `--consumers` consumers on one queue (a channel each, prefetch 10), every one of them full
and a backlog waiting, each step one publish and one ack of the oldest delivery of the next
consumer in turn, in one read, and the delivery the ack lets out (the scaling benchmark's
consumers dimension, without sockets).

    python -m benchmarks.hot_path [--messages 100000] [--rounds 7] [--tracing off|on|bound]
                                  [--consumers 1]

`--tracing on` turns the firehose on for the vhost (copies made, bound to nothing); `bound` also
binds a queue to amq.rabbitmq.trace with '#', as a firehose user does (emptied between rounds).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from pamqp import commands

from benchmarks.wire import message
from rabbitish.protocol.outgoing import ack
from rabbitish.wire_names import TRACE_EXCHANGE
from tests.unit.harness import Harness

CHUNK = 2000


TRACE_QUEUE = "firehose"


def _harness(tracing: str = "off") -> Harness:
    harness = Harness()
    harness.handshake()
    harness.send(1, commands.Channel.Open())
    harness.send(1, commands.Queue.Declare(queue="q"))
    if tracing != "off":
        harness.node.set_tracing("/", True)
    if tracing == "bound":
        harness.send(1, commands.Queue.Declare(queue=TRACE_QUEUE))
        harness.send(
            1, commands.Queue.Bind(queue=TRACE_QUEUE, exchange=TRACE_EXCHANGE, routing_key="#")
        )
    harness.frames()
    return harness


def _empty_trace_queue(harness: Harness) -> None:
    queue = harness.node.vhosts["/"].queues.get(TRACE_QUEUE)
    if queue is not None:
        queue.purge()


def publish_us(harness: Harness, messages: int) -> float:
    data = message("q", 100) * CHUNK
    start = time.process_time()
    for _ in range(messages // CHUNK):
        harness.conn.receive(data)
    spent = time.process_time() - start
    harness.send(1, commands.Queue.Purge(queue="q"))
    _empty_trace_queue(harness)
    return spent / (messages // CHUNK * CHUNK) * 1e6


def round_trip_us(harness: Harness, messages: int) -> float:
    one, conn = message("q", 100), harness.conn
    start = time.process_time()
    for _ in range(messages):
        conn.receive(one)
        conn.take_parts()
    spent = time.process_time() - start
    _empty_trace_queue(harness)
    return spent / messages * 1e6


def _consuming(consumers: int) -> Harness:
    """`consumers` channels each consuming from `q` with prefetch 10, all of them full, and a
    backlog of 1,000 messages behind them."""
    harness = Harness()
    harness.handshake()
    harness.send(1, commands.Channel.Open())
    harness.send(1, commands.Queue.Declare(queue="q"))
    for channel in range(2, consumers + 2):
        harness.send(channel, commands.Channel.Open())
        harness.send(channel, commands.Basic.Qos(prefetch_count=10))
        harness.send(channel, commands.Basic.Consume(queue="q"))
    harness.frames()
    harness.conn.receive(message("q", 100) * (consumers * 10 + 1000))
    harness.conn.take_parts()
    return harness


def publish_ack_us(harness: Harness, consumers: int, messages: int) -> float:
    one, conn = message("q", 100), harness.conn
    channels = [conn.channels[channel] for channel in range(2, consumers + 2)]
    start = time.process_time()
    for step in range(messages):
        channel = channels[step % consumers]
        oldest = next(iter(channel.unacked))
        conn.receive(one + ack(channel.id, oldest, False))
        conn.take_parts()
    spent = time.process_time() - start
    return spent / messages * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hot_path", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7, help="the median is reported")
    parser.add_argument("--tracing", choices=("off", "on", "bound"), default="off")
    parser.add_argument("--consumers", type=int, default=1, help="for (c)")
    args = parser.parse_args()
    harness = _harness(args.tracing)
    gc.collect()
    gc.freeze()  # as `rabbitish serve` does once started
    gc.set_threshold(10_000)
    publish = [publish_us(harness, args.messages) for _ in range(args.rounds)]
    harness.send(1, commands.Basic.Consume(queue="q", no_ack=True))
    harness.frames()
    trips = [round_trip_us(harness, args.messages // 5) for _ in range(args.rounds)]
    consuming = _consuming(args.consumers)
    acks = [
        publish_ack_us(consuming, args.consumers, args.messages // 5) for _ in range(args.rounds)
    ]
    print("| path | CPU per message, median | min | max |\n|---|---|---|---|")
    for name, values in (
        ("pipelined publish", publish),
        ("publish -> delivery", trips),
        (f"publish + ack -> delivery, {args.consumers} consumer(s)", acks),
    ):
        print(
            f"| {name} | {statistics.median(values):.2f} us | {min(values):.2f} us "
            f"| {max(values):.2f} us |"
        )


if __name__ == "__main__":
    main()
