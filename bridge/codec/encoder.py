"""AMQP 1.0 encoder: Python values to bytes, each in the smallest encoding the spec offers for it
(uint0/smalluint, str8, list0/list8, ...), so what we write is what a careful peer would write.
Scalars are written by scalars.py; this module dispatches on the Python type and writes the
compounds (lists, maps, described values, composites) and arrays.

Values are encoded by their Python type (see values.py); a field of a composite is encoded by its
declared AMQP type instead (TYPED_ENCODERS), so a plain int given for a ushort field still goes
out as a ushort."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .scalars import (
    P_BB,
    Encoder,
    enc_binary,
    enc_bool,
    enc_byte,
    enc_char,
    enc_decimal32,
    enc_decimal64,
    enc_decimal128,
    enc_double,
    enc_float,
    enc_int,
    enc_long,
    enc_memoryview,
    enc_null,
    enc_short,
    enc_string,
    enc_symbol,
    enc_timestamp,
    enc_ubyte,
    enc_uint,
    enc_ulong,
    enc_ushort,
    enc_uuid,
)
from .values import (
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    EncodeError,
    Float32,
    Int,
    Long,
    Restricted,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

# Writes an array's element constructor, then the elements without constructors of their own.
ElementWriter = Callable[[list[Any], bytearray], None]

_P_BII = struct.Struct(">BII").pack
_P_II = struct.Struct(">II").pack


# ---------------------------------------------------------------------- compound
def _finish_compound(out: bytearray, start: int, count: int, code32: int) -> None:
    """Patch size and count into the compound written at `start` as (code8, 0, 0) + items,
    widening it to the 32-bit form when either does not fit an octet."""
    size = len(out) - start - 2  # what follows the size octet: the count octet and the items
    if size <= 0xFF and count <= 0xFF:
        out[start + 1] = size
        out[start + 2] = count
    else:
        out[start : start + 3] = _P_BII(code32, size + 3, count)


def _enc_list(value: list[Any] | tuple[Any, ...], out: bytearray) -> None:
    if not value:
        out.append(0x45)
        return
    start = len(out)
    out += b"\xc0\x00\x00"
    for item in value:
        _encode(item, out)
    _finish_compound(out, start, len(value), 0xD0)


def _enc_map(value: Mapping[Any, Any], out: bytearray) -> None:
    start = len(out)
    out += b"\xc1\x00\x00"
    for key, item in value.items():
        _encode(key, out)
        _encode(item, out)
    _finish_compound(out, start, 2 * len(value), 0xD1)


def encode_keyed_map(value: Mapping[Any, Any], out: bytearray) -> None:
    """A map whose keys the spec restricts to symbols (fields, filter-set) or symbols and ulongs
    (annotations): a plain str key goes out as a symbol, a plain int key as a ulong."""
    start = len(out)
    out += b"\xc1\x00\x00"
    for key, item in value.items():
        kind = type(key)
        if kind is str:
            enc_symbol(key, out)
        elif kind is int:
            enc_ulong(key, out)
        else:
            _encode(key, out)
        _encode(item, out)
    _finish_compound(out, start, 2 * len(value), 0xD1)


def _enc_described(value: Described, out: bytearray) -> None:
    out.append(0x00)
    _encode(value.descriptor, out)
    _encode(value.value, out)


def _enc_composite(value: Composite, out: bytearray) -> None:
    out += value._PREFIX
    start = len(out)
    out += b"\xc0\x00\x00"
    count = value._write_fields(out)
    if count:
        _finish_compound(out, start, count, 0xD0)
    else:
        del out[start:]
        out.append(0x45)


def _enc_restricted(value: Restricted, out: bytearray) -> None:
    out += value._PREFIX
    value._encode_value(value.value, out)


# ---------------------------------------------------------------------- arrays
def _enc_array(value: Array, out: bytearray) -> None:
    encode_array_into(value.element_type, value, out, value.descriptor)


def encode_array_into(
    element_type: str, items: Any, out: bytearray, descriptor: Any = None
) -> None:
    """Append an array of `items` as `element_type` (a primitive type name), described by
    `descriptor` when it is not None."""
    items = items if isinstance(items, list) else list(items)
    start = len(out)
    out += b"\xe0\x00\x00"
    _array_body(element_type, items, descriptor, out)
    _finish_compound(out, start, len(items), 0xF0)


def _array_body(element_type: str, items: list[Any], descriptor: Any, out: bytearray) -> None:
    """The element constructor and the elements (each without a constructor of its own)."""
    try:
        write = _ELEMENT_WRITERS[element_type]
    except KeyError:
        raise EncodeError(f"not an array element type: {element_type!r}") from None
    if descriptor is not None:
        out.append(0x00)
        _encode(descriptor, out)
        items = [_undescribed(item) for item in items]
    write(items, out)


def _undescribed(item: Any) -> Any:
    """The value of an element of a described array (a composite keeps its fields)."""
    if isinstance(item, (Described, Restricted)):
        return item.value
    return item


def _packed(code: int, fmt: str) -> ElementWriter:
    def write(items: list[Any], out: bytearray) -> None:
        out.append(code)
        out += struct.pack(f">{len(items)}{fmt}", *items)

    return write


def _narrowing(small: tuple[int, str], full: tuple[int, str], low: int, high: int) -> ElementWriter:
    """Elements of an integer type share one constructor: the one-octet form when all fit."""
    write_small, write_full = _packed(*small), _packed(*full)

    def write(items: list[Any], out: bytearray) -> None:
        fits = all(low <= item <= high for item in items)
        (write_small if fits else write_full)(items, out)

    return write


def _write_nulls(items: list[Any], out: bytearray) -> None:
    if any(item is not None for item in items):
        raise EncodeError("an array of null holds only None")
    out.append(0x40)


def _write_booleans(items: list[Any], out: bytearray) -> None:
    out.append(0x56)
    out += bytes(1 if item else 0 for item in items)


_write_code_points = _packed(0x73, "I")


def _write_chars(items: list[Any], out: bytearray) -> None:
    _write_code_points([ord(item) for item in items], out)


def _raw_elements(code: int, width: int) -> ElementWriter:
    def write(items: list[Any], out: bytearray) -> None:
        out.append(code)
        for item in items:
            data = item.bytes if isinstance(item, uuid.UUID) else item
            if len(data) != width:
                raise EncodeError(f"array element of {len(data)} bytes, expected {width}")
            out += data

    return write


def _sized(code8: int, code32: int, to_bytes: Callable[[Any], bytes]) -> ElementWriter:
    """binary/string/symbol elements: str8-style lengths if every element fits one."""

    def write(items: list[Any], out: bytearray) -> None:
        datas = [to_bytes(item) for item in items]
        if all(len(data) <= 0xFF for data in datas):
            out.append(code8)
            for data in datas:
                out.append(len(data))
                out += data
        else:
            out.append(code32)
            for data in datas:
                out += struct.pack(">I", len(data))
                out += data

    return write


def _as_bytes(item: Any) -> bytes:
    if not isinstance(item, (bytes, bytearray, memoryview)):
        raise EncodeError(f"binary array element given {type(item).__name__}")
    return bytes(item)


def _as_utf8(item: Any) -> bytes:
    if not isinstance(item, str):
        raise EncodeError(f"string/symbol array element given {type(item).__name__}")
    return item.encode()


def _compound_elements(
    code8: int, code32: int, body: Callable[[Any, bytearray], int]
) -> ElementWriter:
    """list/map/array elements: every element's body first, then one width for all."""

    def write(items: list[Any], out: bytearray) -> None:
        bodies = []
        for item in items:
            data = bytearray()
            bodies.append((body(item, data), data))
        if all(count <= 0xFF and len(data) < 0xFF for count, data in bodies):
            out.append(code8)
            for count, data in bodies:
                out += P_BB(len(data) + 1, count)
                out += data
        else:
            out.append(code32)
            for count, data in bodies:
                out += _P_II(len(data) + 4, count)
                out += data

    return write


