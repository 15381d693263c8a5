"""Totals per customer from a queue of JSON orders, published to an exchange through the `amqp`
PySpark data source (docs/spark.md).

Each message on the orders queue is a JSON object such as
`{"customer": "ada", "amount": "12.50"}` (amount as a JSON number or string). The batch run
drains the queue, sums the amounts per customer and publishes one JSON message per customer,
`{"customer": "ada", "orders": 2, "total": 20.00}`, to the results exchange with the routing
key `totals`. On rabbitish the publish is job-atomic: every total appears at once, or none.

The streaming run (`--stream`) reads the queue as a stream instead: each micro-batch publishes
the new running totals of the customers it saw, and the checkpoint directory carries the totals
and the read position across runs. It stops once it has processed
what was queued when it started (Trigger.AvailableNow); `--follow` keeps it running.

    python examples/spark_orders.py --url amqp://guest:guest@127.0.0.1:5672/%2F
    python examples/spark_orders.py --seed 5   # first publish 5 sample orders, then run
    python examples/spark_orders.py --stream --checkpoint /tmp/orders-checkpoint
"""

from __future__ import annotations

import argparse
import decimal
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pika
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, StringType, StructField, StructType

from rabbitish.spark import AmqpDataSource

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
ORDER = StructType(
    [StructField("customer", StringType()), StructField("amount", DecimalType(12, 2))]
)
TOTAL = "customer string, orders long, total decimal(22,2)"
CUSTOMERS = ("ada", "grace", "edsger")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="AMQP URL of the broker")
    parser.add_argument("--queue", default="orders", help="queue of JSON orders (drained)")
    parser.add_argument("--exchange", default="results", help="exchange the totals go to")
    parser.add_argument("--routing-key", default="totals", help="routing key of the totals")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="first publish N sample orders"
    )
    parser.add_argument("--stream", action="store_true", help="read the queue as a stream")
    parser.add_argument(
        "--checkpoint",
        default="spark-orders-checkpoint",
        help="checkpoint directory of the streaming run (local to the driver)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="with --stream: keep running, a micro-batch every 5 seconds, until interrupted",
    )
    return parser.parse_args(argv)


def declare(url: str, queue: str, exchange: str, routing_key: str) -> None:
    """The queue the orders wait on, the results exchange, and a `<exchange>.<key>` queue bound
    to it, so the totals have somewhere to go when nothing else is bound yet."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = conn.channel()
        channel.queue_declare(queue, durable=True)
        channel.exchange_declare(exchange, "direct", durable=True)
        results = f"{exchange}.{routing_key}"
        channel.queue_declare(results, durable=True)
        channel.queue_bind(results, exchange, routing_key)
    finally:
        conn.close()


def seed(url: str, queue: str, count: int) -> None:
    """Sample orders: customer i % 3 buys for (i + 1) * 2.50."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = conn.channel()
        for i in range(count):
            order = {"customer": CUSTOMERS[i % len(CUSTOMERS)], "amount": f"{(i + 1) * 2.5:.2f}"}
            props = pika.BasicProperties(content_type="application/json", delivery_mode=2)
            channel.basic_publish("", queue, json.dumps(order).encode(), props)
    finally:
        conn.close()


def parsed(orders: DataFrame) -> DataFrame:
    """Messages (the amqp schema) to (customer, amount); a message that is not an order (no
    customer) is left out."""
    rows = orders.select(F.from_json(F.col("body").cast("string"), ORDER).alias("o"))
    return rows.where(F.col("o.customer").isNotNull()).select("o.customer", "o.amount")


def as_messages(per_customer: DataFrame) -> DataFrame:
    """(customer, orders, total) rows to JSON bodies for the sink."""
    return per_customer.select(
        F.to_json(F.struct("customer", "orders", "total")).alias("body"),
        F.lit("application/json").alias("content_type"),
    )


def totals(orders: DataFrame) -> DataFrame:
    """One JSON body per customer; decimal amounts keep the sums exact."""
    per_customer = (
        parsed(orders)
        .groupBy("customer")
        .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").alias("total"))
    )
    return as_messages(per_customer)


def running_totals(key: tuple[str], batches: Iterator[Any], state: Any) -> Iterator[Any]:
    """One customer's orders of a micro-batch, added to the totals kept in the query's state;
    emits the new totals."""
    import pandas as pd

    count, total = state.get if state.exists else (0, decimal.Decimal(0))
    for batch in batches:
        count += len(batch)
        total += sum(batch["amount"], decimal.Decimal(0))
    state.update((count, total))
    yield pd.DataFrame({"customer": [key[0]], "orders": [count], "total": [total]})


def streaming_totals(orders: DataFrame) -> DataFrame:
    """Running totals per customer for a stream: per-customer state, so each micro-batch emits
    (in append mode, which the amqp sink takes) the totals of the customers it saw."""
    per_customer = (
        parsed(orders)
        .groupBy("customer")
        .applyInPandasWithState(
            running_totals,
            outputStructType=TOTAL,
            stateStructType="orders long, total decimal(22,2)",
            outputMode="append",
            timeoutConf="NoTimeout",
        )
    )
    return as_messages(per_customer)


def run_batch(spark: SparkSession, args: argparse.Namespace) -> int:
    """Drain the queue, publish the totals; returns how many messages were read. The drained
    rows are checkpointed at once: every rerun of a drain read would consume further."""
    orders = (
        spark.read.format("amqp")
        .option("url", args.url)
        .option("queue", args.queue)
        .option("mode", "drain")
        .load()
        .localCheckpoint()
    )
    count = orders.count()
    writer = totals(orders).write.format("amqp").option("url", args.url)
    writer.option("exchange", args.exchange).option("routingKey", args.routing_key).mode(
        "append"
    ).save()
    return count


def run_stream(spark: SparkSession, args: argparse.Namespace) -> int:
    """Running totals: the per-customer state lives in the checkpoint, so a second run goes on
    from the first's totals; returns how many messages this run read."""
    orders = (
        spark.readStream.format("amqp")
        .option("url", args.url)
        .option("queue", args.queue)
        # Only brokers without prepared transactions (RabbitMQ) need it on the reader, for its
        # write-ahead log; on rabbitish the writeStream's checkpoint is all a query needs.
        .option("checkpointLocation", args.checkpoint)
        .load()
    )
    writer = (
        streaming_totals(orders)
        .writeStream.format("amqp")
        .option("url", args.url)
        .option("exchange", args.exchange)
        .option("routingKey", args.routing_key)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.follow:
        query = writer.trigger(processingTime="5 seconds").start()
    else:
        query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def main(argv: Sequence[str] | None = None) -> int:
    """Run as a script or through spark-submit; the session is the one spark-submit configured
    (local[*] when run with plain python)."""
    args = parse_args(argv)
    spark: Any = SparkSession.builder.appName("spark_orders").getOrCreate()
    spark.dataSource.register(AmqpDataSource)
    declare(args.url, args.queue, args.exchange, args.routing_key)
    if args.seed:
        seed(args.url, args.queue, args.seed)
    count = run_stream(spark, args) if args.stream else run_batch(spark, args)
    print(f"{count} orders read; totals published to {args.exchange!r} ({args.routing_key!r})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
