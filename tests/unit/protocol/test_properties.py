"""Raw content properties: splicing one field (headers, expiration) keeps every other byte the
publisher sent, values the broker writes get RabbitMQ's field types."""

from __future__ import annotations

import datetime
import struct

import pytest
from pamqp import decode, encode

from rabbitish.protocol import properties
from rabbitish.protocol.codec import CODEC, argument_types
from rabbitish.protocol.field_types import raw_entries


def shortstr(text: str) -> bytes:
    data = text.encode()
    return bytes([len(data)]) + data


def entry(key: str, typed_value: bytes) -> bytes:
    return shortstr(key) + typed_value


def table(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack(">I", len(body)) + body


# Headers with encodings a re-encoder would not reproduce: an "s" short of -2, an 'I' that fits a
# byte, a 'd' double, a nested table with an 'x' binary, an empty key, a non-ASCII key.
ODD_HEADERS = table(
    entry("short", b"s" + struct.pack(">h", -2)),
    entry("small", b"I" + struct.pack(">i", 1)),
    entry("dbl", b"d" + struct.pack(">d", 0.5)),
    entry("nested", b"F" + table(entry("bin", b"x" + struct.pack(">I", 2) + b"\x00\xff"))),
    shortstr("") + b"V",
    shortstr("ü") + b"t\x01",
)
FLAGS = (
    properties.CONTENT_TYPE
    | properties.HEADERS
    | properties.DELIVERY_MODE
    | properties.EXPIRATION
    | properties.APP_ID
)
RAW = (
    struct.pack(">H", FLAGS)
    + shortstr("application/json")
    + ODD_HEADERS
    + b"\x02"
    + shortstr("60000")
    + shortstr("app")
)


def header_entries(raw: bytes) -> list[tuple[bytes, bytes]]:
    _flags, found = properties.spans(raw)
    start, end = found[properties.HEADERS]
    return raw_entries(raw[start:end])


def test_spans_and_info():
    info = properties.PropertyInfo(RAW)
    assert (info.delivery_mode, info.expiration, info.reply_to) == (2, "60000", None)
    assert properties.decode_all(RAW)["app_id"] == "app"


def test_header_update_keeps_everything_else_byte_exact():
    spliced = properties.with_headers(RAW, {"x-new": "v", "small": 7})
    before, after = header_entries(RAW), header_entries(spliced)
    assert after[:1] == before[:1]
    assert after[1] == (shortstr("small"), b"l" + struct.pack(">q", 7))  # updated in place
    assert after[2:6] == before[2:6]
    assert after[6] == (shortstr("x-new"), b"S" + struct.pack(">I", 1) + b"v")
    prefix = struct.pack(">H", FLAGS) + shortstr("application/json")
    assert spliced.startswith(prefix)
    assert spliced.endswith(b"\x02" + shortstr("60000") + shortstr("app"))


def test_header_removal_and_sorting():
    spliced = properties.with_headers(RAW, {"B": 1}, remove=("dbl",), sort_keys=True)
    keys = [k[1:] for k, _v in header_entries(spliced)]
    assert keys == sorted(keys) == [b"", b"B", b"nested", b"short", b"small", "ü".encode()]
    by_key = dict(header_entries(RAW))
    for key, value in header_entries(spliced):
        if key != shortstr("B"):
            assert by_key[key] == value


def test_headers_added_where_there_were_none():
    raw = struct.pack(">H", properties.CONTENT_TYPE | properties.PRIORITY) + shortstr("t") + b"\x07"
    spliced = properties.with_headers(raw, {"k": "v"})
    assert properties.decode_all(spliced) == {
        "content_type": "t",
        "headers": {"k": "v"},
        "priority": 7,
    }
    assert properties.headers(spliced) == {"k": "v"}


def test_expiration_removed_and_set():
    removed = CODEC.with_expiration(RAW, None)
    assert properties.PropertyInfo(removed).expiration is None
    assert removed == struct.pack(">H", FLAGS & ~properties.EXPIRATION) + RAW[2:].replace(
        shortstr("60000"), b""
    )
    assert CODEC.with_expiration(removed, "60000") == RAW


def test_values_the_broker_writes_use_rabbitmq_types():
    stamp = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)
    raw = properties.with_headers(b"\x00\x00", {"x": [{"count": 1, "time": stamp, "s": "v"}]})
    ((_key, value),) = header_entries(raw)
    inner = table(
        entry("count", b"l" + struct.pack(">q", 1)),
        entry("time", b"T" + struct.pack(">Q", int(stamp.timestamp()))),
        entry("s", b"S" + struct.pack(">I", 1) + b"v"),
    )
    assert value == b"A" + struct.pack(">I", len(inner) + 1) + b"F" + inner


def test_argument_types_of_a_declare_payload():
    args = table(
        entry("x-message-ttl", b"s" + struct.pack(">h", 2000)),
        entry("x-dead-letter-exchange", b"S" + struct.pack(">I", 1) + b"d"),
        entry("flag", b"t\x01"),
    )
    payload = struct.pack(">HHH", 50, 10, 0) + shortstr("q") + b"\x00" + args
    assert argument_types(payload) == {
        "x-message-ttl": "short",
        "x-dead-letter-exchange": "longstr",
        "flag": "bool",
    }


def test_table_decodes_after_splicing():
    spliced = properties.with_headers(RAW, {"x-death": [{"count": 3}]}, sort_keys=True)
    _flags, found = properties.spans(spliced)
    start, end = found[properties.HEADERS]
    consumed, decoded = decode.field_table(spliced[start:end])
    assert consumed == end - start
    assert decoded["x-death"] == [{"count": 3}]


def _with_headers(table_body: bytes) -> bytes:
    return struct.pack(">HI", properties.HEADERS, len(table_body)) + table_body


@pytest.mark.parametrize(
    "table_body",
    [
        b"\x01kS\x00\x00\x00\x09abc",  # a longstr running past the table's end
        b"\x02\xff\xfeb\x01",  # a key that is not UTF-8
        b"\x01kF\x00\x00\x00\x04\x01jZ\x00",  # an unknown type in a nested table
    ],
)
def test_validate_refuses_header_tables_it_could_not_read(table_body: bytes) -> None:
    with pytest.raises(ValueError):
        properties.validate(_with_headers(table_body))


@pytest.mark.parametrize(
    "table_body",
    [
        b"\x01kU\x00\x01",  # RabbitMQ reads 'U' as a signed short
        b"\x01kT" + struct.pack(">Q", 253402300800),  # any 64-bit timestamp, past year 9999 too
    ],
)
def test_validate_accepts_what_rabbitmq_reads(table_body: bytes) -> None:
    properties.validate(_with_headers(table_body))


def test_validate_accepts_well_formed_headers_without_decoding_them() -> None:
    table = encode.field_table({"a": 1, "b": "x", "n": {"t": [1, "y"]}, "ts": 253402300799})
    properties.validate(struct.pack(">H", properties.HEADERS) + table)
