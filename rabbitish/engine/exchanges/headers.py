"""Headers exchange: binding arguments matched against message headers with x-match all / any
(and RabbitMQ's all-with-x / any-with-x, which also compare x- keys)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.message import Message

_MISSING = object()


def _normalise(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _same_value(actual: Any, expected: Any) -> bool:
    """Typed equality: a boolean header never equals an integer binding value."""
    if isinstance(actual, bool) != isinstance(expected, bool):
        return False
    return _normalise(actual) == _normalise(expected)


def headers_match(arguments: dict[str, Any], headers: dict[str, Any]) -> bool:
    mode = _normalise(arguments.get("x-match", "all"))
    with_x = mode in ("all-with-x", "any-with-x")
    want_all = mode in ("all", "all-with-x")
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
            hit = _same_value(actual, expected)
        if want_all and not hit:
            return False
        any_hit = any_hit or hit
    return True if want_all else any_hit


class HeadersExchange(Exchange):
    type_name = "headers"

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        if not self.bindings:
            return ()
        headers = message.headers
        return [
            b.destination for b in self.bindings.values() if headers_match(b.arguments, headers)
        ]
