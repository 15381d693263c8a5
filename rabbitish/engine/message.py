"""A published message as the engine sees it: routing facts, raw properties and body. The engine
never parses wire formats itself; a PropertyCodec supplied by the front end reads and edits
properties when the engine must (headers routing, dead-lettering)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, Protocol


class PropertyCodec(Protocol):
    """How the engine reads and edits raw message properties without knowing the wire format."""

    def headers(self, raw: bytes) -> dict[str, Any]: ...

    def with_headers(
        self, raw: bytes, updates: dict[str, Any], remove: Iterable[str] = ()
    ) -> bytes: ...

    def with_expiration(self, raw: bytes, expiration: str | None) -> bytes: ...


_message_ids = itertools.count(1)


class Message:
    """Immutable once published; the same object is shared by every queue it was routed to."""

    __slots__ = (
        "_headers",
        "body",
        "codec",
        "exchange",
        "expiration_ms",
        "id",
        "persistent",
        "priority",
        "raw_properties",
        "routing_key",
    )

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        raw_properties: bytes,
        body: bytes,
        codec: PropertyCodec,
        *,
        persistent: bool = False,
        priority: int = 0,
        expiration_ms: int | None = None,
    ) -> None:
        self.id = next(_message_ids)
        self.exchange = exchange
        self.routing_key = routing_key
        self.raw_properties = raw_properties
        self.body = body
        self.codec = codec
        self.persistent = persistent
        self.priority = priority
        self.expiration_ms = expiration_ms
        self._headers: dict[str, Any] | None = None

    @property
    def headers(self) -> dict[str, Any]:
        """Decoded headers, cached: only headers routing and dead-lettering need them."""
        if self._headers is None:
            self._headers = self.codec.headers(self.raw_properties)
        return self._headers

    @property
    def size(self) -> int:
        return len(self.body)

    def derive(self, exchange: str, routing_key: str, raw_properties: bytes) -> Message:
        """A copy with new routing and properties (dead-lettering republishes this way)."""
        return Message(
            exchange,
            routing_key,
            raw_properties,
            self.body,
            self.codec,
            persistent=self.persistent,
            priority=self.priority,
            expiration_ms=None,
        )


class QueueEntry:
    """One message's place in one queue. `seq` is the publication order in that queue, which is
    where a requeued message goes back to."""

    __slots__ = ("delivery_count", "expires_at", "message", "queue", "seq")

    def __init__(self, queue: Any, seq: int, message: Message, expires_at: float | None) -> None:
        self.queue = queue
        self.seq = seq
        self.message = message
        self.expires_at = expires_at
        self.delivery_count = 0

    @property
    def redelivered(self) -> bool:
        return self.delivery_count > 0

    def __lt__(self, other: QueueEntry) -> bool:
        return self.seq < other.seq
