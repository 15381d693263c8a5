"""Streaming reads: exact counts through a task retry and within the read limits, and a driver
killed (-9) in the middle of a stream whose restart from the checkpoint delivers every message
exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from rabbitish.spark.broker import session
from rabbitish.spark.stream_prepared import txn_name
from tests.spark.conftest import ROOT
from tests.spark.stream_job import streamed
from tests.support.clients import bodies, pika_channel
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark


def _fill(url: str, queue: str, count: int, size: int = 0) -> list[bytes]:
    sent = [f"m{i:04}".encode().ljust(size, b".") for i in range(count)]
    with pika_channel(url) as ch:
        ch.queue_declare(queue, durable=True)
        for body in sent:
            ch.basic_publish("", queue, body)
    return sent


def _available_now(spark: Any, df: Any, name: str, checkpoint: Path) -> tuple[list[bytes], Any]:
    """Run `df` to the end of what the queue holds into a memory table: (bodies, query)."""
    query = (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [r.body for r in spark.table(name).collect()], query


def _source(spark: Any, url: str, queue: str, checkpoint: Path, **options: str) -> Any:
    reader = spark.readStream.format("amqp").option("url", url).option("queue", queue)
    for key, value in {"checkpointLocation": str(checkpoint), **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def _batch_sizes(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_exact_counts_with_a_task_that_fails_once(spark, amqp_url, uid, tmp_path):
    sent = _fill(amqp_url, uid, 250)

    @F.udf(BinaryType())
    def flaky(body):
        if body == b"m0117" and TaskContext.get().attemptNumber() == 0:
            raise RuntimeError("forced failure on the first attempt")
        return bytes(body)

    df = _source(spark, amqp_url, uid, tmp_path, maxRows="100").select(flaky("body").alias("body"))
    got, query = _available_now(spark, df, f"t{uid}".replace("-", "_"), tmp_path)
    assert sorted(got) == sent
    assert _batch_sizes(query) == [100, 100, 50]
    with pika_channel(amqp_url) as ch:
        assert bodies(ch, uid) == []  # every message acked once its batch was committed


def test_max_bytes_bounds_each_batch(spark, broker_url, uid, tmp_path):
    sent = _fill(broker_url, uid, 10, size=100)
    df = _source(spark, broker_url, uid, tmp_path, maxBytes="350").select("body")
    got, query = _available_now(spark, df, f"b{uid}".replace("-", "_"), tmp_path)
    assert sorted(got) == sent
    assert _batch_sizes(query) == [3, 3, 3, 1]


def _source_checkpoint(url: str, checkpoint: Path) -> str | None:
    """The standard idiom (checkpointLocation on writeStream only) where the broker prepares
    batches; the source's own option, for its write-ahead log, where it does not."""
    with session(url, tx=False) as amqp:
        return None if amqp.half else str(checkpoint)


