"""AMQP 1.0 messages to and from the engine's messages, as RabbitMQ's 3.x 1.0 plugin maps them:
header durable <-> delivery-mode 2, priority, ttl <-> expiration; the properties section's
fields to the 0-9-1 properties of the same meaning (creation-time ms <-> timestamp s, a
`/queue/NAME` reply-to <-> NAME, subject <-> routing key); application-properties <-> headers,
typed (typed_values.py). A message whose body is one data section keeps exactly those bytes as
its body; any other body (amqp-value, amqp-sequence, several data sections) travels as its
encoded body sections with type "amqp-1.0", readable by a 0-9-1 client that decodes them.

What 0-9-1 cannot hold (a symbol, a ulong message-id, a millisecond, message annotations ...)
is kept as the exact 1.0 encoding in an `x-amqp-1.0-*` header (RabbitMQ's names), so a 1.0
receiver gets the message back type for type. A kept section is used only while the 0-9-1
fields it maps to are unchanged (dead-lettering, say, may have edited them).

The engine keeps properties in the node's codec (0-9-1 content properties); this module speaks
to it only through `PropertyCodec.to_fields` / `from_fields`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from rabbitish.bridge.codec import (
    DecodeError,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    decode,
    encode,
    value_end,
)
from rabbitish.bridge.codec.definitions import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Data,
    Footer,
    Header,
    MessageAnnotations,
    Properties,
    data_section_head,
)
from rabbitish.bridge.typed_values import from_field, same, to_field

from rabbitish.engine.message import FieldValue, Message, PropertyCodec

AMQP_1_0_TYPE = "amqp-1.0"
PROPERTIES_HEADER = "x-amqp-1.0-properties"
APP_PROPERTIES_HEADER = "x-amqp-1.0-app-properties"
ANNOTATIONS_HEADER = "x-amqp-1.0-message-annotations"
FOOTER_HEADER = "x-amqp-1.0-footer"
_KEPT = (PROPERTIES_HEADER, APP_PROPERTIES_HEADER, ANNOTATIONS_HEADER, FOOTER_HEADER)
_BODY = frozenset((Data, AmqpSequence, AmqpValue))
_IDS = (("message_id", "message_id"), ("correlation_id", "correlation_id"))
_SYMBOLS = (("content_type", "content_type"), ("content_encoding", "content_encoding"))
_PROPERTY_FIELDS = (
    "message_id",
    "correlation_id",
    "reply_to",
    "content_type",
    "content_encoding",
    "user_id",
    "timestamp",
)
_QUEUE_PREFIX = "/queue/"


def to_engine(
    codec: PropertyCodec,
    exchange: str,
    routing_key: str | None,
    payload: bytes,
    route_by_to: Callable[[str | None], tuple[str, str]] | None = None,
) -> tuple[Message, str | None]:
    """The engine message for a 1.0 message; also its subject (the routing key of an
    `/exchange/NAME` address that names no key). `route_by_to` (the anonymous terminus) gives
    the exchange and routing key from the message's `to` instead, or raises."""
    if type(payload) is not bytes:
        payload = bytes(payload)  # sections are looked up by their bytes
    remembered = None
    if route_by_to is None:
        split = _data_last(payload)
        if split is not None and split[0] <= _MAPPED_HEAD_MAX:
            head_end, body_start = split
            remembered = (codec, exchange, routing_key, payload[:head_end])
            known = _MAPPED.get(remembered)
            if known is not None:
                raw_properties, key, subject = known
                body = payload[body_start:]
                return codec.new_message(exchange, key, raw_properties, body), subject
    sections = _sections(payload)
    found = {type(section): (section, start, end) for section, start, end in sections}
    fields: dict[str, Any] = {}
    headers: dict[str, Any] = {}
    if Header in found:
        fields.update(_header_fields(found[Header][0]))
    if MessageAnnotations in found:
        headers[ANNOTATIONS_HEADER] = _kept(_raw(payload, found[MessageAnnotations]))
    subject = to = None
    props = found.get(Properties)
    if props is not None and _blank(props[0]):
        props = None  # all fields absent (proton sends such a section): as good as none
    if props is not None:
        sent = props[0]
        fields.update(properties_to_fields(sent))
        subject = str(sent.subject) if sent.subject is not None else None
        to = sent.to
    if route_by_to is not None:
        exchange, routing_key = route_by_to(None if to is None else str(to))
    key = routing_key if routing_key is not None else (subject or "")
    if props is not None and not _same_properties(props[0], properties_from_fields(fields, key)):
        headers[PROPERTIES_HEADER] = _kept(_raw(payload, props))
    app = found.get(ApplicationProperties)
    if app is not None and app[0].value:
        typed = {str(k): to_field(v) for k, v in app[0].value.items()}
        headers.update(typed)
        if not all(same(v, from_field(typed[str(k)])) for k, v in app[0].value.items()):
            headers[APP_PROPERTIES_HEADER] = _kept(_raw(payload, app))
    if Footer in found:
        headers[FOOTER_HEADER] = _kept(_raw(payload, found[Footer]))
    bodies = [(section, start, end) for section, start, end in sections if type(section) in _BODY]
    if len(bodies) == 1 and type(bodies[0][0]) is Data:
        # A null data section fails here (TypeError), as it always has.
        body = bytes(bodies[0][0].value)  # type: ignore[arg-type]
    else:
        body = b"".join(payload[start:end] for _section, start, end in bodies)
        fields["type"] = AMQP_1_0_TYPE
    if headers:
        fields["headers"] = headers
        raw_properties = codec.from_fields(fields)
    else:
        raw_properties = _plain_properties(codec, fields)
    if remembered is not None:
        if len(_MAPPED) >= _MAPPED_MAX:
            _MAPPED.clear()  # a stream of distinct ids: start over, stay small
        _MAPPED[remembered] = (raw_properties, key, subject)
    return codec.new_message(exchange, key, raw_properties, body), subject