def _list_body(item: Any, out: bytearray) -> int:
    if isinstance(item, Composite):
        return item._write_fields(out)
    if not isinstance(item, (list, tuple)):
        raise EncodeError(f"list array element given {type(item).__name__}")
    for element in item:
        _encode(element, out)
    return len(item)


def _map_body(item: Any, out: bytearray) -> int:
    if not isinstance(item, Mapping):
        raise EncodeError(f"map array element given {type(item).__name__}")
    for key, value in item.items():
        _encode(key, out)
        _encode(value, out)
    return 2 * len(item)


def _array_element_body(item: Any, out: bytearray) -> int:
    if not isinstance(item, Array):
        raise EncodeError(f"array array element given {type(item).__name__}")
    _array_body(item.element_type, item, item.descriptor, out)
    return len(item)


_ELEMENT_WRITERS: dict[str, ElementWriter] = {
    "null": _write_nulls,
    "boolean": _write_booleans,
    "ubyte": _packed(0x50, "B"),
    "ushort": _packed(0x60, "H"),
    "uint": _narrowing((0x52, "B"), (0x70, "I"), 0, 0xFF),
    "ulong": _narrowing((0x53, "B"), (0x80, "Q"), 0, 0xFF),
    "byte": _packed(0x51, "b"),
    "short": _packed(0x61, "h"),
    "int": _narrowing((0x54, "b"), (0x71, "i"), -0x80, 0x7F),
    "long": _narrowing((0x55, "b"), (0x81, "q"), -0x80, 0x7F),
    "float": _packed(0x72, "f"),
    "double": _packed(0x82, "d"),
    "decimal32": _raw_elements(0x74, 4),
    "decimal64": _raw_elements(0x84, 8),
    "decimal128": _raw_elements(0x94, 16),
    "char": _write_chars,
    "timestamp": _packed(0x83, "q"),
    "uuid": _raw_elements(0x98, 16),
    "binary": _sized(0xA0, 0xB0, _as_bytes),
    "string": _sized(0xA1, 0xB1, _as_utf8),
    "symbol": _sized(0xA3, 0xB3, _as_utf8),
    "list": _compound_elements(0xC0, 0xD0, _list_body),
    "map": _compound_elements(0xC1, 0xD1, _map_body),
    "array": _compound_elements(0xE0, 0xF0, _array_element_body),
}


