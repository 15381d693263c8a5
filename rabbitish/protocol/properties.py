"""Content properties kept as the raw bytes the publisher sent. The broker reads a few fields
(delivery mode, priority, expiration, headers) by walking the bytes, and when it must change a
field (x-death, direct reply-to) it splices that one field, so everything else stays byte-exact.
pamqp re-encodes field tables lossily, so it is used only for values the broker itself writes."""

from __future__ import annotations

import calendar
import datetime
import struct
from collections.abc import Iterable
from typing import Any

from pamqp import encode

from rabbitish.engine.message import FieldValue
from rabbitish.protocol.field_tables import decode_table, encode_table
from rabbitish.protocol.field_types import (
    DeepValue,
    check_table,
    encode_typed,
    raw_entries,
    typed_table,
)

CONTENT_TYPE = 0x8000
CONTENT_ENCODING = 0x4000
HEADERS = 0x2000
DELIVERY_MODE = 0x1000
PRIORITY = 0x0800
CORRELATION_ID = 0x0400
REPLY_TO = 0x0200
EXPIRATION = 0x0100
MESSAGE_ID = 0x0080
TIMESTAMP = 0x0040
TYPE = 0x0020
USER_ID = 0x0010
APP_ID = 0x0008
CLUSTER_ID = 0x0004

# Field order and encoding: 's' shortstr, 't' table, 'o' octet, 'q' longlong.
_FIELDS: tuple[tuple[int, str, str], ...] = (
    (CONTENT_TYPE, "content_type", "s"),
    (CONTENT_ENCODING, "content_encoding", "s"),
    (HEADERS, "headers", "t"),
    (DELIVERY_MODE, "delivery_mode", "o"),
    (PRIORITY, "priority", "o"),
    (CORRELATION_ID, "correlation_id", "s"),
    (REPLY_TO, "reply_to", "s"),
    (EXPIRATION, "expiration", "s"),
    (MESSAGE_ID, "message_id", "s"),
    (TIMESTAMP, "timestamp", "q"),
    (TYPE, "type", "s"),
    (USER_ID, "user_id", "s"),
    (APP_ID, "app_id", "s"),
    (CLUSTER_ID, "cluster_id", "s"),
)
_BY_FLAG = {flag: (name, kind) for flag, name, kind in _FIELDS}

_u16 = struct.Struct(">H")
_u32 = struct.Struct(">I")


def _field_end(raw: bytes, pos: int, kind: str) -> int:
    """Where the field starting at `pos` ends; ValueError when its size is not there."""
    if kind == "s":
        if pos >= len(raw):
            raise ValueError("content header properties are truncated")
        return pos + 1 + raw[pos]
    if kind == "t":
        if pos + 4 > len(raw):
            raise ValueError("content header properties are truncated")
        length: int = _u32.unpack_from(raw, pos)[0]
        return pos + 4 + length
    if kind == "o":
        return pos + 1
    return pos + 8


Spans = dict[int, tuple[int, int]]
# Per flags word: the (flag, kind) of the fields present, and when all of them have a fixed
# size (delivery mode, priority, timestamp: the usual case) their spans and end, the same for
# every message. At most 2**15 flag words exist, so the cache is bounded.
_LAYOUTS: dict[int, tuple[tuple[tuple[int, str], ...], tuple[Spans, int] | None]] = {}


def _layout(flags: int) -> tuple[tuple[tuple[int, str], ...], tuple[Spans, int] | None]:
    fields = tuple((flag, kind) for flag, _name, kind in _FIELDS if flags & flag)
    if any(kind in "st" for _flag, kind in fields):
        return fields, None
    spans: Spans = {}
    pos = 2
    for flag, kind in fields:
        spans[flag] = (pos, pos + (1 if kind == "o" else 8))
        pos = spans[flag][1]
    return fields, (spans, pos)


def spans(raw: bytes) -> tuple[int, Spans]:
    """Return (flags, {flag: (start, end)}) for the fields present (a dict the caller must not
    change: it may be shared). Raises ValueError on bytes that do not hold the fields their
    flags announce."""
    flags, found, _end = _spans(raw)
    return flags, found


