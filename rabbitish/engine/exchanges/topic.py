"""Topic exchange: dot-separated words, `*` matches exactly one word, `#` zero or more. Binding
patterns compile to a matcher once; results are cached per routing key until bindings change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from rabbitish.engine.exchanges.base import Binding, Exchange
from rabbitish.engine.message import Message


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """A matcher for one binding pattern, by word-level dynamic programming (no regex pitfalls
    with dots or special characters in words)."""
    pwords = tuple(pattern.split(".")) if pattern else ()

    @lru_cache(maxsize=1024)
    def matches(routing_key: str) -> bool:
        words = routing_key.split(".") if routing_key else []
        # reachable[j]: pattern prefix matches the first j words
        reachable = [True] + [False] * len(words)
        for pw in pwords:
            nxt = [False] * (len(words) + 1)
            if pw == "#":
                seen = False
                for j in range(len(words) + 1):
                    seen = seen or reachable[j]
                    nxt[j] = seen
            else:
                for j in range(len(words)):
                    if reachable[j] and (pw == "*" or pw == words[j]):
                        nxt[j + 1] = True
            reachable = nxt
        return reachable[len(words)]

    return matches


class TopicExchange(Exchange):
    type_name = "topic"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cache: dict[str, list[Any]] = {}

    def _added(self, binding: Binding) -> None:
        self._cache.clear()

    def _removed(self, binding: Binding) -> None:
        self._cache.clear()

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        cached = self._cache.get(routing_key)
        if cached is None:
            cached = [
                b.destination
                for b in self.bindings.values()
                if compile_pattern(b.routing_key)(routing_key)
            ]
            if len(self._cache) > 10000:
                self._cache.clear()
            self._cache[routing_key] = cached
        return cached
