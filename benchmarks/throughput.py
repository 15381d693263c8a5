"""Hot-path throughput, measured so the broker (not a client library) is the bottleneck: a raw
socket pipelines N pre-encoded publishes in confirm mode and waits for the last confirm; then a
raw no-ack consumer drains the queue, counting deliveries without decoding them. Prints figures
for rabbitish and, when installed, a real RabbitMQ in the same run.

    python -m benchmarks.throughput [--messages 100000] [--body 100] [--url URL ...]
"""

from __future__ import annotations

import argparse
import time

from pamqp import commands

from benchmarks.measure import print_table
from benchmarks.wire import DELIVER, confirmed, frames, open_channel
from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import RawClient


def run(url: str, messages: int, body_size: int) -> tuple[float, float]:
    with RawClient(url).open() as client:
        open_channel(client, confirm=True)
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        publish_rate = messages / confirmed(client, queue, messages, body_size, 1)
        client.send_method(1, commands.Basic.Consume(queue=queue, no_ack=True))
        count = 0
        start = time.perf_counter()

        def all_delivered(ftype: int, payload: bytes) -> bool:
            nonlocal count
            if ftype == 1 and payload[:4] == DELIVER:
                count += 1
            return count == messages

        frames(client, all_delivered)
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
    print_table(rows)


if __name__ == "__main__":
    main()
