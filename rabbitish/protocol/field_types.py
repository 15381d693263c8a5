"""The 0-9-1 field value types RabbitMQ reads in field tables and arrays: for each tag octet,
RabbitMQ's name for the type (its error texts name it) and how long a value is. The method
decoder's table check, the raw-property splicer and the argument type names all walk encoded
tables with this one table. pamqp decodes the values; it does not check their bounds, and it
forgets their types, so values another protocol maps from are read and written here as
FieldValues (the type kept: a ubyte stays a ubyte)."""

from __future__ import annotations

import decimal
import struct
from dataclasses import dataclass
from typing import Any

from rabbitish.engine.message import FieldValue


@dataclass(frozen=True, slots=True)
class FieldType:
    name: str
    size: int | None  # octets after the tag; None: a 32-bit length, then that many octets


FIELD_TYPES: dict[int, FieldType] = {
    ord(tag): FieldType(name, size)
    for tag, name, size in (
        ("t", "bool", 1),
        ("b", "byte", 1),
        ("B", "unsignedbyte", 1),
        ("s", "short", 2),
        ("U", "short", 2),
        ("u", "unsignedshort", 2),
        ("I", "signedint", 4),
        ("i", "unsignedint", 4),
        ("l", "long", 8),
        ("L", "long", 8),
        ("f", "float", 4),
        ("d", "double", 8),
        ("D", "decimal", 5),
        ("T", "timestamp", 8),
        ("V", "void", 0),
        ("S", "longstr", None),
        ("x", "binary", None),
        ("A", "array", None),
        ("F", "table", None),
    )
}
TABLE = ord("F")
ARRAY = ord("A")
MAX_DEPTH = 64  # nesting kept as Python values; deeper tables and arrays stay encoded


