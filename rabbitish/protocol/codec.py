"""0-9-1 wire knowledge the engine borrows: the PropertyCodec over raw content properties, and the
wire type names of declare arguments (RabbitMQ's error texts name them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rabbitish.engine.message import Message, parse_expiration
from rabbitish.protocol import properties
from rabbitish.protocol.field_types import table_types
from rabbitish.protocol.json_properties import encode_properties


class Amqp091Codec:
    """PropertyCodec for messages whose properties are 0-9-1 content-header bytes."""

    # CC and BCC as field-table keys: a length octet, then the name.
    sender_selected_marks = (b"\x02CC", b"\x03BCC")

    def headers(self, raw: bytes) -> dict[str, Any]:
        return properties.headers(raw)

    def with_headers(
        self,
        raw: bytes,
        updates: dict[str, Any],
        remove: Iterable[str] = (),
        sort_keys: bool = False,
    ) -> bytes:
        return properties.with_headers(raw, updates, remove, sort_keys)

    def expiration(self, raw: bytes) -> str | None:
        return properties.PropertyInfo(raw).expiration

    def with_expiration(self, raw: bytes, expiration: str | None) -> bytes:
        return properties.with_shortstr(raw, properties.EXPIRATION, expiration)

    def new_message(self, exchange: str, routing_key: str, raw: bytes, body: bytes) -> Message:
        return message_from_properties(
            exchange, routing_key, raw, body, properties.PropertyInfo(raw)
        )

    def to_json(self, raw: bytes) -> dict[str, Any]:
        return properties.decode_all(raw)

    def to_fields(self, raw: bytes) -> dict[str, Any]:
        fields = properties.decode_all(raw)
        if "headers" in fields:
            fields["headers"] = properties.typed_headers(raw)
        return fields

    def from_fields(self, fields: dict[str, Any]) -> bytes:
        headers = fields.get("headers")
        raw = properties.encode_properties(**{k: v for k, v in fields.items() if k != "headers"})
        if headers is None:
            return raw
        return properties.with_headers(raw, headers)

    def from_json(self, props: dict[str, Any]) -> bytes:
        return encode_properties(props)


CODEC = Amqp091Codec()


def message_from_properties(
    exchange: str,
    routing_key: str,
    raw_properties: bytes,
    body: bytes,
    info: properties.PropertyInfo,
) -> Message:
    """A message whose persistence, priority and TTL come from its content properties, already
    read into `info` (basic.publish reads them once for its own checks too)."""
    expiration_ms = None
    if info.expiration is not None:
        expiration_ms = parse_expiration(info.expiration)
    return Message(
        exchange,
        routing_key,
        raw_properties,
        body,
        CODEC,
        persistent=info.delivery_mode == 2,
        priority=info.priority,
        expiration_ms=expiration_ms,
    )


# Method (class, method) -> (short strings before the table, whether a bits octet precedes it).
_TABLE_LAYOUT = {
    (40, 10): (2, True),  # exchange.declare
    (40, 30): (3, True),  # exchange.bind
    (40, 40): (3, True),  # exchange.unbind
    (50, 10): (1, True),  # queue.declare
    (50, 20): (3, True),  # queue.bind
    (50, 50): (3, False),  # queue.unbind
    (60, 20): (2, True),  # basic.consume
}


def argument_types(payload: bytes) -> dict[str, str]:
    """Wire type names of the `arguments` table of a declare/bind/consume method payload."""
    layout = _TABLE_LAYOUT.get(
        (int.from_bytes(payload[0:2], "big"), int.from_bytes(payload[2:4], "big"))
    )
    if layout is None:
        return {}
    strings, has_bits = layout
    pos = 6  # class, method, reserved short
    try:
        for _ in range(strings):
            pos += 1 + payload[pos]
        if has_bits:
            pos += 1
        return table_types(payload[pos:])
    except IndexError:
        return {}