@pytest.mark.timeout(300)  # two Spark drivers start, one in a process of its own
def test_a_driver_killed_mid_stream_restarts_without_loss_or_duplicates(
    spark, amqp_url, broker_url, uid, tmp_path
):
    """The driver, its JVM and its Python workers die at once (SIGKILL to the process group)
    while batches of 25 flow from one queue to another; the restarted query (here, in the
    test's own session) finishes the stream from the checkpoint. Read from rabbitish, the
    query is written as Spark users write one (batches are prepared transactions); read from
    RabbitMQ, the source keeps its write-ahead log under the checkpoint. The sink is
    rabbitish's either way (exactly once by batch id)."""
    source_url = amqp_url
    source, target, checkpoint = f"{uid}-in", f"{uid}-out", tmp_path / "checkpoint"
    source_checkpoint = _source_checkpoint(source_url, checkpoint)
    sent = _fill(source_url, source, 150)
    with pika_channel(broker_url) as ch:
        ch.queue_declare(target, durable=True)

    def delivered() -> int:
        with pika_channel(broker_url) as ch:
            return ch.queue_declare(target, passive=True).method.message_count

    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    args = [sys.executable, "-m", "tests.spark.stream_job", source_url, source, target]
    driver = subprocess.Popen(
        [*args, str(checkpoint), "no" if source_checkpoint is None else "yes", broker_url],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: delivered() >= 50, timeout=240, message="the stream never started")
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    assert delivered() < len(sent), "the stream ended before the kill"

    query = (
        streamed(spark, source_url, source, source_checkpoint)
        .writeStream.format("amqp")
        .option("url", broker_url)
        .option("routingKey", target)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    with pika_channel(broker_url) as ch:
        got = bodies(ch, target)
    with pika_channel(source_url) as ch:
        assert bodies(ch, source) == []
    assert sorted(got) == sent
    if source_checkpoint is None:
        assert not (checkpoint / "amqp-source").exists()  # no side log


def test_a_stopped_query_restarted_reads_nothing_twice(spark, broker_url, uid, tmp_path):
    """A query stopped once its rows are out (whether or not the acks of its last batch went
    out before the stop) and started again on its checkpoint: nothing is read again, and
    messages published meanwhile are read once."""
    source, target, checkpoint = f"{uid}-in", f"{uid}-out", tmp_path / "checkpoint"
    sent = _fill(broker_url, source, 30)
    with pika_channel(broker_url) as ch:
        ch.queue_declare(target, durable=True)

    def start(available_now: bool) -> Any:
        writer = (
            streamed(spark, broker_url, source, None)
            .writeStream.format("amqp")
            .option("url", broker_url)
            .option("routingKey", target)
            .option("checkpointLocation", str(checkpoint))
        )
        return (writer.trigger(availableNow=True) if available_now else writer).start()

    def depth(queue: str) -> int:
        with pika_channel(broker_url) as ch:
            return ch.queue_declare(queue, passive=True).method.message_count

    running = start(available_now=False)
    try:
        wait_until(lambda: depth(target) == len(sent), timeout=90, message="rows never arrived")
    finally:
        running.stop()
    with pika_channel(broker_url) as ch:
        for i in range(30, 35):
            ch.basic_publish("", source, f"m{i:04}".encode())
    start(available_now=True).awaitTermination()
    with pika_channel(broker_url) as ch:
        got = bodies(ch, target)
        assert bodies(ch, source) == []
    assert sorted(got) == [*sent, *(f"m{i:04}".encode() for i in range(30, 35))]


def test_batches_left_prepared_are_read_again_by_name(spark, broker_url, uid, tmp_path):
    """rabbitish, the standard idiom, and the two states a dead driver can leave, made by hand
    under the names that driver would have used: a batch in Spark's offset log but not its
    commit log, whose prepared transaction the restarted query reads back by name; and a batch
    prepared but never recorded by Spark, which the restarted query adopts whole. Every message
    reaches the target once, and nothing stays prepared."""
    source, target, checkpoint = f"{uid}-in", f"{uid}-out", tmp_path / "checkpoint"
    sent = _fill(broker_url, source, 30)
    with pika_channel(broker_url) as ch:
        ch.queue_declare(target, durable=True)

    def run() -> list[int]:
        query = (
            streamed(spark, broker_url, source, None)
            .writeStream.format("amqp")
            .option("url", broker_url)
            .option("routingKey", target)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return _batch_sizes(query)

    def prepare_by_hand(count: int, name: str) -> list[bytes]:
        """Publish `count` + 3 messages, ack the first `count` into prepared `name`."""
        start = len(sent) + len(later)
        bodies_ = [f"m{i:04}".encode() for i in range(start, start + count + 3)]
        with pika_channel(broker_url) as ch:
            # The last run's consumer closes as its query ends, not before awaitTermination.
            wait_until(
                lambda: ch.queue_declare(source, passive=True).method.consumer_count == 0,
                timeout=30,
                message="the last run's consumer never went",
            )
            for body in bodies_:
                ch.basic_publish("", source, body)
            ch.tx_select()
            tags = [ch.basic_get(source)[0].delivery_tag for _ in range(count)]
            ch.basic_ack(tags[-1], multiple=True)
            ch.basic_publish("amq.rabbitish.txn", "prepare", b"", _txn(name))
            ch.tx_commit()
        return bodies_

    later: list[bytes] = []
    assert run() == [25, 5]
    last = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    version, metadata, line = (checkpoint / "offsets" / str(last)).read_text().splitlines()
    offset = json.loads(line)
    reader, end = offset["reader"], offset["seq"]
    assert offset["txn"] == txn_name(reader, end - 5)

    # Planned and recorded by Spark (offset log), not committed: replayed, read back by name.
    later += prepare_by_hand(5, txn_name(reader, end))
    replayed = {"seq": end + 5, "reader": reader, "txn": txn_name(reader, end)}
    (checkpoint / "offsets" / str(last + 1)).write_text(
        "\n".join([version, metadata, json.dumps(replayed)])
    )
    assert run() == [5, 3]

    # Prepared by a run that died before Spark recorded it: adopted as it was.
    later += prepare_by_hand(4, txn_name(reader, end + 8))
    assert run() == [4, 3]
    with pika_channel(broker_url) as ch:
        got = bodies(ch, target)
        assert bodies(ch, source) == []
    assert sorted(got) == [*sent, *later]


def _txn(name: str) -> Any:
    return pika.BasicProperties(headers={"x-half-txn": name})


@pytest.mark.rabbitmq
def test_without_prepared_transactions_the_reader_still_needs_its_checkpoint(
    spark, rabbitmq_url, uid, tmp_path
):
    """RabbitMQ announces no prepared transactions: the write-ahead log stays, and so does the
    option it needs, with the same error when it is missing."""
    _fill(rabbitmq_url, uid, 1)
    writer = (
        spark.readStream.format("amqp")
        .option("url", rabbitmq_url)
        .option("queue", uid)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
    )
    with pytest.raises(Exception, match="a streaming read needs the option checkpointLocation"):
        writer.start().awaitTermination()
