"""Batch writes: every column round trips, counts are exact, a task retried after a failure
publishes nothing twice, and a job that fails for good leaves nothing visible on rabbitish."""

from __future__ import annotations

import base64
import datetime as dt
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from rabbitish.spark import SCHEMA
from rabbitish.testing import call_in_loop, enable_management, management_url
from tests.support.clients import bodies, pika_channel
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark


def _queue(url: str, queue: str) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, durable=True)


def _write(df: Any, url: str, **options: str) -> None:
    writer = df.write.format("amqp").option("url", url).mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def _drained(url: str, queue: str) -> list[bytes]:
    with pika_channel(url) as ch:
        return bodies(ch, queue)


def _held(broker: Any, queue: str) -> list[str]:
    """IDs of undecided half transactions holding messages on `queue`."""
    views = call_in_loop(broker, lambda: broker.node.vhosts["/"].half.list())
    return [v.id for v in views if queue in v.queues]


def _numbers(spark: Any, count: int, partitions: int) -> Any:
    return spark.range(count).repartition(partitions).select(F.col("id").alias("n"))


def test_every_column_round_trips_through_a_queue(spark, broker_url, uid):
    _queue(broker_url, uid)
    stamp = dt.datetime(2024, 5, 6, 7, 8, 9)
    rows = [
        (
            f"b{i}".encode(),
            uid,
            "",
            {"k": f"v{i}"},
            "text/plain",
            f"i{i}",
            f"c{i}",
            stamp,
            2,
            i,
            False,
        )
        for i in range(3)
    ]
    df = spark.createDataFrame(rows, SCHEMA).coalesce(1)
    _write(df, broker_url)
    back = spark.read.format("amqp").option("url", broker_url).option("queue", uid).load()
    got = [r.asDict() for r in back.collect()]
    for row in got:
        held = row["headers"].pop("x-half-txn")  # committed half messages keep their ID
        assert held.startswith("spark-")
    assert got == [dict(zip(SCHEMA.fieldNames(), row, strict=True)) for row in rows]


def test_string_bodies_and_the_routing_key_option_with_exact_counts(spark, broker_url, uid):
    _queue(broker_url, uid)
    df = _numbers(spark, 1000, 4).select(F.format_string("m%d", "n").alias("body"))
    _write(df, broker_url, routingKey=uid)
    got = _drained(broker_url, uid)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(1000))


def test_a_task_that_fails_once_is_retried_without_duplicates(
    spark, amqp_url, request, uid, tmp_path
):
    """On rabbitish through half transactions, on RabbitMQ through the per-task tx alone."""
    _queue(amqp_url, uid)
    marks = str(tmp_path)  # the tasks run on this machine: they leave marks the test reads

    @F.udf(StringType())
    def flaky(n):
        # Each partition holds about half of 0..399 sorted: n >= 380 comes after ~190 rows
        # the first attempt has already published in its (never committed) tx.
        context = TaskContext.get()
        if n >= 380 and context.attemptNumber() == 0:
            Path(marks, f"failed-{context.partitionId()}").write_text(str(n))
            raise RuntimeError("forced failure on the first attempt")
        if context.attemptNumber() > 0:
            Path(marks, f"retried-{context.partitionId()}").touch()
        return f"m{n}"

    df = _numbers(spark, 400, 2).sortWithinPartitions("n").select(flaky("n").alias("body"))
    _write(df, amqp_url, routingKey=uid)
    got = _drained(amqp_url, uid)
    assert len(got) == 400
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(400))
    # The forced failure did happen, in both partitions, after the rows before it...
    failed = {p.name: int(p.read_text()) for p in tmp_path.glob("failed-*")}
    assert sorted(failed) == ["failed-0", "failed-1"]
    assert all(380 <= n < 400 for n in failed.values())
    # ...and each failed partition was written again by a later attempt.
    assert sorted(p.name for p in tmp_path.glob("retried-*")) == ["retried-0", "retried-1"]
    if amqp_url == request.getfixturevalue("broker_url"):
        assert _held(request.getfixturevalue("rabbitish_broker"), uid) == []


def test_a_job_that_fails_for_good_leaves_nothing_visible(spark, broker_url, rabbitish_broker, uid):
    """Partition 1 fails on every attempt, but only once partition 0 has committed its half
    tx: the driver's abort() must roll that back."""
    _queue(broker_url, uid)
    enable_management(rabbitish_broker)
    api = management_url(rabbitish_broker)

    @F.udf(StringType())
    def doomed(n):
        if TaskContext.get().partitionId() == 1:
            wait_until(lambda: _api_held(api, uid), timeout=60, message="partition 0 held nothing")
            raise RuntimeError("forced failure on every attempt")
        return f"m{n}"

    df = spark.range(0, 200, numPartitions=2).select(doomed("id").alias("body"))
    with pytest.raises(Exception, match="forced failure on every attempt"):
        _write(df, broker_url, routingKey=uid)
    assert _held(rabbitish_broker, uid) == []
    assert _drained(broker_url, uid) == []


def _api_held(api: str, queue: str) -> bool:
    """Whether the management API lists a half transaction holding messages on `queue`."""
    credentials, host = api.split("://", 1)[1].rsplit("@", 1)
    request = urllib.request.Request(
        f"http://{host}/api/half-transactions",
        headers={"Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()},
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        return any(queue in txn["queues"] for txn in json.load(reply))


def test_unknown_columns_and_a_missing_body_are_refused_before_publishing(spark, broker_url):
    with pytest.raises(Exception, match="unknown: colour"):
        _write(spark.createDataFrame([("x", "red")], "body string, colour string"), broker_url)
    with pytest.raises(Exception, match="needs a body column"):
        _write(spark.createDataFrame([("k",)], "routing_key string"), broker_url)
