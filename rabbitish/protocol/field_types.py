"""The 0-9-1 field value types RabbitMQ reads in field tables and arrays: for each tag octet,
RabbitMQ's name for the type (its error texts name it) and how long a value is. The method
decoder's table check, the raw-property splicer and the argument type names all walk encoded
tables with this one table. pamqp decodes the values; it does not check their bounds."""

from __future__ import annotations

import struct
from dataclasses import dataclass


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
    return pos + 5 + _u32.unpack_from(buf, pos + 1)[0]


def check_table(buf: bytes, pos: int, end: int) -> None:
    """Walk a field table's entries between pos and end: every key and value must lie inside,
    nested tables and arrays too. Raises ValueError otherwise."""
    while pos < end:
        pos += 1 + buf[pos]
        if pos >= end:
            raise ValueError("table entry runs past the end")
        pos = _check_value(buf, pos, end)


def _check_value(buf: bytes, pos: int, end: int) -> int:
    tag = buf[pos]
    size = _field_type(tag).size
    if size is not None:
        pos += 1 + size
    else:
        start = pos + 5
        if start > end:
            raise ValueError("field length runs past the end")
        pos = start + _u32.unpack_from(buf, pos + 1)[0]
        if tag == TABLE and pos <= end:
            check_table(buf, start, pos)
        elif tag == ARRAY and pos <= end:
            item = start
            while item < pos:
                item = _check_value(buf, item, pos)
    if pos > end:
        raise ValueError("field value runs past the end")
    return pos


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
