"""The `amqp` Spark data source (rabbitish.spark) moving N messages, next to a plain pika loop
moving the same messages: rows/s for a batch write, a streaming write and a streaming read. One
local Spark session (local[2]) serves every broker; each Spark figure includes Spark's own
job and micro-batch overheads, as a user's job would.

    python -m benchmarks.spark [--rows 100000] [--body 100] [--prefetch N] [--progress]
                               [--only rabbitish] [--url URL]

--progress prints where each streaming query's time went, micro-batch by micro-batch (Spark's
durationMs); the load average is printed before and after each broker's run, and after each
scenario the CPU it cost per row: the broker's, and this process tree's (the pika loop or the
Spark driver, JVM and Python workers, reaped workers included): figures load distorts less
than rates.

Needs the spark extra (pip install -e '.[spark]') and Java 17 or 21.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika

from benchmarks.measure import cpu_seconds, print_table, process_tree
from benchmarks.side_by_side import add_broker_options, side_by_side
from rabbitish.spark.options import DEFAULT_PREFETCH

SCENARIOS = (
    "pika publish loop (1 tx)",
    "spark batch write",
    "spark streaming write",
    "pika consume loop (tx acks)",
    "spark streaming read",
)


def session() -> Any:
    from tests.support.spark import local_session

    return local_session("local[2]", "rabbitish-bench")


def timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def run_query(writer: Any, started: list[Any]) -> float:
    """Start a streaming query and wait for its end (Trigger.AvailableNow): seconds; the
    query is appended to `started`."""
    start = time.perf_counter()
    started.append(writer.start())
    started[-1].awaitTermination()
    return time.perf_counter() - start


def fresh_queue(url: str) -> str:
    name = f"bench-spark-{uuid.uuid4().hex[:8]}"
    with _channel(url) as ch:
        ch.queue_declare(name, durable=True)
    return name


class _channel:
    """A channel on its own connection, closed on exit."""

    def __init__(self, url: str) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))

    def __enter__(self) -> Any:
        return self.conn.channel()

    def __exit__(self, *_: object) -> None:
        self.conn.close()


def depth(url: str, queue: str) -> int:
    with _channel(url) as ch:
        return ch.queue_declare(queue, passive=True).method.message_count


def drop(url: str, queue: str) -> None:
    with _channel(url) as ch:
        ch.queue_delete(queue)


def pika_publish(url: str, queue: str, rows: int, body: bytes) -> None:
    """What a task of the connector does, by hand: persistent messages, one tx."""
    with _channel(url) as ch:
        ch.tx_select()
        props = pika.BasicProperties(delivery_mode=2)
        for _ in range(rows):
            ch.basic_publish("", queue, body, props)
        ch.tx_commit()


def pika_consume(url: str, queue: str, rows: int, batch: int) -> None:
    """What the streaming reader does, by hand: a tx consumer, acks committed per batch."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=batch)
    ch.tx_select()
    for taken, (method, _props, _body) in enumerate(ch.consume(queue), 1):
        if taken % batch == 0 or taken == rows:
            ch.basic_ack(method.delivery_tag, multiple=True)
            ch.tx_commit()
        if taken == rows:
            break
    ch.cancel()
    conn.close()


def bodies(spark: Any, rows: int, size: int) -> Any:
    from pyspark.sql import functions as F

    padded = F.rpad(F.format_string("m%d", "id"), size, ".")
    return spark.range(rows, numPartitions=2).select(padded.alias("body"))


