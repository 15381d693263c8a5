"""One schema for reads and writes, so a DataFrame read from a queue can be written to an
exchange as is: AMQP messages to rows and rows back to messages."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pika
import pika.data
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
_pika_decode_value = pika.data.decode_value


def _decode_value(encoded: bytes, offset: int) -> tuple[Any, int]:
    """pika's field-value decoder, except that it truncates float ('f') and double ('d')
    header values to integers: those two are decoded here, everything else by pika."""
    kind = encoded[offset : offset + 1]
    if kind == b"f":
        return struct.unpack_from(">f", encoded, offset + 1)[0], offset + 5
    if kind == b"d":
        return struct.unpack_from(">d", encoded, offset + 1)[0], offset + 9
    return _pika_decode_value(encoded, offset)


# Header tables (and arrays inside them) decode through this module-level name; every process
# that turns messages into rows (driver and tasks) imports this module.
pika.data.decode_value = _decode_value

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


def message_row(method: Any, props: pika.BasicProperties, body: bytes) -> tuple[Any, ...]:
    """A basic.get-ok (pika's method, properties, body) as a row of SCHEMA."""
    stamp = props.timestamp
    return (
        body,
        method.routing_key,
        method.exchange,
        {str(k): render(v) for k, v in (props.headers or {}).items()},
        props.content_type,
        props.message_id,
        props.correlation_id,
        None if stamp is None else dt.datetime.fromtimestamp(stamp, tz=dt.UTC),
        props.delivery_mode,
        props.priority,
        bool(method.redelivered),
    )


def arrow_rows(rows: list[tuple[Any, ...]]) -> bytes:
    """Rows of SCHEMA as one Arrow record batch in IPC stream form: built column by column
    (in C) where they are planned, so the task hands Spark the batch as it is instead of
    converting value by value. pyarrow is imported here, not with the module: batch reads
    and writes do without it."""
    import pyarrow as pa

    schema = _arrow_schema()
    columns: list[Any] = [list(column) for column in zip(*rows, strict=True)]
    headers = columns[HEADERS_COLUMN]
    columns[HEADERS_COLUMN] = [None if h is None else list(h.items()) for h in headers]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def arrow_batches(data: bytes) -> Iterator[Any]:
    """What `arrow_rows` made, read back (pyarrow record batches) without copying values."""
    import pyarrow as pa

    yield from pa.ipc.open_stream(data)


def _arrow_schema() -> Any:
    """The Arrow schema Spark expects of a Python data source's batches (its worker's own
    choice: SCHEMA, timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(SCHEMA, timezone="UTC")


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


@dataclass(frozen=True)
class Publish:
    """One row as basic.publish arguments."""

    exchange: str
    routing_key: str
    body: bytes
    properties: pika.BasicProperties


def row_publish(row: Mapping[str, Any], exchange: str | None, routing_key: str | None) -> Publish:
    """Options win over the row's exchange / routing_key columns; missing columns take the
    defaults (default exchange, empty routing key, persistent)."""
    body = row.get("body")
    if isinstance(body, str):
        body = body.encode()
    headers = {k: v for k, v in (row.get("headers") or {}).items() if k not in RESERVED_HEADERS}
    stamp = row.get("timestamp")
    mode = row.get("delivery_mode")
    props = pika.BasicProperties(
        headers=headers or None,
        content_type=row.get("content_type"),
        message_id=row.get("message_id"),
        correlation_id=row.get("correlation_id"),
        timestamp=None if stamp is None else int(stamp.timestamp()),
        delivery_mode=PERSISTENT if mode is None else mode,
        priority=row.get("priority"),
    )
    return Publish(
        exchange if exchange is not None else row.get("exchange") or "",
        routing_key if routing_key is not None else row.get("routing_key") or "",
        bytes(body or b""),
        props,
    )
