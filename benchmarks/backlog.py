"""Memory at scale: fill a durable queue with a backlog of persistent messages (default 1 GiB
of 64 KiB messages, published in confirm mode with a bounded window of unconfirmed messages),
then drain it with one consumer. Prints the broker's resident memory (VmRSS from /proc: peak
while filling, after the fill, peak while draining), the fill and drain rates and the broker's
CPU time per message, for rabbitish and a local RabbitMQ in the same run (side_by_side.py).

    python -m benchmarks.backlog [--mib 1024] [--body 65536] [--window 64]
    python -m benchmarks.backlog --url amqp://... --pid PID   (one running broker)
"""

from __future__ import annotations

import argparse
import struct
import threading
import time
import uuid
from pathlib import Path

import pika
from pamqp import commands

from benchmarks.measure import cpu_seconds
from benchmarks.side_by_side import add_broker_options, side_by_side
from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame

MIB = 1024 * 1024
_HEADER = struct.Struct(">BHI")
_ACK = b"\x00\x3c\x00\x50"
_NACK = b"\x00\x3c\x00\x78"


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class PeakRss:
    """Samples the brokers' RSS every 50 ms in a thread while the block runs."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pids))
            self._stop.wait(0.05)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pids))


def fill(url: str, queue: str, count: int, body_size: int, window: int) -> float:
    """Publish `count` persistent messages, at most `window` unconfirmed; returns seconds."""
    with RawClient(url, timeout=60).handshake() as client:
        client.send_method(1, commands.Channel.Open())
        client.expect("Channel.OpenOk")
        client.send_method(1, commands.Confirm.Select())
        client.expect("Confirm.SelectOk")
        one = (
            method_frame(1, commands.Basic.Publish(exchange="", routing_key=queue))
            + content_header_frame(1, body_size, delivery_mode=2)
            + raw_frame(3, 1, b"x" * body_size)
        )
        buf = client.buffer
        client.buffer = b""
        sent = confirmed = 0
        start = time.perf_counter()
        while confirmed < count:
            while sent < count and sent - confirmed < window:
                client.send(one)
                sent += 1
            buf += client.recv_bytes(60)
            offset = 0
            while len(buf) - offset >= 7:
                ftype, _channel, size = _HEADER.unpack_from(buf, offset)
                if len(buf) - offset < size + 8:
                    break
                payload = buf[offset + 7 : offset + 7 + size]
                if ftype == 1 and payload[:4] == _NACK:
                    raise RuntimeError("the broker nacked a publish")
                if ftype == 1 and payload[:4] == _ACK:
                    confirmed = max(confirmed, struct.unpack_from(">Q", payload, 4)[0])
                offset += size + 8
            buf = buf[offset:]
        return time.perf_counter() - start


def drain(url: str, queue: str, count: int) -> float:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=100)
    start = time.perf_counter()
    consumed = ch.consume(queue, inactivity_timeout=60)
    for got, (method, _props, _body) in enumerate(consumed, start=1):
        if method is None:
            raise RuntimeError(f"queue ran dry after {got - 1} of {count}")
        if got % 50 == 0 or got == count:
            ch.basic_ack(method.delivery_tag, multiple=True)
        if got == count:
            break
    elapsed = time.perf_counter() - start
    ch.cancel()
    conn.close()
    return elapsed


def run_broker(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, float]:
    count = args.mib * MIB // args.body
    conn = pika.BlockingConnection(pika.URLParameters(url))
    queue = f"bench-backlog-{uuid.uuid4().hex[:8]}"
    conn.channel().queue_declare(queue, durable=True)
    conn.close()
    idle = rss_bytes(pids)
    cpu = cpu_seconds(pids)
    with PeakRss(pids) as filling:
        fill_s = fill(url, queue, count, args.body, args.window)
    fill_cpu, cpu = cpu_seconds(pids) - cpu, cpu_seconds(pids)
    time.sleep(1.0)  # let the broker settle (page out, GC) before the steady-state figure
    after = rss_bytes(pids)
    with PeakRss(pids) as draining:
        drain_s = drain(url, queue, count)
    drain_cpu = cpu_seconds(pids) - cpu
    mib = count * args.body / MIB
    return {
        "idle RSS MiB": idle / MIB,
        "peak RSS while filling MiB": filling.peak / MIB,
        "RSS with the backlog MiB": after / MIB,
        "peak RSS while draining MiB": draining.peak / MIB,
        "fill MiB/s": mib / fill_s,
        "fill: broker CPU us/msg": fill_cpu / count * 1e6,
        "drain msgs/s": count / drain_s,
        "drain MiB/s": mib / drain_s,
        "drain: broker CPU us/msg": drain_cpu / count * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="backlog size")
    parser.add_argument("--body", type=int, default=65536, help="message body size in bytes")
    parser.add_argument("--window", type=int, default=64, help="unconfirmed publishes at most")
    add_broker_options(parser)
    args = parser.parse_args()
    columns = side_by_side(args, run_broker)
    print(f"{args.mib} MiB backlog of persistent {args.body}-byte messages on a durable queue")
    print("| measure | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for key in next(iter(columns.values())):
        print(f"| {key} | " + " | ".join(f"{col[key]:,.0f}" for col in columns.values()) + " |")


if __name__ == "__main__":
    main()
