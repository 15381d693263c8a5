"""Hot-path throughput, measured so the broker (not a client library) is the bottleneck: a raw
socket pipelines N pre-encoded publishes in confirm mode and waits for the last confirm; then a
raw no-ack consumer drains the queue, counting deliveries without decoding them. Prints figures
for rabbitish and, when installed, a real RabbitMQ in the same run.

    python -m tests.benchmarks.throughput [--messages 100000] [--body 100] [--url URL ...]
"""

from __future__ import annotations

import argparse
import struct
import time

from pamqp import commands

from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame

_HEADER = struct.Struct(">BHI")


def _frames(client: RawClient, until: callable) -> None:
    """Read raw frames, calling `until(type, payload)` until it returns True."""
    buf = client.buffer
    client.buffer = b""
    while True:
        offset = 0
        while len(buf) - offset >= 7:
            ftype, _channel, size = _HEADER.unpack_from(buf, offset)
            if len(buf) - offset < size + 8:
                break
            if until(ftype, buf[offset + 7 : offset + 7 + size]):
                return
            offset += size + 8
        buf = buf[offset:] + client.recv_bytes(30)


def run(url: str, messages: int, body_size: int) -> tuple[float, float]:
    with RawClient(url).handshake() as client:
        client.send_method(1, commands.Channel.Open())
        client.expect("Channel.OpenOk")
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        client.send_method(1, commands.Confirm.Select())
        client.expect("Confirm.SelectOk")
        one = (
            method_frame(1, commands.Basic.Publish(exchange="", routing_key=queue))
            + content_header_frame(1, body_size)
            + raw_frame(3, 1, b"x" * body_size)
        )
        start = time.perf_counter()
        for offset in range(0, messages, 1000):
            client.send(one * min(1000, messages - offset))

        def last_confirm(ftype: int, payload: bytes) -> bool:
            return (
                ftype == 1
                and payload[:4] == b"\x00\x3c\x00\x50"
                and (struct.unpack_from(">Q", payload, 4)[0] == messages)
            )

        _frames(client, last_confirm)
        publish_rate = messages / (time.perf_counter() - start)
        client.send_method(1, commands.Basic.Consume(queue=queue, no_ack=True))
        count = 0
        start = time.perf_counter()

        def all_delivered(ftype: int, payload: bytes) -> bool:
            nonlocal count
            if ftype == 1 and payload[:4] == b"\x00\x3c\x00\x3c":
                count += 1
            return count == messages

        _frames(client, all_delivered)
        return publish_rate, messages / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", action="append")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--body", type=int, default=100)
    args = parser.parse_args()
    rows = [("broker", "publish+confirm msgs/s", "deliver (no-ack) msgs/s")]

    def measure(name: str, url: str) -> None:
        publish, deliver = run(url, args.messages, args.body)
        rows.append((name, f"{publish:,.0f}", f"{deliver:,.0f}"))

    if args.url:
        for url in args.url:
            measure(url, url)
    else:
        with BrokerProcess() as broker:
            measure("rabbitish", broker.url)
        from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

        if rabbitmq_available():
            with real_rabbitmq() as node:
                measure(f"RabbitMQ {node.version}", node.url)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
