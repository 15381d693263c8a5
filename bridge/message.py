"""AMQP 1.0 messages to and from the engine's messages, as RabbitMQ's 3.x 1.0 plugin maps them:
header durable <-> delivery-mode 2, priority, ttl <-> expiration; the properties section's
fields to the 0-9-1 properties of the same meaning (creation-time ms <-> timestamp s);
application-properties <-> headers. A message whose body is one data section keeps exactly those
bytes as its body; any other body (amqp-value, amqp-sequence, several data sections) travels as
its encoded sections with type "amqp-1.0", and a 1.0 receiver gets those sections back as sent.

The engine keeps properties in the node's codec (0-9-1 content properties); this module speaks
to it only through `PropertyCodec.to_fields` / `from_fields`."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from rabbitish.bridge.codec import (
    Symbol,
    Timestamp,
    UByte,
    UInt,
    decode_all,
    encode,
)
from rabbitish.bridge.codec.definitions import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Data,
    Footer,
    Header,
    Properties,
)

from rabbitish.engine.message import Message, PropertyCodec

AMQP_1_0_TYPE = "amqp-1.0"
_BODY = (Data, AmqpSequence, AmqpValue)
_STRINGS = (
    ("message_id", "message_id"),
    ("correlation_id", "correlation_id"),
    ("reply_to", "reply_to"),
    ("content_type", "content_type"),
    ("content_encoding", "content_encoding"),
)


def to_engine(
    codec: PropertyCodec, exchange: str, routing_key: str | None, payload: bytes
) -> tuple[Message, str | None]:
    """The engine message for a 1.0 message; also its subject (the routing key of an
    `/exchange/NAME` address that names no key)."""
    sections = decode_all(payload)
    fields: dict[str, Any] = {}
    first: dict[type, Any] = {}  # the first section of each kind, in one pass (per message)
    bodies = []
    for section in sections:
        if isinstance(section, _BODY):
            bodies.append(section)
        elif type(section) not in first:
            first[type(section)] = section
    header = first.get(Header)
    props = first.get(Properties)
    app = first.get(ApplicationProperties)
    if header is not None:
        fields["delivery_mode"] = 2 if header.durable else 1
        if header.priority is not None and header.priority != 4:
            fields["priority"] = int(header.priority)
        if header.ttl is not None:
            fields["expiration"] = str(int(header.ttl))
    subject = None
    if props is not None:
        for name, field in _STRINGS:
            value = getattr(props, name)
            if value is not None:
                fields[field] = str(value)
        if props.user_id is not None:
            fields["user_id"] = bytes(props.user_id).decode("utf-8", "replace")
        if props.creation_time is not None:
            fields["timestamp"] = int(props.creation_time) // 1000
        subject = str(props.subject) if props.subject is not None else None
    if app is not None and app.value:
        fields["headers"] = {str(k): _to_header(v) for k, v in app.value.items()}
    if len(bodies) == 1 and isinstance(bodies[0], Data):
        body = bytes(bodies[0].value)
    else:
        body = b"".join(encode(s) for s in sections if not isinstance(s, Footer))
        fields["type"] = AMQP_1_0_TYPE
    raw = codec.from_fields(fields)
    key = routing_key if routing_key is not None else (subject or "")
    return codec.new_message(exchange, key, raw, body), subject


def _to_header(value: Any) -> Any:
    if isinstance(value, Symbol):
        return str(value)
    if isinstance(value, Timestamp):
        return datetime.datetime.fromtimestamp(int(value) / 1000, datetime.UTC)
    return value


def from_engine(message: Message, delivery_count: int) -> bytes:
    """The 1.0 encoding of an engine message for a 1.0 receiver."""
    fields = message.codec.to_fields(message.raw_properties)
    if fields.get("type") == AMQP_1_0_TYPE:
        return message.body  # the sections as a 1.0 sender sent them
    header_fields: dict[str, Any] = {"durable": fields.get("delivery_mode") == 2}
    if "priority" in fields:
        header_fields["priority"] = UByte(fields["priority"])
    if "expiration" in fields and str(fields["expiration"]).isdigit():
        header_fields["ttl"] = UInt(int(fields["expiration"]))
    if delivery_count:
        header_fields["delivery_count"] = UInt(delivery_count)
    parts = [encode(Header(**header_fields))]
    props: dict[str, Any] = {}
    for name, field in _STRINGS:
        if field in fields:
            props[name] = fields[field]
    if "content_type" in props:
        props["content_type"] = Symbol(props["content_type"])
    if "content_encoding" in props:
        props["content_encoding"] = Symbol(props["content_encoding"])
    if "user_id" in fields:
        props["user_id"] = str(fields["user_id"]).encode()
    if "timestamp" in fields:
        props["creation_time"] = Timestamp(int(fields["timestamp"]) * 1000)
    if props:
        parts.append(encode(Properties(**props)))
    headers = fields.get("headers")
    if headers:
        parts.append(
            encode(
                ApplicationProperties(value={str(k): _from_header(v) for k, v in headers.items()})
            )
        )
    parts.append(encode(Data(value=message.body)))
    return b"".join(parts)


def _from_header(value: Any) -> Any:
    """0-9-1 header values that 1.0 application-properties can hold (simple types only)."""
    if isinstance(value, datetime.datetime):
        return Timestamp(int(value.timestamp() * 1000))
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dict, list)):
        return str(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value