def _spans(raw: bytes) -> tuple[int, Spans, int]:
    """`spans`, and where the last field ends."""
    if len(raw) < 2:
        raise ValueError("content header property flags are missing")
    flags = _u16.unpack_from(raw, 0)[0]
    if flags & 1:  # continuation flag words: none are defined for class basic
        raise ValueError("unexpected property flag continuation")
    layout = _LAYOUTS.get(flags)
    if layout is None:
        layout = _LAYOUTS[flags] = _layout(flags)
    fields, fixed = layout
    if fixed is not None:
        if fixed[1] > len(raw):
            raise ValueError("content header properties are truncated")
        return flags, fixed[0], fixed[1]
    found: Spans = {}
    pos = 2
    for flag, kind in fields:
        end = _field_end(raw, pos, kind)
        if end > len(raw):
            raise ValueError("content header properties are truncated")
        found[flag] = (pos, end)
        pos = end
    return flags, found, pos


def validate(raw: bytes) -> dict[int, tuple[int, int]]:
    """Check that raw properties are well formed, as RabbitMQ decodes them at publish: every
    field its flags announce is there, nothing follows the last one, field tables parse. So
    malformed input is refused at publish time rather than breaking a consumer later. Raises
    ValueError; returns the fields' spans (see `spans`) for PropertyInfo to reuse."""
    _flags, found, end = _spans(raw)
    if end != len(raw):
        raise ValueError("content header properties have trailing bytes")
    if HEADERS in found:
        start, end = found[HEADERS]
        check_table(raw, start + 4, end, utf8_keys=True)
    return found


class PropertyInfo:
    """The few fields the broker acts on, read once per published message."""

    __slots__ = ("delivery_mode", "expiration", "priority", "reply_to")

    def __init__(self, raw: bytes, found: dict[int, tuple[int, int]] | None = None) -> None:
        """`found`: the spans of `raw` when the caller has them already (from validate)."""
        self.delivery_mode = 0
        self.priority = 0
        self.expiration: str | None = None
        self.reply_to: str | None = None
        if len(raw) < 2:
            return
        flags = _u16.unpack_from(raw, 0)[0]
        if not flags & (DELIVERY_MODE | PRIORITY | EXPIRATION | REPLY_TO):
            return
        if found is None:
            _flags, found = spans(raw)
        if DELIVERY_MODE in found:
            self.delivery_mode = raw[found[DELIVERY_MODE][0]]
        if PRIORITY in found:
            self.priority = raw[found[PRIORITY][0]]
        if EXPIRATION in found:
            start, end = found[EXPIRATION]
            self.expiration = raw[start + 1 : end].decode("utf-8", "replace")
        if REPLY_TO in found:
            start, end = found[REPLY_TO]
            self.reply_to = raw[start + 1 : end].decode("utf-8", "replace")


def headers(raw: bytes) -> dict[str, Any]:
    """Decode the headers table (empty dict when absent)."""
    if len(raw) < 2 or not _u16.unpack_from(raw, 0)[0] & HEADERS:
        return {}
    _flags, found = spans(raw)
    start, end = found[HEADERS]
    return decode_table(raw, start + 4, end)


def typed_headers(raw: bytes) -> dict[str, FieldValue]:
    """The headers table with every value's type kept (empty dict when absent)."""
    if len(raw) < 2 or not _u16.unpack_from(raw, 0)[0] & HEADERS:
        return {}
    _flags, found = spans(raw)
    start, end = found[HEADERS]
    return typed_table(raw[start:end])


def _encode_value(value: Any) -> bytes:
    """A typed field value the way RabbitMQ writes the values it creates itself: integers as
    'l' (long), strings as 'S', times as 'T' seconds, nested tables and arrays likewise; a
    FieldValue with the type it names."""
    if isinstance(value, FieldValue):
        return encode_typed(value)
    if isinstance(value, DeepValue):
        return bytes(value)
    if isinstance(value, bool):
        return b"t" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"l" + struct.pack(">q", value)
    if isinstance(value, str):
        data = value.encode()
        return b"S" + _u32.pack(len(data)) + data
    if isinstance(value, bytes | bytearray):
        return b"x" + _u32.pack(len(value)) + bytes(value)
    if isinstance(value, datetime.datetime):
        return b"T" + struct.pack(">Q", calendar.timegm(value.utctimetuple()))
    if isinstance(value, dict):
        return b"F" + _encode_table_body(value)
    if isinstance(value, list | tuple):
        body = b"".join(_encode_value(v) for v in value)
        return b"A" + _u32.pack(len(body)) + body
    if value is None:
        return b"V"
    # floats, decimals: pamqp's encoding (encode a one-entry table and strip the key)
    return encode.field_table({"k": value})[4 + 2 :]


