"""Fanout exchange: every binding, routing key ignored."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.message import Message


class FanoutExchange(Exchange):
    uses_routing_key = False
    type_name = "fanout"

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        return [b.destination for b in self.bindings.values()]
