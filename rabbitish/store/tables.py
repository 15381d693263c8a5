"""Argument tables of exchanges, queues and bindings as the store writes them: every value the
0-9-1 decoder can produce is written so that decoding it gives back an equal value of the same
Python type. pamqp's encoder is not lossless for this (a double becomes a 32-bit float, a byte
array is refused), and recovery must bring back exactly what the broker accepted."""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

from pamqp import decode

_INT64 = (-(2**63), 2**63 - 1)
MAX_SECONDS = 0xFFFFFFFF


def encode_table(table: dict[str, Any]) -> bytes:
    """A field table, length prefix included."""
    body = b"".join(_shortstr(key) + encode_value(value) for key, value in table.items())
    return struct.pack(">I", len(body)) + body


def decode_table(blob: bytes) -> dict[str, Any]:
    return decode.field_table(blob)[1] if blob else {}


def _shortstr(key: str) -> bytes:
    raw = key.encode()
    return bytes([len(raw)]) + raw


def _long(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def encode_value(value: Any) -> bytes:
    """One typed value: the widest type of its kind, so nothing is cut."""
    if isinstance(value, bool):
        return b"t" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"integer out of range for a field table: {value}")
        return b"l" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"d" + struct.pack(">d", value)
    if isinstance(value, decimal.Decimal):
        return b"D" + _decimal(value)
    if isinstance(value, str):
        return b"S" + _long(value.encode())
    if isinstance(value, bytes | bytearray | memoryview):
        return b"x" + _long(bytes(value))
    if isinstance(value, datetime.datetime):
        return b"T" + struct.pack(">Q", _timestamp(value))
    if value is None:
        return b"V"
    if isinstance(value, dict):
        return b"F" + encode_table(value)
    if isinstance(value, list | tuple):
        return b"A" + _long(b"".join(encode_value(item) for item in value))
    raise TypeError(f"cannot store a field value of type {type(value).__name__}")


def _timestamp(value: datetime.datetime) -> int:
    """The decoder reads a timestamp above 2**32 - 1 as milliseconds (a client that sent
    milliseconds), so a time with a fraction of a second was milliseconds and is written so."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    seconds = value.timestamp()
    if value.microsecond == 0 and seconds <= MAX_SECONDS:
        return int(seconds)
    return round(seconds * 1000)


def _decimal(value: decimal.Decimal) -> bytes:
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if exponent > 0:
        unscaled, exponent = unscaled * 10**exponent, 0
    return struct.pack(">Bi", -exponent, unscaled)
