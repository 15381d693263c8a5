"""Batch reads: the schema a message becomes, browse leaving the queue as it was, drain
consuming exactly maxMessages; options refused on the driver."""

from __future__ import annotations

import decimal
from typing import Any

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from rabbitish.spark import SCHEMA, AmqpOptions
from rabbitish.spark.options import AmqpOptionError
from tests.support.clients import pika_channel

pytestmark = pytest.mark.spark

STAMP = 1_700_000_000


def _fill(url: str, queue: str, count: int) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, durable=True)
        for i in range(count):
            props = pika.BasicProperties(
                headers={"n": i, "ok": True, "raw": b"bytes", "price": decimal.Decimal("1.5")},
                content_type="text/plain",
                message_id=f"id-{i}",
                correlation_id=f"c-{i}",
                timestamp=STAMP + i,
                delivery_mode=2,
                priority=i % 3,
            )
            ch.basic_publish("", queue, f"m{i}".encode(), props)


def _ready(url: str, queue: str) -> list[bytes]:
    """The queue's ready bodies in order, left in place (get, then close unacked)."""
    with pika_channel(url) as ch:
        out = []
        while (got := ch.basic_get(queue, auto_ack=False))[0] is not None:
            out.append(got[2])
        return out


def _read(spark: Any, url: str, queue: str, **options: str) -> list[Any]:
    reader = spark.read.format("amqp").option("url", url).option("queue", queue)
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load()
    assert df.schema == SCHEMA
    return df.collect()


def test_browse_reads_every_column_and_leaves_the_queue_as_it_was(spark, broker_url, uid):
    _fill(broker_url, uid, 5)
    rows = _read(spark, broker_url, uid)
    assert [r.body for r in rows] == [f"m{i}".encode() for i in range(5)]
    first = rows[0].asDict()
    assert first == {
        "body": b"m0",
        "routing_key": uid,
        "exchange": "",
        "headers": {"n": "0", "ok": "true", "raw": "bytes", "price": "1.5"},
        "content_type": "text/plain",
        "message_id": "id-0",
        "correlation_id": "c-0",
        "timestamp": first["timestamp"],
        "delivery_mode": 2,
        "priority": 0,
        "redelivered": False,
    }
    # Spark hands timestamps to Python as naive local times; .timestamp() reads them as such.
    assert first["timestamp"].timestamp() == STAMP
    assert [r.priority for r in rows] == [0, 1, 2, 0, 1]
    # Browsing again sees the same messages in the same order (now flagged redelivered).
    again = _read(spark, broker_url, uid, maxMessages="2")
    assert [(r.body, r.redelivered) for r in again] == [(b"m0", True), (b"m1", True)]
    assert _ready(broker_url, uid) == [f"m{i}".encode() for i in range(5)]


def test_drain_consumes_up_to_max_messages_and_commits_the_acks(spark, broker_url, uid):
    _fill(broker_url, uid, 5)
    rows = _read(spark, broker_url, uid, mode="drain", maxMessages="3")
    assert [r.body for r in rows] == [b"m0", b"m1", b"m2"]
    assert _ready(broker_url, uid) == [b"m3", b"m4"]
    rest = _read(spark, broker_url, uid, mode="DRAIN")
    assert [r.body for r in rest] == [b"m3", b"m4"]
    assert _ready(broker_url, uid) == []
    assert _read(spark, broker_url, uid, mode="drain") == []


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"mode": "peek"}, "mode must be one of browse, drain, got 'peek'"),
        ({"maxMessages": "0"}, "maxMessages must be at least 1, got 0"),
        ({"maxMessages": "ten"}, "maxMessages must be a whole number, got 'ten'"),
        ({"routing_key": "x"}, "unknown amqp option(s): routing_key"),
        ({"maxRows": "0"}, "maxRows must be at least 1, got 0"),
        ({"maxBytes": "1k"}, "maxBytes must be a whole number, got '1k'"),
        ({"prefetch": "-5"}, "prefetch must be at least 1, got -5"),
        ({"prefetch": "65536"}, "prefetch must be at most 65535 (basic.qos's limit), got 65536"),
    ],
)
def test_options_are_checked_before_any_task_runs(options, error):
    with pytest.raises(AmqpOptionError) as info:
        AmqpOptions.parse(options)
    assert str(info.value) == error


def test_a_read_without_a_queue_fails_on_the_driver(spark, broker_url):
    with pytest.raises(Exception, match="reading needs the option queue"):
        spark.read.format("amqp").option("url", broker_url).load().collect()


def test_a_stream_read_needs_a_checkpoint_location():
    with pytest.raises(
        AmqpOptionError, match="a streaming read needs the option checkpointLocation"
    ):
        AmqpOptions.parse({"queue": "q"}).require_checkpoint()
    parsed = AmqpOptions.parse({"queue": "q", "checkpointLocation": "file:///tmp/ck"})
    assert parsed.require_checkpoint() == "/tmp/ck"
    assert (parsed.prefetch, parsed.max_rows, parsed.max_bytes) == (10_000, None, None)


def test_options_are_case_insensitive_with_defaults():
    parsed = AmqpOptions.parse({"URL": "amqp://h", "RoutingKey": "k", "maxmessages": "7"})
    assert parsed == AmqpOptions(url="amqp://h", routing_key="k", max_messages=7)
    assert AmqpOptions.parse({"path": "q"}).queue == "q"