# ---------------------------------------------------------------------- dispatch
_ENCODERS: dict[type, Encoder] = {
    type(None): enc_null,
    bool: enc_bool,
    UByte: enc_ubyte,
    UShort: enc_ushort,
    UInt: enc_uint,
    ULong: enc_ulong,
    Byte: enc_byte,
    Short: enc_short,
    Int: enc_int,
    Long: enc_long,
    int: enc_long,
    Float32: enc_float,
    float: enc_double,
    Decimal32: enc_decimal32,
    Decimal64: enc_decimal64,
    Decimal128: enc_decimal128,
    Char: enc_char,
    Timestamp: enc_timestamp,
    uuid.UUID: enc_uuid,
    bytes: enc_binary,
    bytearray: enc_binary,
    memoryview: enc_memoryview,
    str: enc_string,
    Symbol: enc_symbol,
    list: _enc_list,
    tuple: _enc_list,
    dict: _enc_map,
    Array: _enc_array,
    Described: _enc_described,
    Composite: _enc_composite,
    Restricted: _enc_restricted,
}


def _resolve(kind: type, value: Any) -> Encoder:
    """The encoder of the nearest base class (an IntEnum goes out as a long, a composite class
    as a composite), remembered for next time."""
    for base in kind.__mro__[1:]:
        encoder = _ENCODERS.get(base)
        if encoder is not None:
            break
    else:
        if not isinstance(value, Mapping):
            raise EncodeError(f"no AMQP encoding for {kind.__name__}")
        encoder = _enc_map
    _ENCODERS[kind] = encoder
    return encoder