# What the sections before a message's body map to, by codec, address and their exact bytes,
# for messages whose one body section is a data section at the end: a sender mostly repeats
# its header and properties, and mapping them is most of taking a message in. Anything that
# refuses a message (a section that does not decode, a body that is not binary) is never
# remembered, so the same bytes refuse it again on the full path.
_MAPPED: dict[tuple[Any, ...], tuple[bytes, str, str | None]] = {}
_MAPPED_MAX = 1024
_MAPPED_HEAD_MAX = 4096  # bytes of sections before the body: larger ones are not kept
_DATA_CODE = int(Data.DESCRIPTOR)
_BODY_CODES = frozenset(int(cls.DESCRIPTOR) for cls in (AmqpSequence, AmqpValue))
_BINARY_HEADS = {0xA0: 2, 0xB0: 5}  # vbin8, vbin32: constructor and size octets


def _data_last(payload: bytes) -> tuple[int, int] | None:
    """(where the last section starts, where its value's bytes start) when the last section
    is the message's only body section and a data section holding binary; found from the
    sections' descriptors and sizes alone. None for anything else (a descriptor that is not
    a small ulong, a section that is not sized so, another body section)."""
    pos = 0
    end = len(payload)
    while pos + 3 < end:
        if payload[pos] != 0x00 or payload[pos + 1] != 0x53:
            return None
        code = payload[pos + 2]
        if code in _BODY_CODES:
            return None
        stop = value_end(payload, pos + 3)
        if stop is None:
            return None
        if code == _DATA_CODE:
            head = _BINARY_HEADS.get(payload[pos + 3])
            if stop != end or head is None:
                return None
            return pos, pos + 3 + head
        pos = stop
    return None


# Sections with every field absent, as their four bytes (descriptor, list0) and as the value
# they decode to: qpid-proton sends both with each message that sets none of their fields.
# Shared, so only ever read.
_EMPTY_SECTIONS: dict[bytes, Any] = {
    b"\x00\x53\x70\x45": Header(),
    b"\x00\x53\x73\x45": Properties(),
}


