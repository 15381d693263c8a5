"""Half-message throughput: messages/s through the whole flow (half publish with confirm, then a
commit decision with confirm) at 1, 10 and 100 messages per ID, with `TransactionProducer`
(pika) and `AsyncTransactionProducer` (aio-pika) as an application would use them. For context,
a plain 0-9-1 tx commit of the same batch (N publishes + tx.commit), on rabbitish and, when
rabbitmq-server is installed, on a real RabbitMQ. Persistent messages on durable queues, on a
broker with a data directory (fsync every commit), so every figure includes the disk.

    python -m benchmarks.half_commits
    python -m benchmarks.half_commits --seconds 5 --url amqp://guest:guest@host:5672/%2F
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid

import pika

from benchmarks.tx_commits import run_case
from rabbitish.transactional import (
    AsyncTransactionProducer,
    LocalTransactionState,
    TransactionProducer,
)
from tests.support.broker_process import BrokerProcess

SIZES = (1, 10, 100)
BODY = b"x" * 100
PURGE_EVERY = 5_000  # messages: keeps the queue short, as consumers would


def commit(_txn_id: str, _body: object) -> LocalTransactionState:
    return LocalTransactionState.COMMIT


def run_half(url: str, per_id: int, seconds: float) -> float:
    """messages/s committed through TransactionProducer.send."""
    queue = f"bench-half-{uuid.uuid4().hex}"
    admin = pika.BlockingConnection(pika.URLParameters(url))
    ch = admin.channel()
    ch.queue_declare(queue, durable=True)
    bodies = [BODY] * per_id
    sent = 0
    with TransactionProducer(url, f"{queue}-checks") as producer:
        start = time.perf_counter()
        deadline = start + seconds
        while time.perf_counter() < deadline:
            producer.send("", queue, bodies, commit)
            sent += per_id
            if sent % PURGE_EVERY < per_id:
                ch.queue_purge(queue)
        elapsed = time.perf_counter() - start
    ch.queue_delete(queue)
    ch.queue_delete(f"{queue}-checks")
    admin.close()
    return sent / elapsed


async def _run_half_aio(url: str, per_id: int, seconds: float) -> float:
    queue = f"bench-half-{uuid.uuid4().hex}"
    bodies = [BODY] * per_id
    sent = 0
    async with AsyncTransactionProducer(url, f"{queue}-checks") as producer:
        assert producer.channel is not None
        declared = await producer.channel.declare_queue(queue, durable=True)
        start = time.perf_counter()
        deadline = start + seconds
        while time.perf_counter() < deadline:
            await producer.send("", queue, bodies, commit)
            sent += per_id
            if sent % PURGE_EVERY < per_id:
                await declared.purge()
        elapsed = time.perf_counter() - start
        await declared.delete(if_unused=False, if_empty=False)
        await producer.channel.queue_delete(f"{queue}-checks")
    return sent / elapsed


def run_half_aio(url: str, per_id: int, seconds: float) -> float:
    """messages/s committed through AsyncTransactionProducer.send."""
    return asyncio.run(_run_half_aio(url, per_id, seconds))


def run_tx(url: str, per_commit: int, seconds: float) -> float:
    """messages/s of a plain tx commit of the same batch (no half messages)."""
    commits, elapsed = run_case(url, per_commit, seconds, persistent=True, durable=True)
    return commits * per_commit / elapsed


def row(name: str, case: object, url: str, seconds: float) -> list[str]:
    assert callable(case)
    return [name, *(f"{case(url, n, seconds):,.0f}" for n in SIZES)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a rabbitish broker already running (else one is started)")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each case")
    args = parser.parse_args()
    rows = [["messages/s, per ID (or per commit):", *(f"{n}" for n in SIZES)]]

    def rabbitish_rows(url: str) -> None:
        rows.append(row("rabbitish half, TransactionProducer", run_half, url, args.seconds))
        rows.append(
            row("rabbitish half, AsyncTransactionProducer", run_half_aio, url, args.seconds)
        )
        rows.append(row("rabbitish plain tx.commit", run_tx, url, args.seconds))

    if args.url:
        rabbitish_rows(args.url)
    else:
        with (
            tempfile.TemporaryDirectory(prefix="rabbitish-bench-") as data,
            BrokerProcess(data_dir=data) as broker,
        ):
            rabbitish_rows(broker.url)
        from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

        if rabbitmq_available():
            with real_rabbitmq() as node:
                rows.append(
                    row(f"RabbitMQ {node.version} plain tx.commit", run_tx, node.url, args.seconds)
                )
        else:
            rows.append(["RabbitMQ plain tx.commit", "not installed", "", ""])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for cells in rows:
        print(
            "  ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
            )
        )


if __name__ == "__main__":
    main()
