"""What engine unit tests share, so they need neither the 0-9-1 codec nor pamqp: a tiny
PropertyCodec, messages made with it, and a consumer that keeps what it is given.

Raw properties are the properties pickled (behind their 4-byte length), then each header name
as a length-prefixed string: the way 0-9-1 field tables write names, which the engine's quick
byte checks for CC, BCC and x-half-txn look for."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

from rabbitish.engine.consumer import Consumer
from rabbitish.engine.delivery import Delivery
from rabbitish.engine.message import Message, parse_expiration
from rabbitish.engine.queue import Queue


class TinyCodec:
    def encode(self, props: dict[str, Any]) -> bytes:
        pickled = pickle.dumps(props)
        names = b"".join(
            bytes([len(name.encode())]) + name.encode() for name in props.get("headers", {})
        )
        return len(pickled).to_bytes(4, "big") + pickled + names

    def decode(self, raw: bytes) -> dict[str, Any]:
        size = int.from_bytes(raw[:4], "big")
        props: dict[str, Any] = pickle.loads(raw[4 : 4 + size])
        return props

    def headers(self, raw: bytes) -> dict[str, Any]:
        headers: dict[str, Any] = self.decode(raw).get("headers", {})
        return headers

    def with_headers(
        self,
        raw: bytes,
        updates: dict[str, Any],
        remove: Iterable[str] = (),
        sort_keys: bool = False,
    ) -> bytes:
        props = self.decode(raw)
        headers = {**props.get("headers", {}), **updates}
        for name in remove:
            headers.pop(name, None)
        props["headers"] = dict(sorted(headers.items())) if sort_keys else headers
        return self.encode(props)

    def expiration(self, raw: bytes) -> str | None:
        expiration: str | None = self.decode(raw).get("expiration")
        return expiration

    def with_expiration(self, raw: bytes, expiration: str | None) -> bytes:
        props = self.decode(raw)
        props.pop("expiration", None)
        if expiration is not None:
            props["expiration"] = expiration
        return self.encode(props)

    def new_message(self, exchange: str, routing_key: str, raw: bytes, body: bytes) -> Message:
        props = self.decode(raw)
        expiration = props.get("expiration")
        return Message(
            exchange,
            routing_key,
            raw,
            body,
            self,
            persistent=props.get("delivery_mode") == 2,
            priority=props.get("priority", 0),
            expiration_ms=None if expiration is None else parse_expiration(expiration),
        )

    def to_json(self, raw: bytes) -> dict[str, Any]:
        return self.decode(raw)

    def to_fields(self, raw: bytes) -> dict[str, Any]:
        return self.decode(raw)

    def from_fields(self, fields: dict[str, Any]) -> bytes:
        return self.encode(fields)

    def from_json(self, props: dict[str, Any]) -> bytes:
        return self.encode(props)


CODEC = TinyCodec()


def message(
    routing_key: str = "q", body: bytes = b"body", exchange: str = "", **props: Any
) -> Message:
    """A message as a front end would hand it to the engine."""
    return CODEC.new_message(exchange, routing_key, CODEC.encode(props), body)


class Taker(Consumer):
    """A consumer that keeps its deliveries."""

    __slots__ = ("deliveries",)

    def __init__(self, queue: Queue, tag: str = "c", **kwargs: Any) -> None:
        super().__init__(queue, tag, **kwargs)
        self.deliveries: list[Delivery] = []

    def delivered(self, delivery: Delivery) -> None:
        self.deliveries.append(delivery)
