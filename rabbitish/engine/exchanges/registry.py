"""Exchange types by name, and the default exchange."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rabbitish.engine.errors import ConnectionError_
from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.exchanges.direct import DirectExchange
from rabbitish.engine.exchanges.fanout import FanoutExchange
from rabbitish.engine.exchanges.headers import HeadersExchange
from rabbitish.engine.exchanges.local_random import LocalRandomExchange
from rabbitish.engine.exchanges.topic import TopicExchange
from rabbitish.engine.message import Message

EXCHANGE_TYPES: dict[str, type[Exchange]] = {
    "direct": DirectExchange,
    "fanout": FanoutExchange,
    "topic": TopicExchange,
    "headers": HeadersExchange,
    # RabbitMQ 4.0's; 3.x refuses the name as unknown, rabbitish serves it on both protocols.
    "x-local-random": LocalRandomExchange,
}

# Names that are atoms in RabbitMQ's VM without being exchange types: RabbitMQ calls these
# "invalid" exchange types and any other unknown name "unknown".
_ERLANG_ATOMS = (
    frozenset(
        [
            "true",
            "false",
            "ok",
            "error",
            "undefined",
            "none",
            "all",
            "any",
            "local",
            "global",
            "default",
            "queue",
            "exchange",
            "binding",
            "classic",
            "quorum",
            "stream",
            "info",
            "warning",
            "debug",
            "normal",
            "infinity",
            "lazy",
            "durable",
            "transient",
            "topic_permission",
        ]
    )
    | frozenset("abcdefghijklmnopqrstuvwxyz")
    | {""}
)


def exchange_type(type_: str) -> type[Exchange]:
    """The class for a declared type; 503 (closing the connection) for an unknown one."""
    cls = EXCHANGE_TYPES.get(type_)
    if cls is None:
        adjective = "invalid" if type_ in _ERLANG_ATOMS else "unknown"
        raise ConnectionError_(503, f"{adjective} exchange type '{type_}'")
    return cls


class DefaultExchange(DirectExchange):
    """The nameless exchange: routes to the queue named by the routing key; cannot be bound."""

    def __init__(self, vhost: str, queues: Mapping[str, Any]) -> None:
        super().__init__(vhost, "", durable=True)
        self._queues = queues

    def match(self, message: Message, routing_key: str) -> Any:
        queue = self._queues.get(routing_key)
        return (queue,) if queue is not None else ()
