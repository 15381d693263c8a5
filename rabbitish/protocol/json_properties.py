"""0-9-1 content properties to and from JSON, as RabbitMQ's management API writes and reads them:
header values get the types RabbitMQ gives JSON values (integers long, strings longstr, numbers
double). Errors carry the reason RabbitMQ's API reports."""

from __future__ import annotations

import struct
from typing import Any

from rabbitish.engine.message import PropertyError
from rabbitish.protocol import properties

_SHORTSTR = (
    (properties.CONTENT_TYPE, "content_type"),
    (properties.CONTENT_ENCODING, "content_encoding"),
)
_AFTER_HEADERS: tuple[tuple[int, str, str], ...] = (
    (properties.DELIVERY_MODE, "delivery_mode", "o"),
    (properties.PRIORITY, "priority", "o"),
    (properties.CORRELATION_ID, "correlation_id", "s"),
    (properties.REPLY_TO, "reply_to", "s"),
    (properties.EXPIRATION, "expiration", "s"),
    (properties.MESSAGE_ID, "message_id", "s"),
    (properties.TIMESTAMP, "timestamp", "q"),
    (properties.TYPE, "type", "s"),
    (properties.USER_ID, "user_id", "s"),
    (properties.APP_ID, "app_id", "s"),
    (properties.CLUSTER_ID, "cluster_id", "s"),
)
_INT_FIELDS = ("delivery_mode", "priority", "timestamp")


def encode_properties(props: dict[str, Any]) -> bytes:
    """JSON properties as content-header property bytes."""
    if not isinstance(props, dict):
        raise PropertyError("properties must be a JSON object")
    for name in _INT_FIELDS:
        if name in props and (not isinstance(props[name], int) or isinstance(props[name], bool)):
            raise PropertyError(["not_int", name])
    flags = 0
    parts: list[bytes] = []
    for flag, name in _SHORTSTR:
        if props.get(name) is not None:
            flags |= flag
            parts.append(_shortstr(props[name]))
    headers = props.get("headers")
    if headers is not None:
        if not isinstance(headers, dict):
            raise PropertyError("headers must be a JSON object")
        flags |= properties.HEADERS
        parts.append(_table(headers))
    for flag, name, kind in _AFTER_HEADERS:
        value = props.get(name)
        if value is None:
            continue
        flags |= flag
        if kind == "s":
            parts.append(_shortstr(value))
        elif kind == "o":
            parts.append(bytes([value & 0xFF]))
        else:
            parts.append(struct.pack(">Q", value))
    return struct.pack(">H", flags) + b"".join(parts)


def _shortstr(value: Any) -> bytes:
    data = str(value).encode()[:255]
    return bytes([len(data)]) + data


def _table(table: dict[str, Any]) -> bytes:
    body = b"".join(_shortstr(key) + _value(value) for key, value in table.items())
    return struct.pack(">I", len(body)) + body


def _value(value: Any) -> bytes:
    if value is None:
        raise PropertyError("null_not_allowed")
    if isinstance(value, bool):
        return b"t" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"l" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"d" + struct.pack(">d", value)
    if isinstance(value, str):
        data = value.encode()
        return b"S" + struct.pack(">I", len(data)) + data
    if isinstance(value, dict):
        return b"F" + _table(value)
    if isinstance(value, list):
        body = b"".join(_value(v) for v in value)
        return b"A" + struct.pack(">I", len(body)) + body
    raise PropertyError(f"unsupported header value {value!r}")
