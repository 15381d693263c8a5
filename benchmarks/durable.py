"""The durable scenarios, persistent messages on a durable queue: (a) published in confirm mode
from a raw socket that pipelines them and waits for the last confirm, (b) one or 100 per
tx.commit for a while (benchmarks.fsync's; the suite runs those and tx_ack in slices,
benchmarks/interleaved.py). `python -m benchmarks` runs them with the broker's CPU time per
message next to each rate."""

from __future__ import annotations

import time
import uuid

import pika

from benchmarks.measure import Figure, timed
from benchmarks.wire import confirmed, open_channel
from tests.support.raw_amqp import RawClient

Result = tuple[int, float]  # messages, elapsed seconds


def confirm_publish(url: str, queue: str, messages: int, body_size: int) -> Result:
    """Persistent messages pipelined in confirm mode, until the last confirm."""
    with RawClient(url).open() as client:
        open_channel(client, confirm=True)
        return messages, confirmed(client, queue, messages, body_size, 2)


def tx_publish(url: str, queue: str, per_commit: int, seconds: float, body_size: int) -> Result:
    """`per_commit` persistent messages per tx.commit for `seconds` (benchmarks.fsync's)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.tx_select()
    props = pika.BasicProperties(delivery_mode=2)
    body = b"x" * body_size
    sent = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(per_commit):
            ch.basic_publish("", queue, body, props)
        ch.tx_commit()
        sent += per_commit
    elapsed = time.perf_counter() - start
    conn.close()
    return sent, elapsed


def run_broker(url: str, pids: list[int], messages: int, body: int) -> dict:
    """confirm_publish on a durable queue of its own. The tx_commit and tx_ack scenarios are
    interleaved between the brokers (benchmarks/interleaved.py)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    queue = f"bench-durable-{uuid.uuid4().hex[:8]}"
    ch.queue_declare(queue, durable=True)
    results: dict[str, Figure] = {}
    results["confirm_publish"] = timed(pids, lambda: confirm_publish(url, queue, messages, body))
    ch.queue_delete(queue)
    conn.close()
    return results
