"""AMQP 1.0 addresses as RabbitMQ's 3.x plugin reads them (rabbit_routing_util:parse_endpoint):
`/queue/NAME` and a bare `NAME`, `/amq/queue/NAME`, `/exchange/NAME[/KEY]`, `/topic/KEY`, with
`%2F` standing for `/` in a name; RabbitMQ 4.x's `/queues/NAME` and `/exchanges/NAME[/KEY]` too,
whose segments are percent-encoded (RFC 3986: `%20` a space, `%2F` a slash, ...).

An address RabbitMQ would not parse is refused with its condition (amqp:invalid-field) and its
description, the Erlang term it prints: `Attach rejected: {unknown_destination,"/foo"}`, so a
client sees the same text from both brokers."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from rabbitish.engine.erlang_terms import char_list

INVALID_FIELD = "amqp:invalid-field"
INTERNAL_ERROR = "amqp:internal-error"


class LinkError(Exception):
    """Refuse or detach a link with an AMQP 1.0 condition."""

    def __init__(self, condition: str, description: str) -> None:
        super().__init__(description)
        self.condition = condition
        self.description = description


class RefusedAttach(LinkError):
    """A link refused alone, as the spec refuses one (an attach answered without a source or
    target, then a detach with the error); the session goes on. The coordinator refuses a
    control link it cannot serve this way, and a receiver's malformed selector is refused so."""


@dataclass(frozen=True)
class Address:
    exchange: str  # where a publish goes
    routing_key: str | None  # None: the message's subject
    queue: str | None  # the queue a receiver consumes from (None: a private one is made)
    declare: bool  # /queue/NAME declares the queue (and checks an existing one is equivalent)
    only_missing: bool = False  # /queues/NAME: declared durable when missing, else looked up


def parse_address(address: str | None, sending: bool) -> Address:
    """The address of a link's terminus; `sending` is True for the client's sender (a target),
    which may name `/queue` alone: the default exchange, keyed by each message's subject."""
    if address is None:
        raise _rejected("{address_not_utf8_string,undefined}")
    parts = address.split("/")
    if len(parts) == 3 and parts[:2] == ["", "queues"] and parts[2]:
        name = _percent_decoded(address, parts[2])
        return Address("", name, name, False, only_missing=True)
    if len(parts) in (3, 4) and parts[:2] == ["", "exchanges"] and parts[2]:
        key = _percent_decoded(address, parts[3]) if len(parts) == 4 else ""  # no key: ""
        return Address(_percent_decoded(address, parts[2]), key, None, False)
    if len(parts) == 1 and address:
        return Address("", _unescape(address), _unescape(address), True)
    if parts[0] == "" and parts[1] in ("exchange", "queue", "topic"):
        return _endpoint(parts[1], parts[2:], sending)
    if parts[:3] == ["", "amq", "queue"]:
        return _endpoint("amqqueue", parts[3:], sending)
    raise _rejected(f"{{unknown_destination,{char_list(address) if address else '[]'}}}")


def _endpoint(kind: str, rest: list[str], sending: bool) -> Address:
    if kind == "exchange" and rest and rest[0] and len(rest) <= 2:
        key = _unescape(rest[1]) if len(rest) == 2 else ""
        return Address(_unescape(rest[0]), key or None, None, False)  # "": the subject
    if kind == "queue" and not rest:
        if sending:
            return Address("", None, None, False)
        raise _rejected("{invalid_destination,queue,[]}")
    if kind != "exchange" and len(rest) == 1 and rest[0]:
        name = _unescape(rest[0])
        if kind == "topic":
            return Address("amq.topic", name, None, False)
        return Address("", name, name, kind == "queue")
    url = char_list("/" + "/".join(rest)) if rest else "[]"
    raise _rejected(f"{{invalid_destination,{kind},{url}}}")


def _percent_decoded(address: str, segment: str) -> str:
    """RabbitMQ 4's addresses percent-encode every byte outside RFC 3986's unreserved set
    (its clients encode names that way); a segment that does not decode refuses the link."""
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise _rejected(f"{{bad_address_string,{char_list(address)}}}") from None


def _unescape(name: str) -> str:
    return name.replace("%2F", "/")


def _rejected(reason: str) -> LinkError:
    return LinkError(INVALID_FIELD, f"Attach rejected: {reason}")
