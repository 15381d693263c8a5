"""Streaming writes: exact counts through a task retry, and a query restarted from its
checkpoint that reruns a batch the sink had already committed publishes it no second time, and
what a dead run left held under the restarted run's IDs never becomes visible."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from rabbitish.spark.stream_writer import batch_txn_id, marker_queue
from rabbitish.testing import call_in_loop
from rabbitish.wire_names import HALF_HEADER
from tests.support.clients import bodies, pika_channel

pytestmark = pytest.mark.spark

ROWS_PER_FILE = 10
STAMP = time.time() - 3600


def _files(directory: Path, first: int, last: int) -> None:
    """JSON files first..last-1 of ROWS_PER_FILE numbers each; file i holds i*10 .. i*10+9 and
    is dated i seconds after STAMP: the file source takes them oldest first, so batch i reads
    file i."""
    for i in range(first, last):
        lines = "".join(f'{{"n": {i * ROWS_PER_FILE + j}}}\n' for j in range(ROWS_PER_FILE))
        path = directory / f"{i:03}.json"
        path.write_text(lines)
        os.utime(path, (STAMP + i, STAMP + i))


def _expected(first: int, last: int) -> list[bytes]:
    return sorted(f"m{n}".encode() for n in range(first * ROWS_PER_FILE, last * ROWS_PER_FILE))


def _run(spark: Any, source: Path, checkpoint: Path, url: str, queue: str) -> Any:
    """One run of the query until every file is processed: one file per micro-batch, two
    partitions each; the row n=15 fails the first attempt of its task."""

    @F.udf(StringType())
    def flaky(n):
        if n == 15 and TaskContext.get().attemptNumber() == 0:
            raise RuntimeError("forced failure on the first attempt")
        return f"m{n}"

    stream = (
        spark.readStream.format("json")
        .schema("n long")
        .option("maxFilesPerTrigger", 1)
        .load(str(source))
        .repartition(2)
        .select(flaky("n").alias("body"))
    )
    query = (
        stream.writeStream.format("amqp")
        .option("url", url)
        .option("routingKey", queue)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return query


def _held(broker: Any, prefix: str) -> list[str]:
    views = call_in_loop(broker, lambda: broker.node.vhosts["/"].half.list())
    return [v.id for v in views if v.id.startswith(prefix)]


def _marker(url: str, query_id: str) -> list[bytes]:
    with pika_channel(url) as ch:
        got = []
        while (message := ch.basic_get(marker_queue(query_id), auto_ack=False))[0] is not None:
            got.append(message[2])
        return got


def test_a_restarted_query_publishes_no_batch_twice(spark, amqp_url, request, uid, tmp_path):
    """On rabbitish through the batch marker; on RabbitMQ (per-task tx, no marker) the rerun
    batch is published again, as docs/spark.md says."""
    rabbitish = amqp_url == request.getfixturevalue("broker_url")
    with pika_channel(amqp_url) as ch:
        ch.queue_declare(uid, durable=True)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    _files(source, 0, 3)
    first = _run(spark, source, checkpoint, amqp_url, uid)
    with pika_channel(amqp_url) as ch:
        assert sorted(bodies(ch, uid)) == _expected(0, 3)
    if rabbitish:
        assert _marker(amqp_url, first.id) == [b"2"]

    # Spark loses its record of batch 2, as when the driver dies after the sink's commit but
    # before the commit log write: the restarted query runs batch 2 again, then batch 3.
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink()
    _files(source, 3, 4)
    if rabbitish:
        # A dead run that got as far as batch 3 left a row held under the ID the new run's
        # first attempt of batch 3 partition 0 uses: the task clears it before publishing.
        with pika_channel(amqp_url) as ch:
            ch.tx_select()
            headers = {HALF_HEADER: batch_txn_id(first.id, 3, 0, 0)}
            props = pika.BasicProperties(headers=headers, delivery_mode=2)
            ch.basic_publish("", uid, b"left by a dead run", props)
            ch.tx_commit()
    second = _run(spark, source, checkpoint, amqp_url, uid)
    assert second.id == first.id and second.runId != first.runId
    assert [p["batchId"] for p in second.recentProgress] == [2, 3]
    with pika_channel(amqp_url) as ch:
        assert sorted(bodies(ch, uid)) == _expected(3 if rabbitish else 2, 4)
    if rabbitish:
        assert _marker(amqp_url, first.id) == [b"3"]
        broker = request.getfixturevalue("rabbitish_broker")
        assert _held(broker, f"spark-{first.id}") == []
