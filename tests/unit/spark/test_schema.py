"""Record batches of the write schema become messages as the sink documents: options over
columns, defaults for missing columns and nulls, reserved headers dropped, the half header
added, timestamps truncated to whole seconds; a batch with only bodies shares one encoding."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

import pika
import pyarrow as pa

from rabbitish.spark.schema import SCHEMA, arrow_schema, batch_messages


def _decoded(encoded: bytes) -> pika.BasicProperties:
    props = pika.BasicProperties()
    props.decode(encoded)
    return props


def test_a_batch_of_bodies_shares_one_property_list():
    batch = pa.RecordBatch.from_pydict({"body": pa.array(["a", "bc", None], pa.string())})
    messages = list(batch_messages(batch, None, "q", "spark-1"))
    assert [(m[0], m[1], m[3]) for m in messages] == [
        ("", "q", b"a"),
        ("", "q", b"bc"),
        ("", "q", b""),
    ]
    assert len({id(m[2]) for m in messages}) == 1
    props = _decoded(messages[0][2])
    assert props.headers == {"x-half-txn": "spark-1"}
    assert props.delivery_mode == 2


def test_columns_become_properties_row_by_row():
    utc = dt.UTC
    batch = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([b"x", b"y"], pa.binary()),
            "exchange": pa.array(["ex", None]),
            "routing_key": pa.array([None, "k"]),
            "headers": pa.array(
                [[("a", "1"), ("x-half-txn", "theirs"), ("x-check-queue", "q")], None],
                pa.map_(pa.string(), pa.string()),
            ),
            "content_type": pa.array(["text/plain", None]),
            "message_id": pa.array(["m1", "m2"]),
            "correlation_id": pa.array([None, "c2"]),
            "timestamp": pa.array(
                [dt.datetime(2024, 5, 6, 7, 8, 9, 900_000, tzinfo=utc), None],
                pa.timestamp("us", tz="UTC"),
            ),
            "delivery_mode": pa.array([1, None], pa.int32()),
            "priority": pa.array([None, 7], pa.int32()),
            "redelivered": pa.array([True, False]),
        }
    )
    first, second = batch_messages(batch, None, None, None)
    assert (first[0], first[1], first[3]) == ("ex", "", b"x")
    assert (second[0], second[1], second[3]) == ("", "k", b"y")
    one, two = _decoded(first[2]), _decoded(second[2])
    assert one.headers == {"a": "1"}
    assert (one.content_type, one.message_id, one.correlation_id) == ("text/plain", "m1", None)
    assert one.timestamp == int(dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=utc).timestamp())
    assert (one.delivery_mode, one.priority) == (1, None)
    assert two.headers is None
    assert (two.message_id, two.correlation_id, two.timestamp) == ("m2", "c2", None)
    assert (two.delivery_mode, two.priority) == (2, 7)


def test_options_win_over_columns_and_the_half_header_joins_the_rows_headers():
    batch = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([b"x"]),
            "exchange": pa.array(["ex"]),
            "headers": pa.array([[("a", "1")]], pa.map_(pa.string(), pa.string())),
        }
    )
    ((exchange, key, encoded, _body),) = batch_messages(batch, "", "rk", "spark-2")
    assert (exchange, key) == ("", "rk")
    assert _decoded(encoded).headers == {"a": "1", "x-half-txn": "spark-2"}


def test_the_arrow_schema_is_the_one_pyspark_converts_schema_to():
    """Batches must have the schema PySpark's worker expects; ours is built without PySpark's
    converter (which imports pandas) and must not drift from it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    assert arrow_schema() == to_arrow_schema(SCHEMA, timezone="UTC")
    assert arrow_schema().metadata is None
