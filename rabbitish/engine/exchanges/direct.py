"""Direct exchange: exact routing-key match, indexed by key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rabbitish.engine.exchanges.base import Binding, Exchange
from rabbitish.engine.message import Message


class DirectExchange(Exchange):
    type_name = "direct"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_key: dict[str, list[Any]] = {}

    def _added(self, binding: Binding) -> None:
        self._by_key.setdefault(binding.routing_key, []).append(binding.destination)

    def _removed(self, binding: Binding) -> None:
        dests = self._by_key.get(binding.routing_key)
        if dests is not None:
            dests.remove(binding.destination)
            if not dests:
                del self._by_key[binding.routing_key]

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        return self._by_key.get(routing_key, ())
