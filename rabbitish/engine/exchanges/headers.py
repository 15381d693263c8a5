"""Headers exchange: binding arguments matched against message headers with x-match all / any
(and RabbitMQ's all-with-x / any-with-x, which also compare x- keys). Values compare the way
Erlang's == compares RabbitMQ's decoded terms: numbers by value whatever their width, strings
and byte strings alike, booleans only with booleans."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from rabbitish.engine import erlang_terms
from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.message import Message
from rabbitish.engine.queue_args import python_type_name

_MISSING = object()
MATCH_MODES = ("all", "any", "all-with-x", "any-with-x")


def erlang_term(value: Any) -> Any:
    """A comparable stand-in for the Erlang term RabbitMQ would hold for a decoded value."""
    if isinstance(value, bool) or value is None:
        return ("atom", value)
    if isinstance(value, str):
        return ("bin", value.encode())
    if isinstance(value, bytes | bytearray):
        return ("bin", bytes(value))
    if isinstance(value, Decimal):
        return ("decimal", value.as_tuple())
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())  # a timestamp is a plain integer to RabbitMQ
    if isinstance(value, dict):
        return ("table", tuple((k, erlang_term(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(erlang_term(v) for v in value))
    return value


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def match_mode(arguments: dict[str, Any]) -> str:
    """The binding's x-match; anything unrecognised means all (as RabbitMQ treats legacy ones)."""
    mode = _text(arguments.get("x-match", "all"))
    return mode if mode in MATCH_MODES else "all"


def validate_binding(arguments: dict[str, Any], arg_types: dict[str, str]) -> None:
    """RabbitMQ refuses a headers binding whose x-match is not one it knows."""
    if "x-match" not in arguments:
        return
    value = arguments["x-match"]
    type_name = arg_types.get("x-match") or python_type_name(value)
    shown = erlang_terms.term(value)
    if type_name != "longstr":
        raise precondition_failed(
            f"Invalid x-match field type {type_name} (value {shown}); expected longstr"
        )
    if _text(value) not in MATCH_MODES:
        raise precondition_failed(
            f"Invalid x-match field value {shown}; expected all, any, all-with-x, or any-with-x"
        )


def headers_match(arguments: dict[str, Any], headers: dict[str, Any]) -> bool:
    mode = match_mode(arguments)
    with_x = mode.endswith("-with-x")
    want_all = mode.startswith("all")
    any_hit = False
    for key, expected in arguments.items():
        if key == "x-match" or (key.startswith("x-") and not with_x):
            continue
        actual = headers.get(key, _MISSING)
        if actual is _MISSING:
            hit = False
        elif expected is None:  # void binding value: presence is enough
            hit = True
        else:
            hit = erlang_term(actual) == erlang_term(expected)
        if want_all and not hit:
            return False
        any_hit = any_hit or hit
    return True if want_all else any_hit


class HeadersExchange(Exchange):
    uses_routing_key = False
    type_name = "headers"

    def validate_binding(
        self,
        destination: Any,
        routing_key: str,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> None:
        validate_binding(arguments, arg_types)

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        if not self.bindings:
            return ()
        headers = message.headers
        return [
            b.destination for b in self.bindings.values() if headers_match(b.arguments, headers)
        ]
