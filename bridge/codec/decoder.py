"""AMQP 1.0 decoder: bytes to Python values, for every encoding code of the spec's types section.

Input comes from the network, so nothing here trusts a size or a count: each is checked against
the bytes actually there before anything is allocated, and every malformation is a DecodeError
(never an IndexError or a struct.error escaping to the connection). A described value whose
descriptor is one of the spec's types comes out as that type's class (registered by
definitions.py); any other stays a Described."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from .values import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
    Described,
    Float32,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

Decoder = Callable[[bytes, int], tuple[Any, int]]

_mk_int = int.__new__
_mk_float = float.__new__
_mk_str = str.__new__
_mk_bytes = bytes.__new__
_U32 = struct.Struct(">I").unpack_from
_U32_PAIR = struct.Struct(">II").unpack_from

_UINT0 = UInt(0)
_ULONG0 = ULong(0)

# An array of zero-width elements (null, true, uint0, list0...) costs no input per element; it
# may hold as many elements as it has bytes, or this many, so a small frame cannot decode into
# a huge list.
ZERO_WIDTH_ARRAY_LIMIT = 16


def _truncated(what: str, pos: int, need: int, buf: bytes) -> DecodeError:
    have = max(len(buf) - pos, 0)
    return DecodeError(f"truncated {what} at offset {pos}: needs {need} bytes, {have} left")


def _value(buf: bytes, pos: int, what: str) -> tuple[Any, int]:
    if pos >= len(buf):
        raise _truncated(what, pos, 1, buf)
    return _DECODERS[buf[pos]](buf, pos + 1)


# ---------------------------------------------------------------------- fixed width
def _constant(value: Any) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        return value, pos

    return decode


def _dec_list0(buf: bytes, pos: int) -> tuple[list[Any], int]:
    return [], pos


def _dec_boolean(buf: bytes, pos: int) -> tuple[bool, int]:
    if pos >= len(buf):
        raise _truncated("boolean", pos, 1, buf)
    octet = buf[pos]
    if octet > 1:
        raise DecodeError(f"boolean octet 0x{octet:02x} at offset {pos} is neither 0 nor 1")
    return octet == 1, pos + 1


def _fixed(name: str, fmt: str, make: Callable[[Any], Any]) -> Decoder:
    unpack = struct.Struct(fmt).unpack_from
    width = struct.calcsize(fmt)

    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        end = pos + width
        if end > len(buf):
            raise _truncated(name, pos, width, buf)
        return make(unpack(buf, pos)[0]), end

    return decode


def _int_of(cls: type) -> Callable[[int], Any]:
    # Values from struct are in range by construction: skip the constructor's check.
    return lambda value: _mk_int(cls, value)


def _to_char(code_point: int) -> Char:
    if code_point > 0x10FFFF or 0xD800 <= code_point <= 0xDFFF:
        raise DecodeError(f"char 0x{code_point:x} is not a Unicode scalar value")
    return _mk_str(Char, chr(code_point))


def _raw(name: str, width: int, make: Callable[[bytes], Any]) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        end = pos + width
        if end > len(buf):
            raise _truncated(name, pos, width, buf)
        return make(buf[pos:end]), end

    return decode


# ---------------------------------------------------------------------- variable width
def _utf8(name: str, data: bytes, pos: int) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{name} at offset {pos} is not UTF-8: {exc.reason}") from None


def _variable(name: str, wide: bool, make: Callable[[bytes, int], Any]) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        if wide:
            if pos + 4 > len(buf):
                raise _truncated(f"{name} size", pos, 4, buf)
            start = pos + 4
            end = start + _U32(buf, pos)[0]
        else:
            if pos >= len(buf):
                raise _truncated(f"{name} size", pos, 1, buf)
            start = pos + 1
            end = start + buf[pos]
        if end > len(buf):
            raise _truncated(name, start, end - start, buf)
        return make(buf[start:end], start), end

    return decode


def _binary(data: bytes, pos: int) -> bytes:
    return data


def _string(data: bytes, pos: int) -> str:
    return _utf8("string", data, pos)


def _symbol(data: bytes, pos: int) -> Symbol:
    return _mk_str(Symbol, _utf8("symbol", data, pos))


# ---------------------------------------------------------------------- compound
def _header(name: str, buf: bytes, pos: int, wide: bool) -> tuple[int, int, int]:
    """(first item offset, end offset, count) of a list/map/array; `pos` is after the code.
    The size counts the count field, so it is at least that wide."""
    if wide:
        if pos + 8 > len(buf):
            raise _truncated(f"{name} header", pos, 8, buf)
        size, count = _U32_PAIR(buf, pos)
        first, end, width = pos + 8, pos + 4 + size, 4
    else:
        if pos + 2 > len(buf):
            raise _truncated(f"{name} header", pos, 2, buf)
        size, count = buf[pos], buf[pos + 1]
        first, end, width = pos + 2, pos + 1 + size, 1
    if size < width:
        raise DecodeError(f"{name} at offset {pos} has size {size}, too small for its count")
    if end > len(buf):
        raise _truncated(name, first, end - first, buf)
    return first, end, count


def _items(name: str, buf: bytes, pos: int, end: int, count: int) -> list[Any]:
    if count > end - pos:  # every item takes at least its constructor octet
        raise DecodeError(f"{name} claims {count} items in {end - pos} bytes")
    items: list[Any] = []
    append = items.append
    decoders = _DECODERS
    for _ in range(count):
        if pos >= end:
            raise DecodeError(f"{name} items run past its size")
        value, pos = decoders[buf[pos]](buf, pos + 1)
        append(value)
    if pos != end:
        raise DecodeError(f"{name} size does not match its items ({pos - end:+d} bytes)")
    return items


def _list(name: str, wide: bool) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[list[Any], int]:
        first, end, count = _header(name, buf, pos, wide)
        return _items(name, buf, first, end, count), end

    return decode


def _map(name: str, wide: bool) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[dict[Any, Any], int]:
        first, end, count = _header(name, buf, pos, wide)
        if count % 2:
            raise DecodeError(f"{name} at offset {pos} has an odd count ({count})")
        items = _items(name, buf, first, end, count)
        result: dict[Any, Any] = {}
        pairs = iter(items)
        for key, value in zip(pairs, pairs, strict=True):
            try:
                result[key] = value
            except TypeError:
                result[_hashable(key)] = value
        return result, end

    return decode


def _hashable(key: Any) -> Any:
    """A map key Python cannot hash (a list, a map): lists become tuples, maps tuples of pairs."""
    if isinstance(key, (list, tuple)):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, dict):
        return tuple((_hashable(k), _hashable(v)) for k, v in key.items())
    if isinstance(key, Described):
        return Described(_hashable(key.descriptor), _hashable(key.value))
    try:
        hash(key)
    except TypeError:
        raise DecodeError(f"map key {type(key).__name__} cannot be used as a key") from None
    return key


def _array(name: str, wide: bool) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Array, int]:
        first, end, count = _header(name, buf, pos, wide)
        return _array_items(name, buf, first, end, count), end

    return decode


def _array_items(name: str, buf: bytes, pos: int, end: int, count: int) -> Array:
    span = end - pos
    if pos >= end:
        raise DecodeError(f"{name} at offset {pos} has no element constructor")
    code = buf[pos]
    pos += 1
    descriptor = None
    is_described = code == 0x00
    if is_described:
        descriptor, pos = _value(buf, pos, f"{name} element descriptor")
        if pos >= end:
            raise DecodeError(f"{name} element descriptor runs past its size")
        code = buf[pos]
        pos += 1
        if code == 0x00:
            raise DecodeError(f"{name} elements with more than one descriptor")
    element_type = ELEMENT_TYPES.get(code)
    if element_type is None:
        raise DecodeError(f"{name} element constructor 0x{code:02x} is not a type")
    if code in _ZERO_WIDTH:
        if count > max(span, ZERO_WIDTH_ARRAY_LIMIT):
            raise DecodeError(f"{name} of {count} zero-width elements in {span} bytes")
    elif count > end - pos:
        raise DecodeError(f"{name} claims {count} elements in {end - pos} bytes")
    decode_element = _DECODERS[code]
    items: list[Any] = []
    append = items.append
    for _ in range(count):
        value, pos = decode_element(buf, pos)
        if pos > end:
            raise DecodeError(f"{name} elements run past its size")
        append(value)
    if pos != end:
        raise DecodeError(f"{name} size does not match its elements ({pos - end:+d} bytes)")
    if is_described:
        items = [described(descriptor, item) for item in items]
    array = Array.__new__(Array)
    list.extend(array, items)
    array.element_type = element_type
    array.descriptor = descriptor
    return array


# ---------------------------------------------------------------------- described
# Classes of the spec's described types, by descriptor (code as an int, name as a str); the
# smallulong codes again by their octet for the fast path (00 53 xx).
_BY_DESCRIPTOR: dict[Any, Callable[[Any], Any]] = {}
_BY_SMALL_CODE: dict[int, Callable[[Any], Any]] = {}


def register_described(code: int, name: str, factory: Callable[[Any], Any]) -> None:
    """Decode values described by `code` or `name` with `factory` (which raises DecodeError for
    a value that does not fit)."""
    _BY_DESCRIPTOR[int(code)] = factory
    _BY_DESCRIPTOR[str(name)] = factory
    if code <= 0xFF:
        _BY_SMALL_CODE[int(code)] = factory


def described(descriptor: Any, value: Any) -> Any:
    """The described value as its class when the descriptor is known, else a Described."""
    kind = type(descriptor)
    if kind is ULong or kind is Symbol:
        factory = _BY_DESCRIPTOR.get(descriptor)
        if factory is not None:
            return factory(value)
    return Described(descriptor, value)


def _dec_described(buf: bytes, pos: int) -> tuple[Any, int]:
    if pos + 2 < len(buf) and buf[pos] == 0x53:
        factory = _BY_SMALL_CODE.get(buf[pos + 1])
        if factory is not None:
            value, pos = _DECODERS[buf[pos + 2]](buf, pos + 3)
            return factory(value), pos
    descriptor, pos = _value(buf, pos, "descriptor")
    value, pos = _value(buf, pos, "described value")
    return described(descriptor, value), pos


# ---------------------------------------------------------------------- tables
def _unknown(code: int) -> Decoder:
    def decode(buf: bytes, pos: int) -> tuple[Any, int]:
        raise DecodeError(f"unknown format code 0x{code:02x} at offset {pos - 1}")

    return decode


_DECODERS: list[Decoder] = [_unknown(code) for code in range(256)]
_TABLE: dict[int, tuple[str, Decoder]] = {
    0x40: ("null", _constant(None)),
    0x41: ("boolean", _constant(True)),
    0x42: ("boolean", _constant(False)),
    0x56: ("boolean", _dec_boolean),
    0x50: ("ubyte", _fixed("ubyte", ">B", _int_of(UByte))),
    0x60: ("ushort", _fixed("ushort", ">H", _int_of(UShort))),
    0x70: ("uint", _fixed("uint", ">I", _int_of(UInt))),
    0x52: ("uint", _fixed("smalluint", ">B", _int_of(UInt))),
    0x43: ("uint", _constant(_UINT0)),
    0x80: ("ulong", _fixed("ulong", ">Q", _int_of(ULong))),
    0x53: ("ulong", _fixed("smallulong", ">B", _int_of(ULong))),
    0x44: ("ulong", _constant(_ULONG0)),
    0x51: ("byte", _fixed("byte", ">b", _int_of(Byte))),
    0x61: ("short", _fixed("short", ">h", _int_of(Short))),
    0x71: ("int", _fixed("int", ">i", _int_of(Int))),
    0x54: ("int", _fixed("smallint", ">b", _int_of(Int))),
    0x81: ("long", _fixed("long", ">q", _int_of(Long))),
    0x55: ("long", _fixed("smalllong", ">b", _int_of(Long))),
    0x72: ("float", _fixed("float", ">f", lambda value: _mk_float(Float32, value))),
    0x82: ("double", _fixed("double", ">d", float)),
    0x74: ("decimal32", _raw("decimal32", 4, lambda data: _mk_bytes(Decimal32, data))),
    0x84: ("decimal64", _raw("decimal64", 8, lambda data: _mk_bytes(Decimal64, data))),
    0x94: ("decimal128", _raw("decimal128", 16, lambda data: _mk_bytes(Decimal128, data))),
    0x73: ("char", _fixed("char", ">I", _to_char)),
    0x83: ("timestamp", _fixed("timestamp", ">q", _int_of(Timestamp))),
    0x98: ("uuid", _raw("uuid", 16, lambda data: uuid.UUID(bytes=data))),
    0xA0: ("binary", _variable("vbin8", False, _binary)),
    0xB0: ("binary", _variable("vbin32", True, _binary)),
    0xA1: ("string", _variable("str8-utf8", False, _string)),
    0xB1: ("string", _variable("str32-utf8", True, _string)),
    0xA3: ("symbol", _variable("sym8", False, _symbol)),
    0xB3: ("symbol", _variable("sym32", True, _symbol)),
    0x45: ("list", _dec_list0),
    0xC0: ("list", _list("list8", False)),
    0xD0: ("list", _list("list32", True)),
    0xC1: ("map", _map("map8", False)),
    0xD1: ("map", _map("map32", True)),
    0xE0: ("array", _array("array8", False)),
    0xF0: ("array", _array("array32", True)),
}
for _code, (_name, _decoder) in _TABLE.items():
    _DECODERS[_code] = _decoder
_DECODERS[0x00] = _dec_described

# Format code -> primitive type name, for every code the spec defines (0x00 aside).
ELEMENT_TYPES: dict[int, str] = {code: name for code, (name, _) in _TABLE.items()}
_ZERO_WIDTH = frozenset((0x40, 0x41, 0x42, 0x43, 0x44, 0x45))

_FAILURES = (ValueError, TypeError, IndexError, KeyError, OverflowError, struct.error)


def decode(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[Any, int]:
    """The value encoded at `pos` and the offset just after it. Raises DecodeError, and only
    that, for anything malformed."""
    if not isinstance(buf, bytes):
        buf = bytes(memoryview(buf))
    if not 0 <= pos < len(buf):
        raise DecodeError(f"no value at offset {pos} of {len(buf)} bytes")
    try:
        return _DECODERS[buf[pos]](buf, pos + 1)
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("value nested too deeply") from None
    except _FAILURES as exc:  # a check missed above: still the peer's fault
        raise DecodeError(f"malformed value at offset {pos}: {exc!r}") from exc


# Constructors whose values are sized by the octet, or the four octets, after them.
_SIZED_8 = frozenset((0xA0, 0xA1, 0xA3, 0xC0, 0xC1, 0xE0))
_SIZED_32 = frozenset((0xB0, 0xB1, 0xB3, 0xD0, 0xD1, 0xF0))


def value_end(buf: bytes, pos: int) -> int | None:
    """Where the value at `pos` ends, read from its constructor and size alone, without
    decoding (or checking) what it holds; None when the constructor is not a zero-width,
    binary, string, symbol or compound one, or the size runs past `buf`."""
    end = len(buf)
    if pos >= end:
        return None
    code = buf[pos]
    if code in _ZERO_WIDTH:
        stop = pos + 1
    elif code in _SIZED_8:
        if pos + 1 >= end:
            return None
        stop = pos + 2 + buf[pos + 1]
    elif code in _SIZED_32:
        if pos + 5 > end:
            return None
        stop = pos + 5 + _U32(buf, pos + 1)[0]
    else:
        return None
    return stop if stop <= end else None


def decode_all(buf: bytes | bytearray | memoryview) -> list[Any]:
    """Every value in `buf`, back to back (the sections of a message, say)."""
    if not isinstance(buf, bytes):
        buf = bytes(memoryview(buf))
    values = []
    pos = 0
    while pos < len(buf):
        value, pos = decode(buf, pos)
        values.append(value)
    return values
