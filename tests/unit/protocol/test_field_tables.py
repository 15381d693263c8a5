"""The field-table decoder and checker work at any depth without recursion, give pamqp's values
for what pamqp can read, and keep containers deeper than MAX_DEPTH as their exact bytes."""

from __future__ import annotations

import datetime
import decimal
import struct

import pytest
from pamqp import commands, decode, encode

from rabbitish.protocol.field_tables import decode_table, encode_table
from rabbitish.protocol.field_types import MAX_DEPTH, DeepValue, check_table, typed_table
from rabbitish.protocol.properties import headers, validate
from tests.support import deep_tables
from tests.unit.harness import Harness

DEPTH = 15_000


def _depth_of_python(value: object) -> int:
    depth = 0
    while isinstance(value, dict | list) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    return depth


@pytest.mark.parametrize("kind", ["F", "A"])
def test_deep_table_decodes_shallow_and_encodes_back_exactly(kind: str) -> None:
    encoded = deep_tables.table({"deep": deep_tables.nested_value(DEPTH, kind)})
    check_table(encoded, 4, len(encoded), utf8_keys=True)
    decoded = decode_table(encoded, 4)
    assert _depth_of_python(decoded) == MAX_DEPTH + 1
    inner = decoded["deep"]
    for _ in range(MAX_DEPTH):
        inner = inner["k"] if kind == "F" else inner[0]
    assert isinstance(inner, DeepValue)
    assert encode_table(decoded) == encoded
    assert decode_table(encoded, 4) == decoded  # compares shallowly: no recursion error
    typed = typed_table(encoded)
    assert typed["deep"].kind == ("table" if kind == "F" else "array")


@pytest.mark.parametrize(
    "broken",
    [
        lambda v: v[:-1],  # the innermost value cut short
        lambda v: v.replace(b"S\x00\x00\x00\x02hi", b"Z\x00\x00\x00\x02hi"),  # unknown tag
        lambda v: v.replace(b"\x01kS", b"\x01\xffS"),  # a key that is not UTF-8
    ],
)
def test_a_fault_at_the_bottom_of_a_deep_table_is_found(broken) -> None:
    value = broken(deep_tables.nested_value(DEPTH, "F"))
    encoded = deep_tables.table({"deep": value})
    with pytest.raises(ValueError):
        decode_table(encoded, 4)


def test_same_values_as_pamqp() -> None:
    table = {
        "bool": True,
        "int8": -5,
        "int16": 3000,
        "uint16": 60000,
        "int32": -(2**31),
        "uint32": 2**32 - 1,
        "int64": 2**62,
        "float": 1.5,
        "decimal": decimal.Decimal("3.14"),
        "str": "héllo",
        "bytes": bytearray(b"\x00\xff"),
        "time": datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
        "none": None,
        "nested": {"list": [1, "a", {"x": [None]}], "empty": {}},
    }
    encoded = encode.field_table(table)
    assert decode_table(encoded, 4) == decode.field_table(encoded)[1]
    # Written back as pamqp writes it, except floats, kept as doubles (a float can hold less)
    again = encode_table(decode_table(encoded, 4))
    assert (
        again.replace(b"\x05floatd?\xf8\x00\x00\x00\x00\x00\x00", b"\x05floatf?\xc0\x00\x00")[4:]
        == encoded[4:]
    )
    assert decode_table(again, 4) == decode_table(encoded, 4)


def test_timestamp_no_datetime_holds_stays_an_integer() -> None:
    encoded = deep_tables.table({"t": b"T" + struct.pack(">Q", 2**64 - 1)})
    assert decode_table(encoded, 4) == {"t": 2**64 - 1}


def test_deep_headers_validate_and_decode() -> None:
    table = deep_tables.table({"deep": deep_tables.nested_value(DEPTH, "A")})
    raw = struct.pack(">H", 0x2000) + table
    validate(raw)
    assert isinstance(headers(raw)["deep"], list)


def test_deep_arguments_and_headers_through_a_connection() -> None:
    """On the sans-IO connection: a durable-looking declare with deep arguments (twice, the
    second one compared for equivalence), a headers exchange bound with a deep value, and a
    message whose deep header matches it. Any internal error fails the harness."""
    deep = deep_tables.nested_value(DEPTH, "F")
    h = Harness()
    h.handshake()
    h.open_channel(1)
    declare = deep_tables.queue_declare_payload("q", deep_tables.table({"x-deep": deep}))
    for _ in range(2):
        assert [f.name for f in h.send_frame(1, 1, declare)] == ["Queue.DeclareOk"]
    declared = h.send(1, commands.Exchange.Declare(exchange="hx", exchange_type="headers"))
    bind = (
        struct.pack(">HHH", 50, 20, 0)
        + b"\x01q\x02hx\x00\x00"
        + deep_tables.table({"x-match": b"S\x00\x00\x00\x03all", "deep": deep})
    )
    names = [f.name for f in declared + h.send_frame(1, 1, bind)]
    assert names == ["Exchange.DeclareOk", "Queue.BindOk"]
    h.send(1, commands.Basic.Publish(exchange="hx"))
    h.send_frame(2, 1, deep_tables.content_header_payload(2, deep_tables.table({"deep": deep})))
    h.send_frame(3, 1, b"hi")
    got = h.send(1, commands.Basic.Get(queue="q", no_ack=True))
    assert [f.name for f in got][:1] == ["Basic.GetOk"]
