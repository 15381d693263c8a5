"""The transient scenarios, from a raw socket: (a) publish_plain, transient messages pipelined
without confirms, done when a passive declare counts them all on the queue; (b) consume_ack,
those messages consumed with prefetch 100 and an ack each. The latency scenarios, interleaved
between the brokers, are benchmarks/latency.py's."""

from __future__ import annotations

import struct
import time

from pamqp import commands

from benchmarks.measure import Figure, timed
from benchmarks.wire import DELIVER, delivery_tag, frames, message, open_channel, pipeline
from tests.support.raw_amqp import RawClient, raw_frame

DECLARE_OK = b"\x00\x32\x00\x0b"
ACK = b"\x00\x3c\x00\x50"
PREFETCH = 100
ACKS_HELD = 10  # acks sent together; fewer than PREFETCH, so the consumer never stalls


def _count(client: RawClient, queue: str) -> int:
    """Messages ready on `queue`, from a passive declare sent after what came before."""
    client.send_method(1, commands.Queue.Declare(queue=queue, passive=True))
    found: list[int] = []

    def declare_ok(ftype: int, payload: bytes) -> bool:
        if ftype == 1 and payload[:4] == DECLARE_OK:
            found.append(struct.unpack_from(">I", payload, 5 + payload[4])[0])
            return True
        return False

    frames(client, declare_ok)
    return found[0]


def publish_plain(client: RawClient, queue: str, messages: int, body_size: int) -> float:
    """Seconds until `messages` transient publishes are all on the queue."""
    start = time.perf_counter()
    pipeline(client, message(queue, body_size), messages)
    while _count(client, queue) < messages:
        if time.perf_counter() - start > 120:
            raise RuntimeError("publishes never all reached the queue")
    return time.perf_counter() - start


def consume_ack(client: RawClient, queue: str, messages: int) -> float:
    """Seconds to receive and ack `messages` already on the queue, one ack per message."""
    client.send_method(1, commands.Basic.Qos(prefetch_count=PREFETCH))
    client.expect("Basic.QosOk")
    start = time.perf_counter()
    client.send_method(1, commands.Basic.Consume(queue=queue, consumer_tag="bench"))
    held: list[bytes] = []
    got = 0

    def ack(ftype: int, payload: bytes) -> bool:
        nonlocal got
        if ftype == 1 and payload[:4] == DELIVER:
            got += 1
            held.append(raw_frame(1, 1, ACK + struct.pack(">QB", delivery_tag(payload), 0)))
            if len(held) == ACKS_HELD or got == messages:
                client.send(b"".join(held))
                held.clear()
        return got == messages

    frames(client, ack)
    elapsed = time.perf_counter() - start
    client.send_method(1, commands.Basic.Cancel(consumer_tag="bench"))
    client.expect("Basic.CancelOk")
    return elapsed


def run_broker(url: str, pids: list[int], messages: int, body: int) -> dict:
    """All transient scenarios on one exclusive queue: publish_plain fills it for consume_ack."""
    results: dict[str, Figure] = {}
    with RawClient(url).open() as client:
        open_channel(client)
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        results["publish_plain"] = timed(
            pids, lambda: (messages, publish_plain(client, queue, messages, body))
        )
        results["consume_ack"] = timed(
            pids, lambda: (messages, consume_ack(client, queue, messages))
        )
    return results
