"""Topic exchange patterns without sockets: RabbitMQ's `*` and `#` matching, edge cases included."""

from __future__ import annotations

import pytest

from rabbitish.engine.exchanges.topic import compile_pattern

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
