"""The durable path, rabbitish (own process, temporary data dir, `--fsync always`) against a
local RabbitMQ in one run: persistent messages on a durable queue, (a) published in confirm mode
from a raw socket that pipelines them and waits for the last confirm, (b) one per tx.commit,
(c) 100 per tx.commit, (d) consumed in a transaction (prefetch 100, a commit every 100 acks).
The broker's CPU time per message (from /proc) is printed next to each rate, since wall-clock
is noisy on a small machine.

    python -m tests.benchmarks.durable [--messages 20000] [--body 100] [--seconds 3]
"""

from __future__ import annotations

import argparse
import struct
import tempfile
import time
import uuid
from collections.abc import Callable

import pika
from pamqp import commands

from tests.benchmarks.amqp10 import _tree, cpu_seconds
from tests.benchmarks.throughput import _frames
from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame

Result = tuple[int, float]  # messages, elapsed seconds


def confirm_publish(url: str, queue: str, messages: int, body_size: int) -> Result:
    with RawClient(url).handshake() as client:
        client.send_method(1, commands.Channel.Open())
        client.expect("Channel.OpenOk")
        client.send_method(1, commands.Confirm.Select())
        client.expect("Confirm.SelectOk")
        one = (
            method_frame(1, commands.Basic.Publish(exchange="", routing_key=queue))
            + content_header_frame(1, body_size, delivery_mode=2)
            + raw_frame(3, 1, b"x" * body_size)
        )
        start = time.perf_counter()
        for offset in range(0, messages, 1000):
            client.send(one * min(1000, messages - offset))

        def last_confirm(ftype: int, payload: bytes) -> bool:
            if ftype == 1 and payload[:4] == b"\x00\x3c\x00\x78":
                raise RuntimeError("the broker nacked a publish")
            return (
                ftype == 1
                and payload[:4] == b"\x00\x3c\x00\x50"
                and struct.unpack_from(">Q", payload, 4)[0] == messages
            )

        _frames(client, last_confirm)
        return messages, time.perf_counter() - start


def tx_publish(url: str, queue: str, per_commit: int, seconds: float, body_size: int) -> Result:
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


def tx_ack(url: str, queue: str, messages: int) -> Result:
    """Drain `messages` (already on the queue), acking each, a commit per 100 acks."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=100)
    ch.tx_select()
    got = 0
    start = time.perf_counter()
    for method, _props, _body in ch.consume(queue, inactivity_timeout=30):
        if method is None:
            raise RuntimeError(f"queue ran dry after {got} of {messages}")
        ch.basic_ack(method.delivery_tag)
        got += 1
        if got % 100 == 0 or got == messages:
            ch.tx_commit()
        if got == messages:
            break
    elapsed = time.perf_counter() - start
    ch.cancel()
    conn.close()
    return got, elapsed


def run_broker(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, tuple]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    queue = f"bench-durable-{uuid.uuid4().hex[:8]}"
    ch.queue_declare(queue, durable=True)

    def timed(run: Callable[[], Result]) -> tuple[float, float]:
        before = cpu_seconds(pids)
        count, elapsed = run()
        return count / elapsed, (cpu_seconds(pids) - before) / count * 1e6

    results: dict[str, tuple] = {}
    results["confirm_publish"] = timed(
        lambda: confirm_publish(url, queue, args.messages, args.body)
    )
    results["tx_ack"] = timed(lambda: tx_ack(url, queue, args.messages))
    results["tx_commit_1"] = timed(lambda: tx_publish(url, queue, 1, args.seconds, args.body))
    ch.queue_purge(queue)
    results["tx_commit_100"] = timed(lambda: tx_publish(url, queue, 100, args.seconds, args.body))
    ch.queue_delete(queue)
    conn.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--body", type=int, default=100, help="body size in bytes")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each tx case")
    parser.add_argument("--only", choices=["rabbitish", "rabbitmq"])
    parser.add_argument("--url", help="only this running broker (CPU per message not measured)")
    args = parser.parse_args()
    columns: dict[str, dict[str, tuple]] = {}
    if args.url:
        columns[args.url] = run_broker(args.url, [], args)
    elif args.only != "rabbitmq":
        with (
            tempfile.TemporaryDirectory(prefix="rabbitish-bench-") as data_dir,
            BrokerProcess("--fsync", "always", data_dir=data_dir) as broker,
        ):
            assert broker.proc is not None
            columns["rabbitish"] = run_broker(broker.url, [broker.proc.pid], args)
    from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

    if not args.url and args.only != "rabbitish" and rabbitmq_available():
        with real_rabbitmq() as node:
            assert node._proc is not None
            name = f"RabbitMQ {node.version}"
            columns[name] = run_broker(node.url, _tree(node._proc.pid), args)
    print(f"persistent messages of {args.body} bytes on a durable queue")
    rows = [["scenario", *columns, "ratio (rate, CPU/msg)"]]
    for scenario in ("confirm_publish", "tx_commit_1", "tx_commit_100", "tx_ack"):
        cells = [columns[name][scenario] for name in columns]
        ratio = ""
        if len(cells) == 2:
            ratio = f"x{cells[0][0] / cells[1][0]:.2f}, x{cells[0][1] / max(cells[1][1], 1e-9):.2f}"
        texts = [f"{rate:,.0f} msgs/s, {cpu:,.0f} us CPU/msg" for rate, cpu in cells]
        rows.append([scenario, *texts, ratio])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
