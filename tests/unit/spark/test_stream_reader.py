"""The stream reader's driver side on rabbitish, called as PySpark's streaming-source runner
calls it, without a Spark session: once Spark has planned the empty batch that names a new
query, the reader's thread prepares the first batch, a prepared transaction of at most
`prefetch` messages at a time, and the next latestOffset hands them all out as one batch whose
offset names each of them (committed together); what is prepared ahead and never handed out
is rolled back when the reader's stop() runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pika
import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from rabbitish.spark.amqp_client import Connection
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import SCHEMA, load_arrow
from rabbitish.spark.stream_prepared import BatchReader, txn_name, txn_names
from rabbitish.spark.stream_reader import AmqpStreamReader
from rabbitish.store import ops
from rabbitish.testing import call_in_loop, running_broker
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


def test_no_offset_names_a_prepare_before_the_broker_has_it_on_disk(tmp_path, uid):
    """The reader's thread sends a prepare without waiting for its commit-ok; Spark's next call
    waits for it. Here the store's writer is held: the prepare is in the broker's memory, not
    on disk, and latestOffset returns only once the writer goes on."""
    # What building the batch's Arrow rows first imports, imported now: the reader's thread is
    # then idle within milliseconds of the prepare, free to answer latestOffset.
    pytest.importorskip("pyarrow")
    load_arrow()
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        with pika_channel(broker.url) as ch:
            ch.queue_declare(uid, durable=True)
            ch.confirm_delivery()
            for body in SENT:
                ch.basic_publish("", uid, body, pika.BasicProperties(delivery_mode=2))
        writer = broker.journal.writer
        half = broker.node.vhosts["/"].half
        gate, held = threading.Event(), threading.Event()

        def hold() -> None:
            held.set()
            gate.wait(30)

        # One prepare takes every message: the thread is then idle, free to answer Spark.
        options = AmqpOptions.parse({"url": broker.url, "queue": uid, "prefetch": "25"})
        reader = AmqpStreamReader(options, SCHEMA)
        found: list[dict[str, Any]] = []
        caller = threading.Thread(
            target=lambda: found.append(reader.latestOffset(named, ReadAllAvailable()))
        )
        writer.before_write = hold
        try:
            start = reader.initialOffset()
            # Consuming: the deliveries' marks go to the writer thread, which stops there; a
            # prepare's batch waits behind it.
            reader.prepareForTriggerAvailableNow()
            assert held.wait(10)
            named = reader.latestOffset(start, ReadAllAvailable())
            assert reader.partitions(start, named) == []  # the thread starts preparing
            first = txn_name(named["reader"], 0)
            wait_until(lambda: call_in_loop(broker, lambda: first in half.txns), timeout=10)
            caller.start()
            caller.join(0.3)
            assert caller.is_alive() and not found  # the prepare is not on disk yet
        finally:
            writer.before_write = None
            gate.set()
            if caller.ident is not None:
                caller.join(10)
            reader.stop()
        assert found and txn_names(found[0]["txn"])[0] == first


def test_partitions_of_a_batch_on_disk_answer_while_the_next_prepare_is_in_flight(
    tmp_path, uid, monkeypatch
):
    """Only latestOffset waits for the prepare in flight: a batch it handed out is on disk, so
    Spark's partitions call for it answers while the store holds back the write of the
    thread's next prepare."""
    pytest.importorskip("pyarrow")
    load_arrow()
    gate, held = threading.Event(), threading.Event()
    held_txn: list[str] = []
    write_batch = ops.write_batch

    def holding(db: Any, batch: list[ops.Op]) -> set[int]:
        locked = {row[1] for op in batch if isinstance(op, ops.LockSettlements) for row in op.rows}
        if held_txn and held_txn[0] in locked:
            held.set()
            gate.wait(30)
        return write_batch(db, batch)

    monkeypatch.setattr(ops, "write_batch", holding)
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        with pika_channel(broker.url) as ch:
            ch.queue_declare(uid, durable=True)
            ch.confirm_delivery()
            for body in SENT[:20]:
                ch.basic_publish("", uid, body, pika.BasicProperties(delivery_mode=2))
        # A batch is one transaction of 10: one batch is prepared ahead, no more.
        settings = {"url": broker.url, "queue": uid, "prefetch": "10", "maxRows": "10"}
        reader = AmqpStreamReader(AmqpOptions.parse(settings), SCHEMA)
        answered: list[Any] = []
        caller: threading.Thread | None = None
        try:
            start = reader.initialOffset()
            reader.prepareForTriggerAvailableNow()
            named = reader.latestOffset(start, ReadMaxRows(10))
            first, second = txn_name(named["reader"], 0), txn_name(named["reader"], 10)
            held_txn.append(second)
            assert reader.partitions(start, named) == []  # the thread prepares the first 10
            end = reader.latestOffset(named, ReadMaxRows(10))
            assert txn_names(end["txn"]) == [first]
            # Handed out: the thread prepares the next 10, whose write the store holds.
            assert held.wait(10)
            caller = threading.Thread(target=lambda: answered.append(reader.partitions(named, end)))
            caller.start()
            caller.join(5)
            assert answered, "partitions waited for the prepare in flight"
            (partition,) = answered[0]
            got = [b for batch in reader.read(partition) for b in batch.column("body").to_pylist()]
            assert got == SENT[:10]
        finally:
            gate.set()
            if caller is not None:
                caller.join(10)
            reader.stop()
