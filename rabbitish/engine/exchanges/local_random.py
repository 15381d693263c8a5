"""RabbitMQ 4's x-local-random exchange: each message goes to one of the queues bound to it,
chosen at random, whatever its routing key. Every queue here is local to the one node, so all
bound queues take part. As RabbitMQ's rabbit_exchange_type_local_random, a binding must have an
empty key and a classic queue as its destination."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.exchanges.base import Binding, Exchange
from rabbitish.engine.message import Message
from rabbitish.engine.queue_args import QUEUE_TYPE_MODULES, queue_type_of


def validate_binding(destination: Any, routing_key: str) -> None:
    """RabbitMQ's refusals (406), in its order: a key, then a destination that is not a
    classic queue (an exchange is no queue it can find)."""
    if routing_key:
        raise precondition_failed(f"Non empty binding '{routing_key}' key not permitted")
    if isinstance(destination, Exchange):
        raise precondition_failed("Destination not found")
    queue_type = queue_type_of(destination.arguments)
    if queue_type != "classic":
        raise precondition_failed(
            f"Queue type {QUEUE_TYPE_MODULES[queue_type]} not valid for this exchange type"
        )


class LocalRandomExchange(Exchange):
    type_name = "x-local-random"
    uses_routing_key = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._destinations: list[Any] = []
        self._random = random.Random()

    def validate_binding(
        self,
        destination: Any,
        routing_key: str,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> None:
        validate_binding(destination, routing_key)

    def _added(self, binding: Binding) -> None:
        self._destinations.append(binding.destination)

    def _removed(self, binding: Binding) -> None:
        self._destinations.remove(binding.destination)

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        destinations = self._destinations
        if len(destinations) < 2:
            return destinations
        return (self._random.choice(destinations),)
