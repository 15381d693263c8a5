"""A published message as the engine sees it: routing facts, raw properties and body. The engine
never parses wire formats itself; a PropertyCodec supplied by the front end reads and edits
properties when the engine must (headers routing, dead-lettering)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from rabbitish.engine import erlang_terms
from rabbitish.engine.errors import precondition_failed

FIELD_KINDS = frozenset(
    (
        *("bool", "byte", "unsignedbyte", "short", "unsignedshort", "signedint", "unsignedint"),
        *("long", "float", "double", "decimal", "timestamp", "void", "longstr", "binary"),
        *("array", "table"),
    )
)


@dataclass(frozen=True, slots=True)
class FieldValue:
    """A header value with its type named (RabbitMQ's field type names), so another protocol's
    front end can map it to its own type system exactly: a plain int says nothing of width or
    sign. Values: bool, int, float, decimal.Decimal, int seconds (timestamp), None (void), bytes
    (longstr, binary), list[FieldValue] (array), dict[str, FieldValue] (table)."""

    kind: str
    value: Any

    def __post_init__(self) -> None:
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"not a field type: {self.kind!r}")


class PropertyCodec(Protocol):
    """How the engine reads and edits raw message properties without knowing the wire format."""

    # The bytes a CC header and a BCC header always leave in raw properties (0-9-1: the
    # field-table key). When neither is there the message has no sender-selected routing keys
    # and routing decodes no headers: the check runs on every publish, so it is two `in`s.
    sender_selected_marks: tuple[bytes, bytes]

    def headers(self, raw: bytes) -> dict[str, Any]: ...

    def with_headers(
        self,
        raw: bytes,
        updates: dict[str, Any],
        remove: Iterable[str] = (),
        sort_keys: bool = False,
    ) -> bytes: ...

    def expiration(self, raw: bytes) -> str | None:
        """The expiration property exactly as the publisher wrote it."""
        ...

    def with_expiration(self, raw: bytes, expiration: str | None) -> bytes: ...

    def new_message(self, exchange: str, routing_key: str, raw: bytes, body: bytes) -> Message:
        """A message whose persistence, priority and TTL come from its properties."""
        ...

    def to_json(self, raw: bytes) -> dict[str, Any]:
        """Every property, decoded (the management API renders them)."""
        ...

    def to_fields(self, raw: bytes) -> dict[str, Any]:
        """Every property as a Python value, keyed by its 0-9-1 name (`content_type`,
        `headers`, `delivery_mode` ...): what another protocol's front end maps from. Header
        values are FieldValues, so their types survive the mapping."""
        ...

    def from_fields(self, fields: dict[str, Any]) -> bytes:
        """Raw properties from `to_fields`-shaped values; a header value is written with the
        type its FieldValue names (a plain Python value gets the type its Python type implies)."""
        ...

    def from_json(self, props: dict[str, Any]) -> bytes:
        """Raw properties from JSON ones, typed as RabbitMQ's management API types them; raises
        PropertyError."""
        ...


class PropertyError(ValueError):
    """Properties given as JSON that cannot be encoded; `reason` is what RabbitMQ reports."""

    def __init__(self, reason: Any) -> None:
        super().__init__(reason)
        self.reason = reason


_message_ids = itertools.count(1)


def bump_message_ids(at_least: int) -> None:
    """After recovery: new messages get ids above every stored one."""
    global _message_ids
    _message_ids = itertools.count(max(next(_message_ids), at_least + 1))


class Message:
    """Immutable once published; the same object is shared by every queue it was routed to."""

    __slots__ = (
        "__weakref__",
        "_body",
        "_headers",
        "codec",
        "exchange",
        "expiration_ms",
        "extra_keys",
        "id",
        "loader",
        "persistent",
        "pinned",
        "priority",
        "raw_properties",
        "routing_key",
        "size",
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
        self._body: bytes | None = body
        self.size = len(body)
        # Set by the store once the body is safely on disk, so a long queue's bodies can be
        # dropped from memory and read back on demand.
        self.loader: Callable[[Message], bytes] | None = None
        self.pinned = False  # also held by a transient queue: the body must stay in memory
        self.codec = codec
        self.persistent = persistent
        self.priority = priority
        self.expiration_ms = expiration_ms
        # CC and BCC routing keys, found when the message is first routed (None: not yet).
        self.extra_keys: tuple[str, ...] | None = None
        self._headers: dict[str, Any] | None = None

    @property
    def headers(self) -> dict[str, Any]:
        """Decoded headers, cached: only headers routing and dead-lettering need them."""
        if self._headers is None:
            self._headers = self.codec.headers(self.raw_properties)
        return self._headers

    def reset_headers(self) -> None:
        """Forget the decoded headers after the raw properties were edited."""
        self._headers = None

    @property
    def body(self) -> bytes:
        body = self._body
        if body is None:
            assert self.loader is not None, "paged-out message without a loader"
            body = self._body = self.loader(self)
        return body

    @property
    def in_memory(self) -> bool:
        return self._body is not None

    @property
    def body_if_in_memory(self) -> bytes | None:
        return self._body

    def drop_body(self, loader: Callable[[Message], bytes]) -> None:
        """The body was written elsewhere (spilled under memory pressure): forget it here and
        read it back through `loader`, whichever queues hold the message."""
        self.loader = loader
        self._body = None

    def page_in(self, body: bytes) -> None:
        if self._body is None:
            self._body = body

    def page_out(self) -> bool:
        """Drop the body from memory when the store can give it back; True if dropped."""
        if self.loader is None or self.pinned or self._body is None:
            return False
        self._body = None
        return True

    @property
    def routing_keys(self) -> list[str]:
        """The publish routing key followed by the CC and BCC keys."""
        return [self.routing_key, *(self.extra_keys or ())]

    def edited(self, raw_properties: bytes) -> Message:
        """This message with its properties edited in memory (an AMQP 1.0 `modified` outcome's
        annotations): the same id, so the store's record of it is untouched, and a restart
        gives the message back as it was published."""
        message = Message(
            self.exchange,
            self.routing_key,
            raw_properties,
            self.body,
            self.codec,
            persistent=self.persistent,
            priority=self.priority,
            expiration_ms=self.expiration_ms,
        )
        message.id = self.id
        message.extra_keys = self.extra_keys
        return message

    def derive(
        self,
        exchange: str,
        routing_key: str,
        raw_properties: bytes,
        extra_keys: tuple[str, ...] = (),
    ) -> Message:
        """A copy with new routing and properties (dead-lettering republishes this way)."""
        message = Message(
            exchange,
            routing_key,
            raw_properties,
            self.body,
            self.codec,
            persistent=self.persistent,
            priority=self.priority,
            expiration_ms=None,
        )
        message.extra_keys = extra_keys
        return message


MAX_EXPIRATION_MS = 315_360_000_000  # ten years, as RabbitMQ's check_expiry


def parse_expiration(value: str) -> int:
    """The per-message TTL in ms from the expiration property, refused (406) with RabbitMQ's
    texts, which come from Erlang's string:to_integer: an optional sign and ASCII digits,
    anything after them is a leftover."""
    digits_start = 1 if value[:1] in ("+", "-") else 0
    end = digits_start
    while end < len(value) and value[end] in "0123456789":
        end += 1
    if end == digits_start:
        raise _bad_expiration(value, "no_integer")
    if end < len(value):
        leftover = erlang_terms.char_list(value[end:])
        raise _bad_expiration(value, f"{{leftover_string,{leftover}}}")
    ms = int(value[:end])
    if ms < 0:
        raise _bad_expiration(value, f"{{value_negative,{ms}}}")
    if ms > MAX_EXPIRATION_MS:
        raise _too_large(value, ms)
    return ms


def _too_large(value: str, ms: int) -> Exception:
    return precondition_failed(
        erlang_terms.after(f"invalid expiration '{value}': ", f"{{value_too_large,{ms}}}")
    )


def _bad_expiration(value: str, detail: str) -> Exception:
    return precondition_failed(f"invalid expiration '{value}': {detail}")


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
