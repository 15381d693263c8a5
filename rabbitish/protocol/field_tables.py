"""Field tables as Python values (the values pamqp's decoder gives), decoded without recursion:
a client may nest tables and arrays as deep as its frame allows (RabbitMQ accepts at least
15,000 levels), and a recursive decoder would fail long before that.

Decoded structures stay shallow: a table or array nested more than MAX_DEPTH levels down is kept
as a DeepValue, its encoded bytes. Everything that walks decoded values afterwards (argument
equivalence, binding keys, the store's encoder, the management API's JSON) therefore recurses
at most MAX_DEPTH levels, while the client's bytes are kept exactly: encode_table writes a
DeepValue back as it came."""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

from pamqp import encode

from rabbitish.protocol.field_types import (
    ARRAY,
    FIELD_TYPES,
    MAX_DEPTH,
    TABLE,
    DeepValue,
    check_contents,
)

__all__ = ["MAX_DEPTH", "DeepValue", "decode_table", "encode_table", "encode_value"]

_u32 = struct.Struct(">I")
_FIXED = {
    ord(tag): struct.Struct(fmt)
    for tag, fmt in (
        *(("b", ">b"), ("B", ">B"), ("s", ">h"), ("U", ">h"), ("u", ">H")),
        *(("I", ">i"), ("i", ">I"), ("l", ">q"), ("L", ">q"), ("f", ">f"), ("d", ">d")),
    )
}
_DECIMAL = struct.Struct(">BI")
_TIMESTAMP = struct.Struct(">Q")
_DOUBLE = struct.Struct(">d")


def decode_table(buf: bytes, pos: int = 0, end: int | None = None) -> dict[str, Any]:
    """The entries of an encoded field table between pos and end (without its length prefix;
    end defaults to the end of `buf`). Raises ValueError for bytes that do not parse: an entry
    or value running past its container, an unknown type tag, a key that is not UTF-8."""
    if end is None:
        end = len(buf)
    root: dict[str, Any] = {}
    # One entry per open container: (the container, where its bytes end).
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(root, end)]
    while stack:
        container, stop = stack[-1]
        if pos >= stop:
            stack.pop()
            continue
        key = ""
        if type(container) is dict:
            key_end = pos + 1 + buf[pos]
            if key_end >= stop:
                raise ValueError("table entry runs past the end")
            key = bytes(buf[pos + 1 : key_end]).decode("utf-8")
            pos = key_end
        tag = buf[pos]
        field = FIELD_TYPES.get(tag)
        if field is None:
            raise ValueError(f"unknown field type {tag}")
        value: Any
        if field.size is not None:
            value_end = pos + 1 + field.size
            if value_end > stop:
                raise ValueError("field value runs past the end")
            value = _fixed(tag, buf, pos + 1)
            pos = value_end
        else:
            start = pos + 5
            if start > stop:
                raise ValueError("field length runs past the end")
            value_end = start + _u32.unpack_from(buf, pos + 1)[0]
            if value_end > stop:
                raise ValueError("field value runs past the end")
            if tag in (TABLE, ARRAY):
                if len(stack) > MAX_DEPTH:
                    _check_nested(buf, pos, value_end)
                    value = DeepValue(buf[pos:value_end])
                    pos = value_end
                else:
                    value = {} if tag == TABLE else []
                    stack.append((value, value_end))
                    pos = start
            elif tag == ord("S"):
                raw = bytes(buf[start:value_end])
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError:
                    value = raw
                pos = value_end
            else:  # x: byte array
                value = bytearray(buf[start:value_end])
                pos = value_end
        if type(container) is dict:
            container[key] = value
        else:
            container.append(value)  # type: ignore[union-attr]
    return root


def _fixed(tag: int, buf: bytes, pos: int) -> Any:
    if tag in _FIXED:
        return _FIXED[tag].unpack_from(buf, pos)[0]
    if tag == ord("t"):
        return bool(buf[pos])
    if tag == ord("D"):
        places, unscaled = _DECIMAL.unpack_from(buf, pos)
        return decimal.Decimal(unscaled) * (decimal.Decimal(10) ** -places)
    if tag == ord("T"):
        return _timestamp(_TIMESTAMP.unpack_from(buf, pos)[0])
    return None  # V: void


def _timestamp(seconds: int) -> datetime.datetime | int:
    """pamqp's reading (values past 2106 taken as milliseconds); one no datetime can hold stays
    the integer, as RabbitMQ accepts any 64-bit timestamp."""
    value: float = seconds / 1000.0 if seconds > 0xFFFFFFFF else seconds
    try:
        return datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
    except (ValueError, OverflowError, OSError):
        return seconds


def _check_nested(buf: bytes, pos: int, end: int) -> None:
    """Check a container kept encoded as thoroughly as a decoded one (keys UTF-8 included)."""
    check_contents(buf, pos + 5, end, buf[pos] == TABLE, utf8_keys=True)


# ---------------------------------------------------------------------- encoding
def encode_table(table: dict[str, Any] | None) -> bytes:
    """A field table with its length prefix, as pamqp encodes it (keys sorted, each value the
    type pamqp picks), with DeepValues written back byte for byte."""
    if not table:
        return b"\x00\x00\x00\x00"
    body = b"".join(
        encode.short_string(_key(key)) + encode_value(value) for key, value in sorted(table.items())
    )
    return _u32.pack(len(body)) + body


def encode_value(value: Any) -> bytes:
    """One typed field value (see encode_table). Where pamqp's choice could not hold every
    value a client can send, the value keeps a type that holds it: floats as doubles,
    decimals with their unsigned mantissa, timestamps past the signed 64-bit range, long
    strings that are not UTF-8 as bytes."""
    if isinstance(value, DeepValue):
        return bytes(value)
    if isinstance(value, dict):
        return b"F" + encode_table(value)
    if isinstance(value, list):
        body = b"".join(encode_value(item) for item in value)
        return b"A" + _u32.pack(len(body)) + body
    if type(value) is bytes:  # a long string that is not UTF-8
        return b"S" + _u32.pack(len(value)) + value
    if isinstance(value, float):
        return b"d" + _DOUBLE.pack(value)
    if isinstance(value, decimal.Decimal):
        return _encode_decimal(value)
    if type(value) is int and 1 << 63 <= value < 1 << 64:
        return b"T" + _TIMESTAMP.pack(value)
    if isinstance(value, datetime.datetime):
        return b"T" + _TIMESTAMP.pack(_timestamp_field(value))
    try:
        return encode.encode_table_value(value)
    except TypeError as err:
        raise ValueError(str(err)) from err


def _timestamp_field(value: datetime.datetime) -> int:
    """The decoder reads a timestamp above 2**32 - 1 as milliseconds (a client that sent
    milliseconds), so a time with a fraction of a second came as milliseconds and goes back
    so; any other is whole seconds."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    seconds = value.timestamp()
    if value.microsecond == 0 and seconds <= 0xFFFFFFFF:
        return int(seconds)
    return round(seconds * 1000)


def _encode_decimal(value: decimal.Decimal) -> bytes:
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int):
        places = max(0, -exponent)
        unscaled = int(value.scaleb(places))
        if places <= 255 and 0 <= unscaled <= 0xFFFFFFFF:
            return b"D" + _DECIMAL.pack(places, unscaled)
    try:
        return encode.encode_table_value(value)  # pamqp's signed form
    except TypeError as err:
        raise ValueError(str(err)) from err


def _key(key: str) -> str:
    """pamqp cuts keys to 128 bytes."""
    data = key.encode("utf-8")
    return data[:128].decode("utf-8", "ignore") if len(data) > 128 else key
