"""One schema for reads and writes, so a DataFrame read from a queue can be written to an
exchange as is: AMQP messages to rows and rows back to messages."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
from collections.abc import Iterator
from typing import Any

from pamqp import commands, common
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rabbitish.spark.amqp_client import (
    RawDelivery,
    decode_properties,
    encode_properties,
    timestamp,
)
from rabbitish.wire_names import CHECK_IMMUNITY_HEADER, CHECK_QUEUE_HEADER, HALF_HEADER

SCHEMA = StructType(
    [
        StructField("body", BinaryType()),
        StructField("routing_key", StringType()),
        StructField("exchange", StringType()),
        StructField("headers", MapType(StringType(), StringType())),
        StructField("content_type", StringType()),
        StructField("message_id", StringType()),
        StructField("correlation_id", StringType()),
        StructField("timestamp", TimestampType()),
        StructField("delivery_mode", IntegerType()),
        StructField("priority", IntegerType()),
        StructField("redelivered", BooleanType()),
    ]
)
COLUMNS = tuple(SCHEMA.fieldNames())
HEADERS_COLUMN = COLUMNS.index("headers")
PERSISTENT = 2  # writes are transactional: by default they should also survive a restart
# Headers that would turn a written row into a half message of someone else's transaction.
RESERVED_HEADERS = frozenset({HALF_HEADER, CHECK_QUEUE_HEADER, CHECK_IMMUNITY_HEADER})


# How a header value that is bytes but not UTF-8 text is shown: base64 after this prefix.
BINARY_PREFIX = "base64:"


class AmqpSchemaError(ValueError):
    """A DataFrame the sink cannot write."""


def render(value: Any) -> str | None:
    """A header value as the map<string,string> column shows it (the table of forms is in
    docs/spark.md): tables and arrays as JSON, bytes that are not UTF-8 as base64."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return BINARY_PREFIX + base64.b64encode(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, int | float | decimal.Decimal):
        return str(value)
    return json.dumps(value, default=lambda v: render(v) or None, sort_keys=True)


def property_columns(props: commands.Basic.Properties) -> tuple[Any, ...]:
    """The row's columns from headers to priority (timestamps come decoded, in UTC)."""
    return (
        {str(k): render(v) for k, v in (props.headers or {}).items()},
        props.content_type,
        props.message_id,
        props.correlation_id,
        props.timestamp,
        props.delivery_mode,
        props.priority,
    )


class DeliveryRows:
    """Messages as they arrive (amqp_client's RawDelivery, from basic.deliver or basic.get)
    as rows of SCHEMA. A queue's messages mostly share their encoded property list: each
    distinct one is decoded once, up to KNOWN of them, and its columns shared by the rows."""

    KNOWN = 4096

    def __init__(self) -> None:
        self._known: dict[bytes, tuple[commands.Basic.Properties, tuple[Any, ...]]] = {}

    def properties(self, encoded: bytes) -> tuple[commands.Basic.Properties, tuple[Any, ...]]:
        """The decoded properties and their columns."""
        known = self._known.get(encoded)
        if known is None:
            props = decode_properties(encoded)
            if len(self._known) >= self.KNOWN:
                self._known.clear()
            known = self._known[encoded] = (props, property_columns(props))
        return known

    def row(self, delivery: RawDelivery) -> tuple[Any, ...]:
        _tag, redelivered, exchange, routing_key, encoded, body = delivery
        return (body, routing_key, exchange, *self.properties(encoded)[1], redelivered)


def arrow_batch(rows: list[tuple[Any, ...]]) -> Any:
    """Rows of SCHEMA as one pyarrow record batch, built column by column (in C) where they
    are planned, so the task hands Spark the batch as it is instead of converting value by
    value. pyarrow is imported here, not with the module: batch reads and writes do without
    it."""
    import pyarrow as pa

    schema = arrow_schema()
    columns: list[Any] = list(zip(*rows, strict=True))
    pairs: dict[int, list[tuple[str, str | None]]] = {}  # rows often share one headers dict
    columns[HEADERS_COLUMN] = [
        None if h is None else pairs.get(id(h)) or pairs.setdefault(id(h), list(h.items()))
        for h in columns[HEADERS_COLUMN]
    ]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def arrow_rows(rows: list[tuple[Any, ...]]) -> bytes:
    """Rows of SCHEMA as one Arrow record batch in IPC stream form, to travel in a
    partition."""
    return ipc_stream([arrow_batch(rows)])


