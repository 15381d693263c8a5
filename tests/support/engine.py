"""The engine driven directly by unit tests, with no front end: a PropertyCodec that knows no wire
format, and consumers that record what they are given.

Engine tests use this codec rather than the 0-9-1 one so they exercise the engine's contract
(rabbitish/engine/message.py's PropertyCodec), not one front end's encoding; a test that needs
the real 0-9-1 bytes belongs under tests/unit/protocol/."""

from __future__ import annotations

import datetime
import decimal
import pickle
from collections.abc import Iterable
from typing import Any

from rabbitish.engine.consumer import Consumer
from rabbitish.engine.delivery import Delivery
from rabbitish.engine.message import FieldValue, Message, PropertyError, parse_expiration
from rabbitish.engine.queue import Queue

# Property names a codec must know (the 0-9-1 names `to_fields` keys by).
PROPERTY_NAMES = frozenset(
    (
        *("content_type", "content_encoding", "headers", "delivery_mode", "priority"),
        *("correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type"),
        *("user_id", "app_id", "cluster_id"),
    )
)


class FieldsCodec:
    """A PropertyCodec whose raw properties are the properties dict, pickled: header values are
    kept as the Python values they were given. The engine's quick checks on raw bytes (CC,
    BCC, x-half-txn) look for header names as UTF-8, which pickle keeps as they are."""

    sender_selected_marks = (b"CC", b"BCC")

    def encode(self, **fields: Any) -> bytes:
        unknown = set(fields) - PROPERTY_NAMES
        if unknown:
            raise ValueError(f"not a property: {sorted(unknown)}")
        return pickle.dumps({k: v for k, v in fields.items() if v is not None}, protocol=5)

    def decode(self, raw: bytes) -> dict[str, Any]:
        fields = pickle.loads(raw)
        assert isinstance(fields, dict), raw
        return fields

    def headers(self, raw: bytes) -> dict[str, Any]:
        return dict(self.decode(raw).get("headers") or {})

    def with_headers(
        self,
        raw: bytes,
        updates: dict[str, Any],
        remove: Iterable[str] = (),
        sort_keys: bool = False,
    ) -> bytes:
        fields = self.decode(raw)
        headers = {k: v for k, v in (fields.get("headers") or {}).items() if k not in remove}
        headers.update(updates)
        if sort_keys:
            headers = dict(sorted(headers.items()))
        fields["headers"] = headers
        return self.encode(**fields)

    def expiration(self, raw: bytes) -> str | None:
        return self.decode(raw).get("expiration")

    def with_expiration(self, raw: bytes, expiration: str | None) -> bytes:
        return self.encode(**{**self.decode(raw), "expiration": expiration})

    def new_message(self, exchange: str, routing_key: str, raw: bytes, body: bytes) -> Message:
        fields = self.decode(raw)
        expiration = fields.get("expiration")
        return Message(
            exchange,
            routing_key,
            raw,
            body,
            self,
            persistent=fields.get("delivery_mode") == 2,
            priority=fields.get("priority") or 0,
            expiration_ms=None if expiration is None else parse_expiration(expiration),
        )

    def to_json(self, raw: bytes) -> dict[str, Any]:
        return self.decode(raw)

    def to_fields(self, raw: bytes) -> dict[str, Any]:
        fields = self.decode(raw)
        if "headers" in fields:
            fields["headers"] = {k: typed(v) for k, v in fields["headers"].items()}
        return fields

    def from_fields(self, fields: dict[str, Any]) -> bytes:
        headers = fields.get("headers")
        if headers is not None:
            fields = {**fields, "headers": {k: plain(v) for k, v in headers.items()}}
        return self.encode(**fields)

    def from_json(self, props: dict[str, Any]) -> bytes:
        try:
            return self.encode(**props)
        except ValueError as error:
            raise PropertyError(str(error)) from None


def typed(value: Any) -> FieldValue:
    """A header value with the type RabbitMQ gives the values it writes itself."""
    if isinstance(value, FieldValue):
        return value
    if isinstance(value, bool):
        return FieldValue("bool", value)
    if isinstance(value, int):
        return FieldValue("long", value)
    if isinstance(value, float):
        return FieldValue("double", value)
    if isinstance(value, decimal.Decimal):
        return FieldValue("decimal", value)
    if isinstance(value, str):
        return FieldValue("longstr", value.encode())
    if isinstance(value, bytes):
        return FieldValue("binary", value)
    if isinstance(value, datetime.datetime):
        return FieldValue("timestamp", int(value.timestamp()))
    if value is None:
        return FieldValue("void", None)
    if isinstance(value, list | tuple):
        return FieldValue("array", [typed(v) for v in value])
    if isinstance(value, dict):
        return FieldValue("table", {k: typed(v) for k, v in value.items()})
    raise TypeError(f"no field type for {value!r}")


def plain(value: Any) -> Any:
    """The Python value `headers` gives for a (possibly typed) header value."""
    if not isinstance(value, FieldValue):
        return value
    if value.kind == "longstr":
        return value.value.decode()
    if value.kind == "timestamp":
        return datetime.datetime.fromtimestamp(value.value, datetime.UTC)
    if value.kind == "array":
        return [plain(v) for v in value.value]
    if value.kind == "table":
        return {k: plain(v) for k, v in value.value.items()}
    return value.value


CODEC = FieldsCodec()
NO_PROPERTIES = CODEC.encode()


def message(
    body: bytes = b"body", routing_key: str = "q", exchange: str = "", **fields: Any
) -> Message:
    """A message as a front end hands it to the engine, its properties read by the codec."""
    return CODEC.new_message(exchange, routing_key, CODEC.encode(**fields), body)


def bodies(queue: Any) -> list[bytes]:
    """Takes every ready message off `queue`: their bodies, in order."""
    return [entry.message.body for entry in queue.ready.clear()]


class Recorder(Consumer):
    """A consumer that keeps what it is given; its credit is set by the test."""

    __slots__ = ("got", "limit")

    def __init__(self, queue, tag="c", *, settled=False, limit=1 << 30) -> None:
        super().__init__(queue, tag, settled_on_delivery=settled)
        self.got: list[Delivery] = []
        self.limit = limit

    @property
    def credit(self) -> int:
        return self.limit - len([d for d in self.got if not d.settled])

    def delivered(self, delivery: Delivery) -> None:
        self.got.append(delivery)


class Quiet(Consumer):
    """A consumer with the engine's own credit (its prefetch) that takes deliveries silently."""

    __slots__ = ()

    def delivered(self, delivery: Delivery) -> None:
        pass


class Taker(Consumer):
    """A consumer with the engine's own credit that keeps its deliveries."""

    __slots__ = ("deliveries",)

    def __init__(self, queue: Queue, tag: str = "c", **kwargs: Any) -> None:
        super().__init__(queue, tag, **kwargs)
        self.deliveries: list[Delivery] = []

    def delivered(self, delivery: Delivery) -> None:
        self.deliveries.append(delivery)
