"""AMQP 1.0 scalar writers: one function per primitive type that carries its own constructor,
each choosing the smallest encoding the spec offers (uint0/smalluint, vbin8, str8, sym8), so what
we write is what a careful peer would write. Compounds, arrays and the dispatch by Python type
are in encoder.py."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from .values import EncodeError

Encoder = Callable[[Any, bytearray], None]

P_BB = struct.Struct(">BB").pack  # also the header of small compounds (encoder.py)
_P_Bb = struct.Struct(">Bb").pack
_P_BH = struct.Struct(">BH").pack
_P_Bh = struct.Struct(">Bh").pack
_P_BI = struct.Struct(">BI").pack
_P_Bi = struct.Struct(">Bi").pack
_P_BQ = struct.Struct(">BQ").pack
_P_Bq = struct.Struct(">Bq").pack
_P_Bf = struct.Struct(">Bf").pack
_P_Bd = struct.Struct(">Bd").pack


# ---------------------------------------------------------------------- fixed width
def enc_null(value: Any, out: bytearray) -> None:
    out.append(0x40)


def enc_bool(value: Any, out: bytearray) -> None:
    out.append(0x41 if value else 0x42)


def enc_ubyte(value: int, out: bytearray) -> None:
    out += P_BB(0x50, value)


def enc_ushort(value: int, out: bytearray) -> None:
    out += _P_BH(0x60, value)


def _unsigned(zero: int, small: int, wide: int, pack_wide: Callable[..., bytes]) -> Encoder:
    """uint/ulong: the zero-width form for 0, one octet up to 255, else the full width."""

    def encode(value: int, out: bytearray) -> None:
        if value == 0:
            out.append(zero)
        elif 0 < value <= 0xFF:
            out += P_BB(small, value)
        else:
            out += pack_wide(wide, value)

    return encode


enc_uint = _unsigned(0x43, 0x52, 0x70, _P_BI)
enc_ulong = _unsigned(0x44, 0x53, 0x80, _P_BQ)


def enc_byte(value: int, out: bytearray) -> None:
    out += _P_Bb(0x51, value)


def enc_short(value: int, out: bytearray) -> None:
    out += _P_Bh(0x61, value)


def _signed(small: int, wide: int, pack_wide: Callable[..., bytes]) -> Encoder:
    """int/long: one octet from -128 to 127, else the full width."""

    def encode(value: int, out: bytearray) -> None:
        if -0x80 <= value <= 0x7F:
            out += _P_Bb(small, value)
        else:
            out += pack_wide(wide, value)

    return encode


enc_int = _signed(0x54, 0x71, _P_Bi)
enc_long = _signed(0x55, 0x81, _P_Bq)


def enc_float(value: float, out: bytearray) -> None:
    out += _P_Bf(0x72, value)


def enc_double(value: float, out: bytearray) -> None:
    out += _P_Bd(0x82, value)


def _decimal(code: int, width: int) -> Encoder:
    def encode(value: bytes, out: bytearray) -> None:
        if len(value) != width:
            raise EncodeError(f"a decimal{width * 8} takes {width} bytes, not {len(value)}")
        out.append(code)
        out += value

    return encode


enc_decimal32 = _decimal(0x74, 4)
enc_decimal64 = _decimal(0x84, 8)
enc_decimal128 = _decimal(0x94, 16)


def enc_char(value: str, out: bytearray) -> None:
    out += _P_BI(0x73, ord(value))


def enc_timestamp(value: int, out: bytearray) -> None:
    out += _P_Bq(0x83, value)


def enc_uuid(value: uuid.UUID, out: bytearray) -> None:
    out.append(0x98)
    out += value.bytes


# ---------------------------------------------------------------------- variable width
def binary_head(size: int) -> bytes:
    """The constructor and size of a binary of `size` bytes (vbin8 when it fits)."""
    return P_BB(0xA0, size) if size <= 0xFF else _P_BI(0xB0, size)


def enc_binary(value: bytes | bytearray, out: bytearray) -> None:
    out += binary_head(len(value))
    out += value


def enc_memoryview(value: memoryview, out: bytearray) -> None:
    enc_binary(value.tobytes(), out)


def enc_string(value: str, out: bytearray) -> None:
    data = value.encode()
    n = len(data)
    out += P_BB(0xA1, n) if n <= 0xFF else _P_BI(0xB1, n)
    out += data


def enc_symbol(value: str, out: bytearray) -> None:
    # The spec says ASCII; UTF-8 is its superset, so a symbol decoded from a lax peer can be
    # written back unchanged.
    data = value.encode()
    n = len(data)
    out += P_BB(0xA3, n) if n <= 0xFF else _P_BI(0xB3, n)
    out += data