def _sections(payload: bytes) -> list[tuple[Any, int, int]]:
    """Each section with where its bytes start and end in `payload`."""
    out = []
    pos = 0
    empty = _EMPTY_SECTIONS
    while pos < len(payload):
        end = pos + 4
        section = empty.get(payload[pos:end])
        if section is None:
            section, end = decode(payload, pos)
        out.append((section, pos, end))
        pos = end
    return out


def _raw(payload: bytes, found: tuple[Any, int, int]) -> bytes:
    """The exact bytes of a section `_sections` found."""
    return payload[found[1] : found[2]]


_PROPERTY_VALUES = attrgetter(*Properties.ATTRS)
_NO_PROPERTY_VALUES = (None,) * len(Properties.ATTRS)


def _blank(props: Properties) -> bool:
    """A properties section with every field absent maps as no section at all."""
    return _PROPERTY_VALUES(props) == _NO_PROPERTY_VALUES


# Raw properties of messages without headers, by codec and fields: such messages (a header
# section at most, or the same few properties) mostly repeat a handful of combinations.
_PLAIN_PROPERTIES: dict[tuple[Any, ...], bytes] = {}
_PLAIN_PROPERTIES_MAX = 1024


def _plain_properties(codec: PropertyCodec, fields: dict[str, Any]) -> bytes:
    """`codec.from_fields(fields)` for fields without headers, remembered (the raw bytes are
    immutable, and encoding them is a good share of taking a message in)."""
    key = (codec, *fields.items())
    raw = _PLAIN_PROPERTIES.get(key)
    if raw is None:
        raw = codec.from_fields(fields)
        if len(_PLAIN_PROPERTIES) >= _PLAIN_PROPERTIES_MAX:
            _PLAIN_PROPERTIES.clear()  # a stream of distinct ids: start over, stay small
        _PLAIN_PROPERTIES[key] = raw
    return raw


def _kept(raw: bytes) -> FieldValue:
    return FieldValue("longstr", raw)


def _header_fields(header: Header) -> dict[str, Any]:
    fields: dict[str, Any] = {"delivery_mode": 2 if header.durable else 1}
    if header.priority is not None and header.priority != 4:
        fields["priority"] = int(header.priority)
    if header.ttl is not None:
        fields["expiration"] = str(int(header.ttl))
    return fields