def client_cpu(broker: list[int]) -> float:
    """CPU seconds of this process and its descendants but the broker, reaped ones included
    (their time is in their parents' cutime and cstime)."""
    total = 0
    for pid in process_tree(os.getpid()):
        if pid in broker:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += sum(int(field) for field in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def costed(name: str, rows: int, broker: list[int], run: Callable[[], float]) -> float:
    """rows/s of `run()` (which returns seconds), printing the CPU per row it cost."""
    broker_before, client_before = cpu_seconds(broker), client_cpu(broker)
    seconds = run()
    broker_us = (cpu_seconds(broker) - broker_before) / rows * 1e6
    client_us = (client_cpu(broker) - client_before) / rows * 1e6
    print(
        f"{name}: {rows / seconds:,.0f} rows/s; CPU per row: broker {broker_us:.1f} us, "
        f"client {client_us:.1f} us",
        flush=True,
    )
    return rows / seconds


def load() -> str:
    return "load average " + " ".join(f"{n:.2f}" for n in os.getloadavg())


def progress(query: Any) -> None:
    """Each micro-batch's rows and Spark's durationMs (ms), in the order Spark reports them."""
    for batch in query.recentProgress:
        durations = " ".join(f"{k}={v}" for k, v in batch["durationMs"].items())
        print(f"  batch {batch['batchId']}: {batch['numInputRows']} rows; {durations}")


def run_broker(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, float]:
    """The pika loops use the stream reader's batch size: `--prefetch`, else its default."""
    spark, rows, body = args.spark, args.rows, b"x" * args.body
    batch = args.prefetch or DEFAULT_PREFETCH
    rates: dict[str, float] = {}
    print(f"{url.rsplit('@', 1)[-1]}: {load()}", flush=True)

    queue = fresh_queue(url)
    warm_up(spark, url, queue)
    rates[SCENARIOS[0]] = costed(
        SCENARIOS[0], rows, pids, lambda: timed(lambda: pika_publish(url, queue, rows, body))
    )
    assert depth(url, queue) == rows
    rates[SCENARIOS[3]] = costed(
        SCENARIOS[3], rows, pids, lambda: timed(lambda: pika_consume(url, queue, rows, batch))
    )
    drop(url, queue)

    queue = fresh_queue(url)
    frame = bodies(spark, rows, args.body)
    writer = frame.write.format("amqp").option("url", url).option("routingKey", queue)
    rates[SCENARIOS[1]] = costed(
        SCENARIOS[1], rows, pids, lambda: timed(lambda: writer.mode("append").save())
    )
    assert depth(url, queue) == rows

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as work:
        checkpoint = str(Path(work, "read"))
        source = spark.readStream.format("amqp").option("url", url).option("queue", queue)
        if args.prefetch:
            source = source.option("prefetch", args.prefetch)
        stream = (
            source.option("checkpointLocation", checkpoint)
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        started: list[Any] = []
        rates[SCENARIOS[4]] = costed(SCENARIOS[4], rows, pids, lambda: run_query(stream, started))
        if args.progress:
            print("spark streaming read:")
            progress(started[0])
        assert depth(url, queue) == 0
        drop(url, queue)

        source = str(Path(work, "parquet"))
        bodies(spark, rows, args.body).write.parquet(source)
        queue = fresh_queue(url)
        query = (
            spark.readStream.schema("body string")
            .parquet(source)
            .writeStream.format("amqp")
            .option("url", url)
            .option("routingKey", queue)
            .option("checkpointLocation", str(Path(work, "write")))
            .trigger(availableNow=True)
        )
        started.clear()
        rates[SCENARIOS[2]] = costed(SCENARIOS[2], rows, pids, lambda: run_query(query, started))
        if args.progress:
            print("spark streaming write:")
            progress(started[0])
        assert depth(url, queue) == rows
        drop(url, queue)
    print(f"{url.rsplit('@', 1)[-1]}: {load()}", flush=True)
    return rates


def warm_up(spark: Any, url: str, queue: str) -> None:
    """Spark's first jobs pay for starting Python workers; not the connector's cost."""
    bodies(spark, 1000, 10).write.format("amqp").option("url", url).option(
        "routingKey", queue
    ).mode("append").save()
    with _channel(url) as ch:
        ch.queue_purge(queue)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--body", type=int, default=100, help="body size in bytes")
    parser.add_argument(
        "--prefetch",
        type=int,
        help=f"stream read batch bound (the reader's default: {DEFAULT_PREFETCH})",
    )
    parser.add_argument("--progress", action="store_true", help="per micro-batch durations")
    add_broker_options(parser)
    args = parser.parse_args()
    args.spark = session()
    columns = side_by_side(args, run_broker)
    names = list(columns)
    table = [["rows/s", *names]]
    for scenario in SCENARIOS:
        table.append([scenario, *(f"{columns[name][scenario]:,.0f}" for name in names)])
    print(f"{args.rows:,} messages of {args.body} bytes; Spark local[2]; {load()}")
    print_table(table)
    args.spark.stop()


if __name__ == "__main__":
    main()