def _encode(value: Any, out: bytearray) -> None:
    kind = type(value)
    encoder = _ENCODERS.get(kind) or _resolve(kind, value)
    encoder(value, out)


# encode_into without its error wrapping, for writers that wrap errors themselves (fields).
write_value = _encode


def _failed(value: Any, exc: Exception) -> EncodeError:
    if isinstance(exc, EncodeError):
        return exc
    if isinstance(exc, RecursionError):
        return EncodeError("value nested too deeply (or contains itself)")
    return EncodeError(f"cannot encode {type(value).__name__}: {exc}")


_FAILURES = (TypeError, ValueError, OverflowError, AttributeError, struct.error, RecursionError)


def encode_into(value: Any, out: bytearray) -> None:
    """Append the encoding of `value`; on EncodeError `out` is left as it was."""
    start = len(out)
    try:
        _encode(value, out)
    except _FAILURES as exc:
        del out[start:]
        raise _failed(value, exc) from exc


def encode(value: Any) -> bytes:
    """The encoding of `value`."""
    out = bytearray()
    encode_into(value, out)
    return bytes(out)


# ---------------------------------------------------------------------- typed (fields)
def _guarded(encoder: Encoder, kinds: type | tuple[type, ...], name: str) -> Encoder:
    """`encoder` for a field declared as `name`: a value of another kind is refused with a
    message naming the type, rather than failing somewhere in struct."""

    def encode_typed(value: Any, out: bytearray) -> None:
        if not isinstance(value, kinds):
            raise EncodeError(f"{name} given {type(value).__name__}: {value!r}")
        encoder(value, out)

    return encode_typed


_BINARY = (bytes, bytearray, memoryview)

TYPED_ENCODERS: dict[str, Encoder] = {
    "null": enc_null,
    "boolean": enc_bool,
    "ubyte": _guarded(enc_ubyte, int, "ubyte"),
    "ushort": _guarded(enc_ushort, int, "ushort"),
    "uint": _guarded(enc_uint, int, "uint"),
    "ulong": _guarded(enc_ulong, int, "ulong"),
    "byte": _guarded(enc_byte, int, "byte"),
    "short": _guarded(enc_short, int, "short"),
    "int": _guarded(enc_int, int, "int"),
    "long": _guarded(enc_long, int, "long"),
    "float": _guarded(enc_float, (int, float), "float"),
    "double": _guarded(enc_double, (int, float), "double"),
    "decimal32": _guarded(enc_decimal32, bytes, "decimal32"),
    "decimal64": _guarded(enc_decimal64, bytes, "decimal64"),
    "decimal128": _guarded(enc_decimal128, bytes, "decimal128"),
    "char": _guarded(enc_char, str, "char"),
    "timestamp": _guarded(enc_timestamp, int, "timestamp"),
    "uuid": _guarded(enc_uuid, uuid.UUID, "uuid"),
    "binary": _guarded(lambda v, out: enc_binary(bytes(v), out), _BINARY, "binary"),
    "string": _guarded(enc_string, str, "string"),
    "symbol": _guarded(enc_symbol, str, "symbol"),
    "list": _guarded(_enc_list, (list, tuple), "list"),
    "map": _guarded(_enc_map, Mapping, "map"),
    "array": _guarded(_enc_array, Array, "array"),
}


def encode_as(type_name: str, value: Any) -> bytes:
    """`value` encoded as the primitive type `type_name` (a plain int as a uint, say)."""
    encoder = TYPED_ENCODERS.get(type_name)
    if encoder is None:
        raise EncodeError(f"not a primitive type: {type_name!r}")
    out = bytearray()
    try:
        encoder(value, out)
    except _FAILURES as exc:
        raise _failed(value, exc) from exc
    return bytes(out)