def properties_to_fields(props: Properties) -> dict[str, Any]:
    """The 0-9-1 properties a 1.0 properties section maps to (subject aside: it routes)."""
    fields: dict[str, Any] = {}
    for name, field in (*_IDS, *_SYMBOLS):
        value = getattr(props, name)
        if value is not None:
            fields[field] = _text(value)
    if props.reply_to is not None:
        fields["reply_to"] = str(props.reply_to).removeprefix(_QUEUE_PREFIX)
    if props.user_id is not None:
        fields["user_id"] = _text(props.user_id)
    if props.creation_time is not None:
        fields["timestamp"] = max(0, int(props.creation_time) // 1000)
    return fields


def _text(value: Any) -> str:
    """A message-id, correlation-id or user-id as 0-9-1's short string."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def properties_from_fields(fields: dict[str, Any], routing_key: str) -> Properties:
    """The 1.0 properties section for 0-9-1 properties, as RabbitMQ builds it: ids as
    strings, a reply-to that names a queue as its `/queue/NAME` address, the subject the
    routing key."""
    props: dict[str, Any] = {"subject": routing_key}
    for name, field in _IDS:
        if field in fields:
            props[name] = fields[field]
    for name, field in _SYMBOLS:
        if field in fields:
            props[name] = Symbol(fields[field])
    reply_to = fields.get("reply_to")
    if reply_to is not None:
        props["reply_to"] = reply_to if reply_to.startswith("/") else _QUEUE_PREFIX + reply_to
    if "user_id" in fields:
        props["user_id"] = str(fields["user_id"]).encode()
    if "timestamp" in fields:
        props["creation_time"] = Timestamp(int(fields["timestamp"]) * 1000)
    return Properties(**props)


def _same_properties(sent: Properties, mapped: Properties) -> bool:
    """Whether the 0-9-1 properties give the section back; a subject the sender left out
    comes back as the routing key, as for any message."""
    return all(
        same(getattr(sent, name), getattr(mapped, name))
        for name in Properties.ATTRS
        if name != "subject" or sent.subject is not None
    )


def from_engine(message: Message, delivery_count: int) -> bytes:
    """The 1.0 encoding of an engine message for a 1.0 receiver: the sections around its body
    (encoded once for each combination of properties, address and delivery count), and the
    body itself."""
    raw = message.raw_properties
    key = None
    around = None
    if type(raw) is bytes and len(raw) <= _MAPPED_HEAD_MAX:
        key = (message.codec, raw, message.exchange, message.routing_key, delivery_count)
        around = _AROUND_BODY.get(key)
    if around is None:
        around = _around_body(message, delivery_count)
        if key is not None:
            if len(_AROUND_BODY) >= _MAPPED_MAX:
                _AROUND_BODY.clear()
            _AROUND_BODY[key] = around
    head, as_data, footer = around
    body = message.body
    if as_data:
        return b"".join((head, data_section_head(len(body)), body, footer))
    return b"".join((head, body, footer))  # the body sections as a 1.0 sender sent them


_AROUND_BODY: dict[tuple[Any, ...], tuple[bytes, bool, bytes]] = {}


def _around_body(message: Message, delivery_count: int) -> tuple[bytes, bool, bytes]:
    """The sections before the body, whether the body goes in a data section (else it is the
    body sections a 1.0 sender sent), and the footer."""
    fields = message.codec.to_fields(message.raw_properties)
    headers = dict(fields.get("headers") or {})
    if headers:
        kept = {name: _kept_bytes(headers.pop(name, None)) for name in _KEPT}
    else:
        kept = _NOTHING_KEPT
    parts = [
        _header(fields, delivery_count),
        kept[ANNOTATIONS_HEADER] or _routed_annotations(message.exchange, message.routing_key),
    ]
    parts.append(_properties(fields, message.routing_key, kept[PROPERTIES_HEADER]))
    if headers:
        parts.append(_application_properties(headers, kept[APP_PROPERTIES_HEADER]))
    return b"".join(parts), fields.get("type") != AMQP_1_0_TYPE, kept[FOOTER_HEADER]


_NOTHING_KEPT = dict.fromkeys(_KEPT, b"")  # shared: only read


def received_properties(message: Message) -> Properties:
    """The properties section a 1.0 receiver gets for `message` (source filters read it)."""
    fields = message.codec.to_fields(message.raw_properties)
    kept = _kept_bytes((fields.get("headers") or {}).get(PROPERTIES_HEADER))
    section = _decoded(_properties(fields, message.routing_key, kept), Properties)
    assert isinstance(section, Properties)  # a kept section is used only once it decodes
    return section


def received_application_properties(message: Message) -> dict[str, Any]:
    """The application-properties a 1.0 receiver gets for `message`, as 1.0 values."""
    fields = message.codec.to_fields(message.raw_properties)
    headers = dict(fields.get("headers") or {})
    kept = {name: _kept_bytes(headers.pop(name, None)) for name in _KEPT}
    if not headers:
        return {}
    section = _decoded(
        _application_properties(headers, kept[APP_PROPERTIES_HEADER]), ApplicationProperties
    )
    return {str(k): v for k, v in section.value.items()} if section is not None else {}


def with_annotations(message: Message, annotations: dict[Any, Any]) -> Message:
    """`message` with `annotations` merged into its message annotations, as RabbitMQ 4 applies
    a `modified` outcome's annotations to a quorum queue's message (the later redelivery or
    dead-lettered copy carries them)."""
    headers = message.codec.to_fields(message.raw_properties).get("headers") or {}
    kept = _kept_bytes(headers.get(ANNOTATIONS_HEADER))
    section = _decoded(kept, MessageAnnotations) if kept else None
    merged = dict(section.value) if section is not None else {}
    merged.update(annotations)
    encoded = encode(MessageAnnotations(value=merged))
    raw = message.codec.with_headers(message.raw_properties, {ANNOTATIONS_HEADER: _kept(encoded)})
    return message.edited(raw)


@functools.lru_cache(maxsize=1024)
def _routed_annotations(exchange: str, routing_key: str) -> bytes:
    """RabbitMQ 4 annotates every message it delivers over 1.0 with where it was published
    (`x-exchange`, `x-routing-key`), and its 4.x clients read the annotations of each message;
    encoded once per exchange and key."""
    annotations = {Symbol("x-exchange"): exchange, Symbol("x-routing-key"): routing_key}
    return encode(MessageAnnotations(value=annotations))


def _kept_bytes(field: FieldValue | None) -> bytes:
    if field is None or field.kind not in ("longstr", "binary"):
        return b""
    return bytes(field.value)


def _header(fields: dict[str, Any], delivery_count: int) -> bytes:
    return _header_section(
        fields.get("delivery_mode") == 2,
        fields.get("priority", _ABSENT),
        fields.get("expiration", _ABSENT),
        delivery_count,
    )


_ABSENT: Any = object()  # a property the message does not have (None could be a value)


@functools.lru_cache(maxsize=1024)
def _header_section(durable: bool, priority: Any, expiration: Any, delivery_count: int) -> bytes:
    """The header section for these properties, encoded once for each combination."""
    header_fields: dict[str, Any] = {"durable": durable}
    if priority is not _ABSENT:
        header_fields["priority"] = UByte(priority)
    if expiration is not _ABSENT and str(expiration).isdigit():
        header_fields["ttl"] = UInt(int(expiration))
    if delivery_count:
        header_fields["delivery_count"] = UInt(delivery_count)
    return encode(Header(**header_fields))


def _properties(fields: dict[str, Any], routing_key: str, kept: bytes) -> bytes:
    """The section as the 1.0 sender sent it while the 0-9-1 fields it maps to are unchanged;
    otherwise the section those fields make."""
    if kept:
        section = _decoded(kept, Properties)
        if section is not None and properties_to_fields(section) == {
            name: fields[name] for name in _PROPERTY_FIELDS if name in fields
        }:
            return kept
    return _properties_section(
        routing_key, *[fields.get(name, _ABSENT) for name in _PROPERTY_FIELDS]
    )


@functools.lru_cache(maxsize=1024)
def _properties_section(routing_key: str, *values: Any) -> bytes:
    """The properties section 0-9-1 properties make (`values` in `_PROPERTY_FIELDS` order),
    encoded once for each combination: messages mostly repeat a few."""
    fields = {name: v for name, v in zip(_PROPERTY_FIELDS, values, strict=True) if v is not _ABSENT}
    return encode(properties_from_fields(fields, routing_key))


def _application_properties(headers: dict[str, FieldValue], kept: bytes) -> bytes:
    """Each header as its 1.0 value: the value the 1.0 sender sent while the header still has
    the type and value it was mapped to, else the 1.0 type matching its 0-9-1 type."""
    section = _decoded(kept, ApplicationProperties) if kept else None
    sent = {str(k): v for k, v in section.value.items()} if section is not None else {}
    value: dict[str, Any] = {}
    for name, field in headers.items():
        original = sent.get(name, _MISSING)
        if original is not _MISSING and to_field(original) == field:
            value[name] = original
        else:
            value[name] = from_field(field)
    return encode(ApplicationProperties(value=value))


_MISSING = object()


def _decoded(raw: bytes, kind: type) -> Any:
    """A kept section, or None if a 0-9-1 client put something else in its header."""
    try:
        section, end = decode(raw)
    except DecodeError:
        return None
    return section if isinstance(section, kind) and end == len(raw) else None
