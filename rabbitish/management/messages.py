"""Getting and publishing messages over HTTP, the way RabbitMQ's management plugin does it: a
get takes messages with basic.get semantics and then settles them by `ackmode` (requeued ones go
back to their original place), and a publish is routed like basic.publish."""

from __future__ import annotations

import base64
import binascii
import struct
from typing import TYPE_CHECKING, Any

from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.message import Message
from rabbitish.management.errors import ApiError, bad_request
from rabbitish.management.format import jsonable
from rabbitish.protocol import properties
from rabbitish.protocol.basic import message_from_properties

if TYPE_CHECKING:
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

ACKMODES = ("ack_requeue_true", "reject_requeue_true", "ack_requeue_false", "reject_requeue_false")
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


# ---------------------------------------------------------------------- get
def get_messages(
    queue: Queue, count: int, ackmode: str, encoding: str, truncate: int | None
) -> list[dict[str, Any]]:
    """Take up to `count` messages, render them, then settle them all as `ackmode` says."""
    taken = []
    rendered = []
    for _ in range(max(count, 0)):
        got = queue.get(no_ack=False)
        if got is None:
            break
        entry, redelivered = got
        taken.append(entry)
        rendered.append(
            _render(entry.message, redelivered, queue.message_count, encoding, truncate)
        )
    if ackmode.endswith("requeue_true"):
        queue.requeue(taken)
    elif ackmode == "ack_requeue_false":
        for entry in taken:
            queue.ack(entry)
    else:
        queue.discard(taken)
    return rendered


def _render(
    message: Message, redelivered: bool, remaining: int, encoding: str, truncate: int | None
) -> dict[str, Any]:
    body = message.body
    payload = body if truncate is None else body[:truncate]
    props = jsonable(properties.decode_all(message.raw_properties))
    return {
        "payload_bytes": len(body),
        "redelivered": redelivered,
        "exchange": message.exchange,
        "routing_key": message.routing_key,
        "message_count": remaining,
        # RabbitMQ renders "no properties" as an empty Erlang list, i.e. [].
        "properties": props or [],
        **encode_payload(payload, encoding),
    }


def encode_payload(payload: bytes, encoding: str) -> dict[str, str]:
    """`auto`: the text when the bytes are UTF-8, else base64 (as RabbitMQ decides)."""
    if encoding == "auto":
        try:
            return {"payload": payload.decode("utf-8"), "payload_encoding": "string"}
        except UnicodeDecodeError:
            pass
    return {"payload": base64.b64encode(payload).decode(), "payload_encoding": "base64"}


# ---------------------------------------------------------------------- publish
def publish(
    vhost: VirtualHost,
    exchange_name: str,
    routing_key: str,
    props: dict[str, Any],
    payload: bytes,
    user: str,
) -> bool:
    """Route one message like basic.publish; True when it reached at least one queue."""
    exchange = vhost.publish_exchange(exchange_name)
    raw = encode_properties(props)
    info = properties.PropertyInfo(raw)
    user_id = props.get("user_id")
    if user_id is not None and str(user_id) != user:
        raise precondition_failed(
            f"user_id property set to '{user_id}' but authenticated user was '{user}'"
        )
    message = message_from_properties(exchange_name, routing_key, raw, payload, info)
    queues = vhost.route(exchange, routing_key, message)
    for queue in queues:
        queue.enqueue(message)
    return bool(queues)


def decode_payload(payload: Any, encoding: Any) -> bytes:
    if encoding == "string":
        return str(payload).encode()
    if encoding == "base64":
        try:
            return base64.b64decode(str(payload), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(["not_base64", payload]) from None
    raise bad_request(["unsupported_encoding", encoding])


def encode_properties(props: dict[str, Any]) -> bytes:
    """JSON properties as 0-9-1 content-header property bytes; header values get the types
    RabbitMQ gives JSON values (integers long, strings longstr, numbers double)."""
    if not isinstance(props, dict):
        raise ApiError(400, "bad_request", "properties must be a JSON object")
    for name in _INT_FIELDS:
        if name in props and (not isinstance(props[name], int) or isinstance(props[name], bool)):
            raise bad_request(["not_int", name])
    flags = 0
    parts: list[bytes] = []
    for flag, name in _SHORTSTR:
        if props.get(name) is not None:
            flags |= flag
            parts.append(_shortstr(props[name]))
    headers = props.get("headers")
    if headers is not None:
        if not isinstance(headers, dict):
            raise ApiError(400, "bad_request", "headers must be a JSON object")
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
        raise bad_request("null_not_allowed")
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
    raise bad_request(f"unsupported header value {value!r}")
