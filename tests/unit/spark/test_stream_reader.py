"""The stream reader's driver side on rabbitish, called as PySpark's streaming-source runner
calls it, without a Spark session: once Spark has planned the empty batch that names a new
query, the reader's thread prepares the first batch, a prepared transaction of at most
`prefetch` messages at a time, and the next latestOffset hands them all out as one batch whose
offset names each of them (committed together); what is prepared ahead and never handed out
is rolled back when the reader's stop() runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

from pyspark.sql.streaming.datasource import ReadAllAvailable

from rabbitish.spark.amqp_client import Connection
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import SCHEMA
from rabbitish.spark.stream_prepared import BatchReader, txn_name
from rabbitish.spark.stream_reader import AmqpStreamReader
from tests.support.clients import pika_channel
from tests.support.waiting import wait_until

SENT = [f"m{i:02}".encode() for i in range(25)]


@pytest.fixture
def queue(broker_url: str, uid: str) -> str:
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
        for body in SENT:
            ch.basic_publish("", uid, body)
    return uid


@pytest.fixture
def names(broker_url: str) -> Iterator[BatchReader]:
    """Reads prepared transactions by name, to see what the reader prepared."""
    connection = Connection(broker_url, heartbeat=0)
    try:
        yield BatchReader(connection)
    finally:
        connection.close()


def _named_query(broker_url: str, queue: str) -> tuple[AmqpStreamReader, dict[str, Any]]:
    """A new query's reader (prefetch 10, Trigger.AvailableNow) once Spark has planned the
    batch naming it: (reader, that batch's end offset)."""
    options = AmqpOptions.parse({"url": broker_url, "queue": queue, "prefetch": "10"})
    reader = AmqpStreamReader(options, SCHEMA)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    named = reader.latestOffset(start, ReadAllAvailable())
    assert "reader" in named
    assert reader.partitions(start, named) == []
    return reader, named


def _depth(url: str, queue: str) -> int:
    with pika_channel(url) as ch:
        return ch.queue_declare(queue, passive=True).method.message_count


def test_the_first_batch_is_prepared_ahead_in_transactions_of_prefetch_messages(
    broker_url, queue, names
):
    reader, named = _named_query(broker_url, queue)
    try:
        query = named["reader"]
        wait_until(lambda: names.read(txn_name(query, 20)), timeout=30)
        end = reader.latestOffset(named, ReadAllAvailable())
        assert end["seq"] == 25
        assert end["txn"] == [txn_name(query, 0), txn_name(query, 10), txn_name(query, 20)]
        (partition,) = reader.partitions(named, end)
        got = [b for batch in reader.read(partition) for b in batch.column("body").to_pylist()]
        assert got == SENT
        # The target is reached: nothing more, and the batch Spark is done with is committed.
        assert reader.latestOffset(end, ReadAllAvailable()) == end
    finally:
        reader.stop()
    for first in (0, 10, 20):
        assert names.read(txn_name(query, first)) is None
    assert _depth(broker_url, queue) == 0


def test_what_was_prepared_ahead_and_never_handed_out_is_rolled_back_by_stop(
    broker_url, queue, names
):
    reader, named = _named_query(broker_url, queue)
    query = named["reader"]
    try:
        wait_until(lambda: names.read(txn_name(query, 20)), timeout=30)
    finally:
        reader.stop()
    for first in (0, 10, 20):
        assert names.read(txn_name(query, first)) is None
    wait_until(lambda: _depth(broker_url, queue) == len(SENT), timeout=10)
