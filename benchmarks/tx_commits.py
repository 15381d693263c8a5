"""Transaction throughput: commits/s with 1 message per commit and messages/s with 100 per
commit, against any broker URL. With no URL it starts rabbitish (a separate process, so client
and broker do not share a GIL) and, when rabbitmq-server is installed, a real RabbitMQ, and prints
both in one table so the figures compare like for like.

    python -m benchmarks.tx_commits                 # rabbitish vs RabbitMQ
    python -m benchmarks.tx_commits --url amqp://guest:guest@localhost:5672/%2F
"""

from __future__ import annotations

import argparse
import time
import uuid

import pika

from benchmarks.measure import print_table
from tests.support.broker_process import BrokerProcess


def run_case(
    url: str, per_commit: int, seconds: float, persistent: bool, durable: bool = False
) -> tuple[int, float]:
    """Commit batches of `per_commit` messages for about `seconds`; returns (commits, elapsed).
    `durable`: on a durable queue (deleted afterwards), so persistent messages reach the disk."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    if durable:
        queue = ch.queue_declare(f"bench-tx-{uuid.uuid4().hex}", durable=True).method.queue
    else:
        queue = ch.queue_declare("", exclusive=True).method.queue
    ch.tx_select()
    props = pika.BasicProperties(delivery_mode=2 if persistent else 1)
    body = b"x" * 100
    commits = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(per_commit):
            ch.basic_publish("", queue, body, props)
        ch.tx_commit()
        commits += 1
        if commits % 50 == 0:
            ch.queue_purge(queue)
    elapsed = time.perf_counter() - start
    if durable:
        ch.queue_delete(queue)
    conn.close()
    return commits, elapsed


def measure(name: str, url: str, seconds: float, persistent: bool) -> list[str]:
    commits, elapsed = run_case(url, 1, seconds, persistent)
    single = commits / elapsed
    commits, elapsed = run_case(url, 100, seconds, persistent)
    batched = commits * 100 / elapsed
    return [name, f"{single:,.0f} commits/s", f"{batched:,.0f} msgs/s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", action="append", help="broker URL (repeatable)")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each case")
    parser.add_argument("--persistent", action="store_true", help="delivery_mode 2 messages")
    args = parser.parse_args()
    rows = [["broker", "1 msg/commit", "100 msgs/commit"]]
    if args.url:
        for url in args.url:
            rows.append(measure(url, url, args.seconds, args.persistent))
    else:
        with BrokerProcess() as broker:
            rows.append(measure("rabbitish", broker.url, args.seconds, args.persistent))
        from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

        if rabbitmq_available():
            with real_rabbitmq() as node:
                rows.append(
                    measure(f"RabbitMQ {node.version}", node.url, args.seconds, args.persistent)
                )
        else:
            rows.append(["RabbitMQ", "not installed", ""])
    print_table(rows)


if __name__ == "__main__":
    main()
