"""Topic exchange patterns without sockets: RabbitMQ's `*` and `#` matching, edge cases included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rabbitish.engine.exchanges.base import Binding
from rabbitish.engine.exchanges.topic import TopicExchange, compile_pattern

TOPIC_TABLE = [
    # pattern, routing key, matches
    ("a.b.c", "a.b.c", True),
    ("a.b.c", "a.b", False),
    ("a.b.c", "a.b.c.d", False),
    ("*", "a", True),
    ("*", "", False),
    ("*", "a.b", False),
    ("*.*", ".", True),
    ("*.*", "a.", True),
    ("#", "", True),
    ("#", "a.b.c", True),
    ("#.#", "a", True),
    ("a.#", "a", True),
    ("a.#", "ab", False),
    ("#.a", "a", True),
    ("#.a", "b.a", True),
    ("#.a", "a.b", False),
    ("a.#.b", "a.b", True),
    ("a.#.b", "a.x.y.b", True),
    ("a.#.b", "a.x.y.c", False),
    ("a.*.#", "a", False),
    ("a.*.#", "a.b", True),
    ("*.#.*", "a", False),
    ("*.#.*", "a.b", True),
    ("", "", True),
    ("", "a", False),
    ("a..b", "a..b", True),
    ("a.*.b", "a..b", True),
    ("a.b", "a.b.", False),
    ("a.b.", "a.b.", True),
    ("#.", "a.", True),
    ("#.", "a", False),
    ("a*", "a", False),
    ("a*", "a*", True),
    ("a#", "ab", False),
    ("*.b", ".b", True),
    ("ü.*", "ü.x", True),
]


@pytest.mark.parametrize(("pattern", "key", "expected"), TOPIC_TABLE)
def test_topic_pattern(pattern, key, expected):
    assert compile_pattern(pattern)(key) is expected


# ---------------------------------------------------------------------- the exchange's trie
def _exchange(patterns):
    """A topic exchange with one binding per pattern; each destination is the pattern's index."""
    exchange = TopicExchange("/", "t")
    for index, pattern in enumerate(patterns):
        exchange.add_binding(Binding(exchange, index, pattern))
    return exchange


def _by_rule(patterns, key):
    return [i for i, pattern in enumerate(patterns) if compile_pattern(pattern)(key)]


PATTERNS = sorted({pattern for pattern, _, _ in TOPIC_TABLE})
KEYS = sorted({key for _, key, _ in TOPIC_TABLE} | {"a.b.c.d.e", "x", "a.a.a", "#", "*", "a.*"})


@pytest.mark.parametrize(("pattern", "key", "expected"), TOPIC_TABLE)
def test_one_binding_routes_as_its_pattern_matches(pattern, key, expected):
    assert list(_exchange([pattern]).match(None, key)) == ([0] if expected else [])


@pytest.mark.parametrize("key", KEYS)
def test_many_bindings_route_to_every_match_once_in_the_order_bound(key):
    assert list(_exchange(PATTERNS).match(None, key)) == _by_rule(PATTERNS, key)


def test_removing_bindings_prunes_the_trie_and_clears_the_cache():
    exchange = _exchange(PATTERNS)
    for key in KEYS:
        exchange.match(None, key)  # cached
    removed = [b for b in exchange.bindings.values() if b.destination % 2 == 0]
    for binding in removed:
        exchange.remove_binding(binding.key)
    for key in KEYS:
        expected = [i for i in _by_rule(PATTERNS, key) if i % 2]
        assert list(exchange.match(None, key)) == expected
    for binding in list(exchange.bindings.values()):
        exchange.remove_binding(binding.key)
    assert exchange._root.children == {}
    assert exchange._root.bindings == {}


def test_a_rebound_pattern_comes_after_those_bound_before_it():
    exchange = _exchange(["a.*", "#", "a.b"])
    first = next(iter(exchange.bindings.values()))
    exchange.remove_binding(first.key)
    exchange.add_binding(Binding(exchange, 0, "a.*"))
    assert list(exchange.match(None, "a.b")) == [1, 2, 0]


def test_many_hashes_do_not_make_a_walk_exponential():
    exchange = _exchange([".".join(["#"] * 30) + ".z"])
    key = ".".join(["w"] * 60)
    assert list(exchange.match(None, key)) == []
    assert list(exchange.match(None, key + ".z")) == [0]


_WORD = st.sampled_from(["a", "b", "", "*", "#"])


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(st.lists(_WORD, max_size=4).map(".".join), min_size=1, max_size=8),
    key=st.lists(st.sampled_from(["a", "b", ""]), max_size=5).map(".".join),
)
def test_the_trie_agrees_with_the_rule_on_any_patterns_and_key(patterns, key):
    patterns = list(dict.fromkeys(patterns))
    assert list(_exchange(patterns).match(None, key)) == _by_rule(patterns, key)