def _encode_table_body(table: dict[str, Any]) -> bytes:
    body = b"".join(_encode_key(k) + _encode_value(v) for k, v in table.items())
    return _u32.pack(len(body)) + body


def _encode_key(key: str) -> bytes:
    data = key.encode()
    return bytes([len(data)]) + data


def _replace(raw: bytes, flag: int, field_bytes: bytes | None) -> bytes:
    """Set (or, with None, remove) one property, keeping every other byte as it was."""
    flags, found = spans(raw)
    if flag in found:
        start, end = found[flag]
    else:
        # Insert at the position the field would occupy in flag order.
        start = 2
        for f, _name, _kind in _FIELDS:
            if f == flag:
                break
            if f in found:
                start = found[f][1]
        end = start
    if field_bytes is None:
        flags &= ~flag
        field_bytes = b""
    else:
        flags |= flag
    return _u16.pack(flags) + raw[2:start] + field_bytes + raw[end:]


def with_headers(
    raw: bytes,
    updates: dict[str, Any],
    remove: Iterable[str] = (),
    sort_keys: bool = False,
) -> bytes:
    """Return raw properties whose headers table has `updates` set (in place if present, else
    appended) and `remove` dropped; all other headers keep their exact bytes. With `sort_keys`
    the entries are ordered by key bytes, as RabbitMQ leaves a table it has edited."""
    _flags, found = spans(raw)
    if HEADERS in found:
        start, end = found[HEADERS]
        entries = raw_entries(raw[start:end])
    else:
        entries = []
    dropped = {_encode_key(k) for k in remove}
    out: list[tuple[bytes, bytes]] = []
    pending = {_encode_key(k): v for k, v in updates.items()}
    for key, value in entries:
        if key in dropped:
            continue
        if key in pending:
            out.append((key, _encode_value(pending.pop(key))))
        else:
            out.append((key, value))
    out.extend((key, _encode_value(value)) for key, value in pending.items())
    if sort_keys:
        out.sort(key=lambda item: item[0][1:])
    body = b"".join(k + v for k, v in out)
    return _replace(raw, HEADERS, _u32.pack(len(body)) + body)


def with_delivery_count(raw: bytes, returns: int) -> bytes:
    """A quorum queue's delivery says how often the message came back: x-delivery-count, a
    long, as RabbitMQ 3.10 adds it (on every basic.get, on consumer redeliveries)."""
    return with_headers(raw, {"x-delivery-count": returns})


def with_shortstr(raw: bytes, flag: int, value: str | None) -> bytes:
    """Set or remove a shortstr property (reply_to, expiration ...)."""
    if value is None:
        return _replace(raw, flag, None)
    data = value.encode()
    return _replace(raw, flag, bytes([len(data)]) + data)


def encode_properties(**fields: Any) -> bytes:
    """Encode properties from scratch (used for messages the broker creates itself)."""
    flags = 0
    parts: list[bytes] = []
    for flag, name, kind in _FIELDS:
        value = fields.get(name)
        if value is None:
            continue
        flags |= flag
        if kind == "s":
            data = value.encode()
            parts.append(bytes([len(data)]) + data)
        elif kind == "t":
            parts.append(encode_table(value))
        elif kind == "o":
            parts.append(bytes([value]))
        else:
            parts.append(struct.pack(">Q", value))
    return _u16.pack(flags) + b"".join(parts)


def decode_all(raw: bytes) -> dict[str, Any]:
    """Every present property as Python values (for inspection, not for forwarding)."""
    _flags, found = spans(raw)
    result: dict[str, Any] = {}
    for flag, (start, end) in found.items():
        name, kind = _BY_FLAG[flag]
        if kind == "s":
            result[name] = raw[start + 1 : end].decode("utf-8", "replace")
        elif kind == "t":
            result[name] = decode_table(raw, start + 4, end)
        elif kind == "o":
            result[name] = raw[start]
        else:
            result[name] = struct.unpack_from(">Q", raw, start)[0]
    return result
