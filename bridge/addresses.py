"""AMQP 1.0 addresses as RabbitMQ's 3.x plugin reads them (rabbit_routing_util:parse_endpoint):
`/queue/NAME` and a bare `NAME`, `/amq/queue/NAME`, `/exchange/NAME[/KEY]`, `/topic/KEY`, with
`%2F` standing for `/` in a name; and RabbitMQ 4.x's own forms ("v2"), whose segments are
percent-encoded (RFC 3986: `%20` a space, `%2F` a slash, ...): `/queues/NAME` for a source or a
target, `/exchanges/NAME[/KEY]` for a target only, and for a sender the anonymous terminus (a
target without an address), where each message's `to` is one of those target forms.

An address RabbitMQ would not parse is refused with its condition (amqp:invalid-field) and its
description, the Erlang term it prints: `Attach rejected: {unknown_destination,"/foo"}` (3.x),
`Attach refused: {bad_address_string,<<"/queues/">>}` (4.x, for its own forms), so a client sees
the same text from rabbitish as from the broker that knows the form. RabbitMQ 4 refuses a link
alone (the session goes on), RabbitMQ 3.x ends the session: rabbitish does what the broker of
the form does (`RefusedAttach` for the v2 forms)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from rabbitish.engine.erlang_terms import binary, char_list

INVALID_FIELD = "amqp:invalid-field"
INTERNAL_ERROR = "amqp:internal-error"
PRECONDITION_FAILED = "amqp:precondition-failed"
QUEUES, EXCHANGES = "/queues/", "/exchanges/"  # RabbitMQ 4's address prefixes
_BAD_ESCAPE = re.compile("%(?![0-9A-Fa-f]{2})")


class LinkError(Exception):
    """Refuse or detach a link with an AMQP 1.0 condition."""

    def __init__(
        self, condition: str, description: str, info: dict[Any, Any] | None = None
    ) -> None:
        super().__init__(description)
        self.condition = condition
        self.description = description
        self.info = info  # the error's info map (a settled anonymous transfer's delivery-tag)


class RefusedAttach(LinkError):
    """A link refused alone, as the spec refuses one (an attach answered without a source or
    target, then a detach with the error); the session goes on. The coordinator refuses a
    control link it cannot serve this way, and a receiver's malformed selector is refused so."""


class RoutingRefused(LinkError):
    """A message sent to the anonymous terminus whose `to` names nowhere it can go: rejected
    with the error when sent unsettled, the link detached with it when sent settled."""


@dataclass(frozen=True)
class Address:
    exchange: str  # where a publish goes
    routing_key: str | None  # None: the message's subject
    queue: str | None  # the queue a receiver consumes from (None: a private one is made)
    declare: bool  # /queue/NAME declares the queue (and checks an existing one is equivalent)
    # RabbitMQ 4's form: the queue must exist, a refusal is the link's alone, and an unsettled
    # transfer no queue takes is released.
    v2: bool = False
    anonymous: bool = False  # the anonymous terminus: each message's `to` says where it goes


ANONYMOUS = Address("", None, None, False, v2=True, anonymous=True)


def is_v2(address: object, sending: bool) -> bool:
    """Whether a terminus address is one of RabbitMQ 4's forms (None: a sender's anonymous
    terminus), whose refusals are the link's alone."""
    if address is None:
        return sending
    return isinstance(address, str) and (
        address.startswith(QUEUES) or (sending and address.startswith(EXCHANGES))
    )


def parse_address(address: str | None, sending: bool) -> Address:
    """The address of a link's terminus; `sending` is True for the client's sender (a target),
    which may name `/queue` alone: the default exchange, keyed by each message's subject. (The
    anonymous terminus, a target without an address, is `ANONYMOUS`: the link decides.)"""
    if address is None:
        raise _rejected("{address_not_utf8_string,undefined}")
    if address.startswith(QUEUES) and not sending:
        # RabbitMQ 4's only source form: the rest, percent-decoded, names an existing queue.
        try:
            name = _percent_decoded(address[len(QUEUES) :])
        except ValueError:
            reason = f"{{bad_address,{{utf8,{binary(address)}}}}}"
            raise RefusedAttach(INVALID_FIELD, f"Attach refused: {reason}") from None
        return Address("", name, name, False, v2=True)
    if address.startswith(EXCHANGES) and not sending:
        # A target-only form: RabbitMQ 4 reads it with its 3.x parser, which knows no such type.
        reason = f"{{unknown_destination,{char_list(address)}}}"
        raise RefusedAttach(INVALID_FIELD, f"Attach refused: {reason}")
    if sending and is_v2(address, sending):
        try:
            return parse_v2_target(address)
        except ValueError:
            reason = f"{{bad_address_string,{binary(address)}}}"
            raise RefusedAttach(INVALID_FIELD, f"Attach refused: {reason}") from None
    parts = address.split("/")
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


def parse_v2_target(address: str) -> Address:
    """A target in RabbitMQ 4's forms: `/queues/NAME` (the default exchange, keyed by the
    name), `/exchanges/NAME` (key "") or `/exchanges/NAME/KEY`. ValueError for anything else,
    including the default exchange named outright (`/exchanges/amq.default`)."""
    if address.startswith(QUEUES):
        quoted = address[len(QUEUES) :]
        if not quoted:
            raise ValueError(address)
        name = _percent_decoded(quoted)
        return Address("", name, name, False, v2=True)
    if not address.startswith(EXCHANGES):
        raise ValueError(address)
    segments = address[len(EXCHANGES) :].split("/")
    if segments[0] in ("", "amq.default") or len(segments) > 2:
        raise ValueError(address)
    key = _percent_decoded(segments[1]) if len(segments) == 2 else ""
    return Address(_percent_decoded(segments[0]), key, None, False, v2=True)


def _percent_decoded(segment: str) -> str:
    """RabbitMQ 4's addresses percent-encode every byte outside RFC 3986's unreserved set
    (its clients encode names that way); ValueError for a segment that does not decode."""
    if _BAD_ESCAPE.search(segment):
        raise ValueError(segment)
    return unquote(segment, errors="strict")  # UnicodeDecodeError is a ValueError


def _unescape(name: str) -> str:
    return name.replace("%2F", "/")


def _rejected(reason: str) -> LinkError:
    return LinkError(INVALID_FIELD, f"Attach rejected: {reason}")
