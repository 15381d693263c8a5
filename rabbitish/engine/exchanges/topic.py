"""Topic exchange: dot-separated words, `*` matches exactly one word, `#` zero or more. Binding
patterns live in a trie of words, as in RabbitMQ (rabbit_exchange_type_topic), so a routing key
visits only the branches that can match it: the cost of routing one message grows with the
words of its key and the bindings it matches, not with every binding of the exchange. Results
are cached per routing key until the bindings change (keys repeat in most applications)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from rabbitish.engine.exchanges.base import Binding, Exchange
from rabbitish.engine.message import Message

CACHED_KEYS = 10_000  # routing keys whose destinations are remembered at once


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """A matcher for one binding pattern alone, by word-level dynamic programming (no regex
    pitfalls with dots or special characters in words): the rule the trie below follows, for
    checking it and for code that has one pattern to test."""
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


def _words(text: str) -> list[str]:
    """A pattern's or a routing key's words; the empty string has none."""
    return text.split(".") if text else []


class _Node:
    """One word position of the trie: the next words (literal, `*` or `#`) and the bindings
    whose pattern ends here, each with its order of arrival."""

    __slots__ = ("bindings", "children")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.bindings: dict[tuple[int, str, Any], tuple[int, Binding]] = {}


class TopicExchange(Exchange):
    type_name = "topic"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cache: dict[str, list[Any]] = {}
        self._root = _Node()
        self._arrivals = 0  # bindings added so far: matches come back in the order bound

    def _added(self, binding: Binding) -> None:
        self._cache.clear()
        node = self._root
        for word in _words(binding.routing_key):
            child = node.children.get(word)
            if child is None:
                child = node.children[word] = _Node()
            node = child
        self._arrivals += 1
        node.bindings[binding.key] = (self._arrivals, binding)

    def _removed(self, binding: Binding) -> None:
        self._cache.clear()
        path = [self._root]
        words = _words(binding.routing_key)
        for word in words:
            child = path[-1].children.get(word)
            if child is None:
                return
            path.append(child)
        path[-1].bindings.pop(binding.key, None)
        for depth in range(len(words), 0, -1):  # prune branches left empty
            node = path[depth]
            if node.bindings or node.children:
                break
            del path[depth - 1].children[words[depth - 1]]

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        cached = self._cache.get(routing_key)
        if cached is None:
            cached = self._walk(_words(routing_key))
            if len(self._cache) >= CACHED_KEYS:
                self._cache.clear()
            self._cache[routing_key] = cached
        return cached

    def _walk(self, words: list[str]) -> list[Any]:
        """Destinations of every binding whose pattern matches `words`, in the order they were
        bound, each binding once. Each (node, position) pair is visited at most once, so
        patterns with several `#` cannot make a walk exponential."""
        found: dict[tuple[int, str, Any], tuple[int, Binding]] = {}
        seen: set[tuple[int, int]] = set()
        end = len(words)
        todo = [(self._root, 0)]
        while todo:
            node, at = todo.pop()
            mark = (id(node), at)
            if mark in seen:
                continue
            seen.add(mark)
            children = node.children
            hash_node = children.get("#")
            if hash_node is not None:  # `#` takes zero or more of the remaining words
                todo.extend((hash_node, skip) for skip in range(at, end + 1))
            if at == end:
                if node.bindings:
                    found.update(node.bindings)
                continue
            literal = children.get(words[at])
            if literal is not None:
                todo.append((literal, at + 1))
            star = children.get("*")
            if star is not None:
                todo.append((star, at + 1))
        if len(found) > 1:
            return [binding.destination for _, binding in sorted(found.values(), key=_arrival)]
        return [binding.destination for _, binding in found.values()]


def _arrival(entry: tuple[int, Binding]) -> int:
    return entry[0]