def ipc_stream(batches: list[Any]) -> bytes:
    """pyarrow record batches of SCHEMA (at least one) as one Arrow IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def arrow_batches(data: bytes) -> Iterator[Any]:
    """What `ipc_stream` made, read back (pyarrow record batches) without copying values."""
    import pyarrow as pa

    yield from pa.ipc.open_stream(data)


def load_arrow() -> None:
    """Imports what building the first Arrow batch imports: pyarrow, and pandas, which
    pyarrow's `pa.array` imports on its first call when it is installed (0.3-0.4 s). The
    stream reader runs this on a thread of its own while the query starts, instead of in
    front of its first batch."""
    import pyarrow as pa

    pa.array([], type=pa.string())
    arrow_schema()


@functools.cache
def arrow_schema() -> Any:
    """The Arrow schema Spark expects of a Python data source's batches: SCHEMA as PySpark's
    `to_arrow_schema(SCHEMA, timezone="UTC")` converts it, built here from SCHEMA's few types
    without going through PySpark's pandas module."""
    import pyarrow as pa

    def arrow_type(spark_type: Any) -> Any:
        if isinstance(spark_type, MapType):
            key, value = arrow_type(spark_type.keyType), arrow_type(spark_type.valueType)
            return pa.map_(key, value)
        if isinstance(spark_type, TimestampType):
            return pa.timestamp("us", tz="UTC")
        simple = {
            BinaryType: pa.binary(),
            StringType: pa.string(),
            IntegerType: pa.int32(),
            BooleanType: pa.bool_(),
        }
        return simple[type(spark_type)]

    return pa.schema(
        [pa.field(f.name, arrow_type(f.dataType), nullable=f.nullable) for f in SCHEMA.fields]
    )


def check_write_schema(schema: StructType) -> None:
    """Fail on the driver, before any publish, for columns the sink would silently drop."""
    unknown = [name for name in schema.fieldNames() if name not in COLUMNS]
    if unknown:
        raise AmqpSchemaError(
            f"the amqp sink takes the columns {', '.join(COLUMNS)}; unknown: {', '.join(unknown)}"
        )
    if "body" not in schema.fieldNames():
        raise AmqpSchemaError("the amqp sink needs a body column (binary or string)")
    body = schema["body"].dataType
    if not isinstance(body, BinaryType | StringType):
        raise AmqpSchemaError(
            f"the body column must be binary or string, not {body.simpleString()}"
        )


# The columns that become message properties; a batch with none of them (or only nulls in
# them) publishes every row with the same properties, encoded once.
PROPERTY_COLUMNS = (
    "headers",
    "content_type",
    "message_id",
    "correlation_id",
    "timestamp",
    "delivery_mode",
    "priority",
)
# Arrow timestamp units per second.
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}

# A message as the sink publishes it: exchange, routing key, encoded properties, body.
Message = tuple[str, str, bytes, bytes]


def batch_messages(
    batch: Any, exchange: str | None, routing_key: str | None, half_txn: str | None
) -> Iterator[Message]:
    """A pyarrow record batch of the write schema as messages, row by row. Options win over
    the exchange / routing_key columns; missing columns and nulls take the defaults (default
    exchange, empty routing key, persistent); `half_txn` adds the half-transaction header to
    every message, after the reserved headers of the rows were dropped."""
    names = batch.schema.names
    rows = batch.num_rows
    column = {name: batch.column(names.index(name)) for name in names}
    bodies = [_bytes(body) for body in column["body"].to_pylist()]
    exchanges = _routing(column.get("exchange"), exchange, rows)
    keys = _routing(column.get("routing_key"), routing_key, rows)
    present = [
        name for name in PROPERTY_COLUMNS if name in column and column[name].null_count < rows
    ]
    if not present:
        half: common.FieldTable | None = {HALF_HEADER: half_txn} if half_txn is not None else None
        shared = encode_properties(
            commands.Basic.Properties(headers=half, delivery_mode=PERSISTENT)
        )
        yield from zip(exchanges, keys, [shared] * rows, bodies, strict=True)
        return
    values = {
        name: _values(column[name]) if name in present else [None] * rows
        for name in PROPERTY_COLUMNS
    }
    for row, body in enumerate(bodies):
        headers: common.FieldTable = {
            k: v for k, v in values["headers"][row] or () if k not in RESERVED_HEADERS
        }
        if half_txn is not None:
            headers[HALF_HEADER] = half_txn
        mode = values["delivery_mode"][row]
        stamp = values["timestamp"][row]
        props = commands.Basic.Properties(
            headers=headers or None,
            content_type=values["content_type"][row],
            message_id=values["message_id"][row],
            correlation_id=values["correlation_id"][row],
            timestamp=None if stamp is None else timestamp(stamp),
            delivery_mode=PERSISTENT if mode is None else mode,
            priority=values["priority"][row],
        )
        yield exchanges[row], keys[row], encode_properties(props), body


def _bytes(body: bytes | str | None) -> bytes:
    if isinstance(body, str):
        return body.encode()
    return bytes(body or b"")


def _routing(column: Any, option: str | None, rows: int) -> list[str]:
    if option is not None or column is None:
        return [option or ""] * rows
    return [value or "" for value in column.to_pylist()]


def _values(column: Any) -> list[Any]:
    """A property column's values as the properties take them: timestamps as whole seconds since the
    epoch (truncated, as AMQP timestamps are), map rows as (key, value) pairs."""
    import pyarrow as pa

    if pa.types.is_timestamp(column.type):
        per_second = _UNITS[column.type.unit]
        return [
            None if t is None else (t // per_second if t >= 0 else -(-t // per_second))
            for t in column.cast(pa.int64()).to_pylist()
        ]
    return list(column.to_pylist())
