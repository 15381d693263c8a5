"""The stream reader without Spark: `AmqpStreamReader`'s calls made in the order PySpark's
source runner makes them for a Trigger.AvailableNow query (prepare for the trigger, the initial
offset, the empty batch that names the query, then latestOffset, partitions, the task's read and
commit per micro-batch), against a broker process, next to the pika consume loop with tx acks
of `benchmarks.spark` on the same broker. It bounds what the connector's driver side and the
broker can do for a streaming read whatever Spark adds, and is quick to profile.

    python -m benchmarks.spark_reader [--rows 100000] [--rounds 3] [--batch-seconds 0]
                                      [--row-us 0]

--batch-seconds and --row-us stand in for Spark's time per micro-batch and per row (sleeps on
the calling thread, while the reader's connection thread prepares ahead). Rows/s of both and
the broker's CPU per row (user + system from /proc) are printed per round.

Needs the spark extra (pip install -e '.[spark]'); Java is not needed.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pika

from benchmarks.measure import cpu_seconds
from benchmarks.spark import pika_consume, pika_publish
from tests.support.broker_process import BrokerProcess

QUEUE = "bench-spark-reader"


def fill(url: str, rows: int, queue: str = QUEUE) -> None:
    """`rows` persistent 100-byte messages on durable `queue`, as benchmarks.spark publishes."""
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        connection.channel().queue_declare(queue, durable=True)
    pika_publish(url, queue, rows, b"x" * 100)


def read(url: str, batch_seconds: float, row_seconds: float, queue: str = QUEUE) -> list[int]:
    """Every message through the reader as Spark would take it; the batch sizes."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from rabbitish.spark.options import AmqpOptions
    from rabbitish.spark.schema import SCHEMA
    from rabbitish.spark.stream_reader import AmqpStreamReader

    reader = AmqpStreamReader(AmqpOptions.parse({"url": url, "queue": queue}), SCHEMA)
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    reader.partitions(start, end)
    time.sleep(batch_seconds)
    reader.commit(end)
    start, sizes = end, []
    while True:
        end = reader.latestOffset(start, ReadAllAvailable())
        if end["seq"] == start["seq"]:
            break
        rows = 0
        for partition in reader.partitions(start, end):
            rows += sum(batch.num_rows for batch in reader.read(partition))
        sizes.append(rows)
        time.sleep(batch_seconds + row_seconds * rows)
        reader.commit(end)
        start = end
    reader.stop()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark_reader", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-seconds", type=float, default=0.0)
    parser.add_argument("--row-us", type=float, default=0.0)
    args = parser.parse_args()
    for number in range(1, args.rounds + 1):
        with (
            tempfile.TemporaryDirectory(prefix="bench-spark-reader-") as data_dir,
            BrokerProcess("--fsync", "always", data_dir=data_dir) as broker,
        ):
            assert broker.proc is not None
            pids = [broker.proc.pid]
            fill(broker.url, args.rows)
            before, started = cpu_seconds(pids), time.perf_counter()
            pika_consume(broker.url, QUEUE, args.rows, 10_000)
            loop = args.rows / (time.perf_counter() - started)
            loop_cpu = (cpu_seconds(pids) - before) / args.rows * 1e6
            fill(broker.url, args.rows)
            before, started = cpu_seconds(pids), time.perf_counter()
            sizes = read(broker.url, args.batch_seconds, args.row_us / 1e6)
            reader = args.rows / (time.perf_counter() - started)
            reader_cpu = (cpu_seconds(pids) - before) / args.rows * 1e6
            assert sum(sizes) == args.rows, sizes
            print(
                f"round {number}: pika consume loop {loop:,.0f} rows/s (broker {loop_cpu:.1f} "
                f"us a row); reader {reader:,.0f} rows/s = {reader / loop:.2f}x (broker "
                f"{reader_cpu:.1f} us a row); {len(sizes)} batches",
                flush=True,
            )


if __name__ == "__main__":
    main()