class DeepValue(bytes):
    """A table or array nested deeper than MAX_DEPTH, kept as its encoded typed value (tag
    included) so nothing that walks decoded values recurses deeper than that. Compares and
    hashes as those bytes, and is written back byte for byte."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return FIELD_TYPES[self[0]].name


_u32 = struct.Struct(">I")


def _field_type(tag: int) -> FieldType:
    field = FIELD_TYPES.get(tag)
    if field is None:
        raise ValueError(f"unknown field type {tag}")
    return field


def value_end(buf: bytes, pos: int) -> int:
    """End of the typed value whose tag is at `pos`, trusting its length (see check_table)."""
    size = _field_type(buf[pos]).size
    if size is not None:
        return pos + 1 + size
    length: int = _u32.unpack_from(buf, pos + 1)[0]
    return pos + 5 + length


def check_table(buf: bytes, pos: int, end: int, utf8_keys: bool = False) -> None:
    """Walk a field table's entries between pos and end: every key and value must lie inside,
    nested tables and arrays too (iteratively: any depth), and with `utf8_keys` every key must
    be UTF-8. Raises ValueError otherwise."""
    check_contents(buf, pos, end, True, utf8_keys)


def check_contents(buf: bytes, pos: int, end: int, table: bool, utf8_keys: bool = False) -> None:
    """check_table for the contents of a table (`table`) or an array between pos and end."""
    stack = [(table, end)]  # open containers: (is a table, where its bytes end)
    while stack:
        in_table, stop = stack[-1]
        if pos >= stop:
            stack.pop()
            continue
        if in_table:
            key_end = pos + 1 + buf[pos]
            if key_end >= stop:
                raise ValueError("table entry runs past the end")
            if utf8_keys:
                bytes(buf[pos + 1 : key_end]).decode("utf-8")
            pos = key_end
        tag = buf[pos]
        size = _field_type(tag).size
        if size is not None:
            pos += 1 + size
            if pos > stop:
                raise ValueError("field value runs past the end")
            continue
        start = pos + 5
        if start > stop:
            raise ValueError("field length runs past the end")
        pos = start + _u32.unpack_from(buf, pos + 1)[0]
        if pos > stop:
            raise ValueError("field value runs past the end")
        if tag in (TABLE, ARRAY):
            stack.append((tag == TABLE, pos))
            pos = start


def raw_entries(table: bytes) -> list[tuple[bytes, bytes]]:
    """Split an encoded field table (with its length prefix) into (encoded key with its length
    octet, encoded typed value) pairs, byte-exact."""
    entries: list[tuple[bytes, bytes]] = []
    size = _u32.unpack_from(table, 0)[0]
    pos, end = 4, 4 + size
    while pos < end:
        vstart = pos + 1 + table[pos]
        vend = value_end(table, vstart)
        entries.append((table[pos:vstart], table[vstart:vend]))
        pos = vend
    return entries


def table_types(table: bytes) -> dict[str, str]:
    """Key -> type name for an encoded field table (with its length prefix); {} when the table
    does not parse."""
    try:
        return {
            key[1:].decode("utf-8", "replace"): FIELD_TYPES[value[0]].name
            for key, value in raw_entries(table)
        }
    except (IndexError, ValueError):
        return {}


# Fixed-size values: struct format per tag. Timestamps are unsigned seconds, as RabbitMQ reads.
_FORMATS = {
    ord(tag): struct.Struct(fmt)
    for tag, fmt in (
        *(("t", ">B"), ("b", ">b"), ("B", ">B"), ("s", ">h"), ("U", ">h"), ("u", ">H")),
        *(("I", ">i"), ("i", ">I"), ("l", ">q"), ("L", ">q"), ("f", ">f"), ("d", ">d")),
        ("T", ">Q"),
    )
}
_DECIMAL = struct.Struct(">Bi")
# Kind -> the tag RabbitMQ writes for it ('s' and 'l', not their aliases 'U' and 'L').
_TAGS = {
    **{field.name: tag for tag, field in reversed(FIELD_TYPES.items())},
    "short": ord("s"),
    "long": ord("l"),
}


def typed_table(table: bytes, depth: int = 0) -> dict[str, FieldValue]:
    """An encoded field table (with its length prefix) as FieldValues, types kept."""
    return {
        key[1:].decode("utf-8", "replace"): typed_value(value, 0, depth)[0]
        for key, value in raw_entries(table)
    }


def typed_value(buf: bytes, pos: int, depth: int = 0) -> tuple[FieldValue, int]:
    """The typed value whose tag is at `pos`, and where it ends. Tables and arrays more than
    MAX_DEPTH levels down stay encoded (DeepValue)."""
    tag = buf[pos]
    kind = _field_type(tag).name
    end = value_end(buf, pos)
    value: Any
    if tag in (TABLE, ARRAY) and depth >= MAX_DEPTH:
        value = DeepValue(buf[pos:end])
    elif tag == TABLE:
        value = typed_table(buf[pos + 1 : end], depth + 1)
    elif tag == ARRAY:
        value, item = [], pos + 5
        while item < end:
            element, item = typed_value(buf, item, depth + 1)
            value.append(element)
    elif tag in _FORMATS:
        value = _FORMATS[tag].unpack_from(buf, pos + 1)[0]
        if tag == ord("t"):
            value = bool(value)
    elif tag == ord("D"):
        scale, unscaled = _DECIMAL.unpack_from(buf, pos + 1)
        value = decimal.Decimal(unscaled).scaleb(-scale)
    elif tag == ord("V"):
        value = None
    else:  # longstr, binary
        value = bytes(buf[pos + 5 : end])
    return FieldValue(kind, value), end


def encode_typed(field: FieldValue) -> bytes:
    """A FieldValue as a typed field value, with the tag its kind names. Raises ValueError for
    a value its type cannot hold."""
    tag = _TAGS[field.kind]
    value = field.value
    if isinstance(value, DeepValue):
        return bytes(value)
    if tag in _FORMATS:
        try:
            return bytes([tag]) + _FORMATS[tag].pack(value)
        except struct.error as exc:
            raise ValueError(f"{field.kind} out of range: {value!r}") from exc
    if tag == ord("D"):
        return bytes([tag]) + _encode_decimal(value)
    if tag == ord("V"):
        return b"V"
    if tag == TABLE:
        body = b"".join(
            bytes([len(name)]) + name + encode_typed(item)
            for name, item in ((k.encode(), v) for k, v in value.items())
        )
    elif tag == ARRAY:
        body = b"".join(encode_typed(item) for item in value)
    else:
        body = bytes(value)
    return bytes([tag]) + _u32.pack(len(body)) + body


def _encode_decimal(value: decimal.Decimal) -> bytes:
    """0-9-1's decimal: a scale octet (digits after the point) and a signed 32-bit integer."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int):
        raise ValueError(f"no 0-9-1 decimal for {value}")
    scale = max(0, -exponent)
    unscaled = int(value.scaleb(scale))
    if scale > 255 or not -(1 << 31) <= unscaled < 1 << 31:
        raise ValueError(f"no 0-9-1 decimal for {value}")
    return _DECIMAL.pack(scale, unscaled)
