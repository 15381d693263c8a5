"""Half-message throughput: messages/s through the whole flow (half publish with confirm, then a
commit decision with confirm) at 1, 10 and 100 messages per ID, with `TransactionProducer`
(pika) and `AsyncTransactionProducer` (aio-pika) as an application would use them. For context,
a plain 0-9-1 tx commit of the same batch (N publishes + tx.commit), on rabbitish and, when
rabbitmq-server is installed, on a real RabbitMQ. Persistent messages on durable queues, on a
broker with a data directory (fsync every commit), so every figure includes the disk.

A second table: prepared transactions with acks, per second, at 1, 10 and 100 acks per
transaction. Each is a consume-transform-produce step on a tx channel: take N messages (a
consumer with prefetch N), publish N, ack the N taken, prepare (publish to amq.rabbitish.txn,
routing key `prepare`, then tx.commit) and commit (the decision staged on the same channel, then
tx.commit): two syncs per transaction. Next to it, the same step with a plain tx.commit (one).

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
from rabbitish.wire_names import TXN_EXCHANGE
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


def _transform_step(url: str, acks: int, seconds: float, prepared: bool) -> float:
    """Transactions/s of take N, publish N, ack N, then prepare + commit (or tx.commit)."""
    queue = f"bench-prepared-{uuid.uuid4().hex}"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue, durable=True)
    props = pika.BasicProperties(delivery_mode=2)
    ch.confirm_delivery()
    for _ in range(2 * acks):  # enough for the next step while one is in flight
        ch.basic_publish("", queue, BODY, props)
    ch.close()
    ch = conn.channel()
    ch.tx_select()
    ch.basic_qos(prefetch_count=acks)
    tags: list[int] = []
    ch.basic_consume(queue, lambda _c, method, _p, _b: tags.append(method.delivery_tag))
    decision = pika.BasicProperties(headers={})
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        while len(tags) < acks:
            conn.process_data_events(time_limit=0.01)
        taken, tags[:] = tags[:acks], tags[acks:]
        for _ in taken:
            ch.basic_publish("", queue, BODY, props)
        ch.basic_ack(taken[-1], multiple=True)
        if prepared:
            assert decision.headers is not None
            decision.headers["x-half-txn"] = f"{queue}-{done}"
            ch.basic_publish(TXN_EXCHANGE, "prepare", b"", decision)
            ch.tx_commit()  # prepare-ok: on disk
            ch.basic_publish(TXN_EXCHANGE, "commit", b"", decision)
        ch.tx_commit()
        done += 1
    elapsed = time.perf_counter() - start
    ch.close()
    admin = conn.channel()
    admin.queue_delete(queue)
    conn.close()
    return done / elapsed


def run_prepared(url: str, acks: int, seconds: float) -> float:
    """Prepared transactions (prepare + commit) per second with `acks` acks each."""
    return _transform_step(url, acks, seconds, prepared=True)


def run_plain_step(url: str, acks: int, seconds: float) -> float:
    """The same step committed with one plain tx.commit, per second."""
    return _transform_step(url, acks, seconds, prepared=False)


def row(name: str, case: object, url: str, seconds: float) -> list[str]:
    assert callable(case)
    return [name, *(f"{case(url, n, seconds):,.0f}" for n in SIZES)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a rabbitish broker already running (else one is started)")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each case")
    args = parser.parse_args()
    rows = [["messages/s, per ID (or per commit):", *(f"{n}" for n in SIZES)]]
    steps = [["transactions/s, acks per transaction:", *(f"{n}" for n in SIZES)]]

    def rabbitish_rows(url: str) -> None:
        rows.append(row("rabbitish half, TransactionProducer", run_half, url, args.seconds))
        rows.append(
            row("rabbitish half, AsyncTransactionProducer", run_half_aio, url, args.seconds)
        )
        rows.append(row("rabbitish plain tx.commit", run_tx, url, args.seconds))
        steps.append(row("rabbitish prepare + commit", run_prepared, url, args.seconds))
        steps.append(row("rabbitish plain tx.commit", run_plain_step, url, args.seconds))

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
    print_table(rows)
    print()
    print_table(steps)


def print_table(rows: list[list[str]]) -> None:
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
