"""Routing without sockets: topic pattern matching, headers matching with RabbitMQ's value
comparison, x-match validation, and the vhost's routing through exchange bindings, alternate
exchanges and CC / BCC keys."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.exchanges.headers import headers_match, validate_binding
from rabbitish.engine.exchanges.topic import compile_pattern
from rabbitish.engine.message import Message
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import CODEC, NO_PROPERTIES

MODES = "expected all, any, all-with-x, or any-with-x"

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


HEADERS_TABLE = [
    ({"x-match": "all", "a": 1}, {"a": 1}, True),
    ({"x-match": "all", "a": 1, "b": 2}, {"a": 1}, False),
    ({"x-match": "any", "a": 1, "b": 2}, {"b": 2}, True),
    ({"x-match": "any"}, {"a": 1}, False),
    ({"x-match": "all"}, {}, True),
    ({"a": 1}, {"a": 1, "z": 0}, True),  # no x-match: all
    ({"x-match": "any", "x-a": 1}, {"x-a": 1}, False),  # x- keys ignored
    ({"x-match": "any-with-x", "x-a": 1}, {"x-a": 1}, True),
    ({"x-match": "all-with-x", "x-a": 1, "b": 2}, {"x-a": 1}, False),
    ({"a": 1}, {"a": 1.0}, True),  # numbers compare by value
    ({"a": 2**40}, {"a": 2**40}, True),
    ({"a": 1}, {"a": True}, False),  # a boolean is not a number
    ({"a": True}, {"a": True}, True),
    ({"a": "x"}, {"a": b"x"}, True),  # longstr and binary are both binaries
    ({"a": 1}, {"a": "1"}, False),
    ({"a": Decimal(1)}, {"a": 1}, False),
    ({"a": None}, {"a": "anything"}, True),  # void: presence
    ({"a": None}, {}, False),
    ({"a": {"k": [1, "v"]}}, {"a": {"k": [1, "v"]}}, True),
    ({"a": [1, 2]}, {"a": [2, 1]}, False),
    ({"t": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)}, {"t": 1577836800}, True),
]


@pytest.mark.parametrize(("binding", "headers", "expected"), HEADERS_TABLE)
def test_headers_match(binding, headers, expected):
    assert headers_match(binding, headers) is expected


@pytest.mark.parametrize(
    ("arguments", "types", "text"),
    [
        (
            {"x-match": "nope"},
            {},
            'Invalid x-match field value <<"nope">>; ' + MODES,
        ),
        (
            {"x-match": "é"},
            {},
            'Invalid x-match field value <<"é">>; ' + MODES,
        ),
        (
            {"x-match": "tab\tx"},
            {},
            'Invalid x-match field value <<"tab\\tx">>; ' + MODES,
        ),
        (
            {"x-match": "\x01"},
            {},
            "Invalid x-match field value <<1>>; " + MODES,
        ),
        (
            {"x-match": 7},
            {"x-match": "short"},
            "Invalid x-match field type short (value 7); expected longstr",
        ),
    ],
)
def test_x_match_validation(arguments, types, text):
    with pytest.raises(AMQPError) as info:
        validate_binding(arguments, types)
    assert (info.value.reply_code, info.value.text) == (406, text)


def test_x_match_valid_values():
    for mode in ("all", "any", "all-with-x", "any-with-x"):
        validate_binding({"x-match": mode}, {"x-match": "longstr"})
    validate_binding({}, {})


# ---------------------------------------------------------------------- vhost routing
def message(key: str, headers: dict[str, Any] | None = None) -> Message:
    raw = CODEC.encode(headers=headers) if headers else NO_PROPERTIES
    return Message("x", key, raw, b"body", CODEC)


@pytest.fixture
def vhost() -> VirtualHost:
    return VirtualHost("/", ManualScheduler())


def names(queues: list[Any]) -> set[str]:
    return {q.name for q in queues}


def declare_queues(vhost: VirtualHost, *queue_names: str) -> None:
    for name in queue_names:
        vhost.declare_queue(name, owner=None)


def test_route_through_exchange_bindings_and_cycles(vhost):
    declare_queues(vhost, "q1", "q2")
    for name in ("a", "b", "c"):
        vhost.declare_exchange(name, "fanout")
    vhost.add_binding("exchange", "b", "a", "", {}, {}, None)
    vhost.add_binding("exchange", "c", "b", "", {}, {}, None)
    vhost.add_binding("exchange", "a", "c", "", {}, {}, None)
    vhost.add_binding("queue", "q1", "c", "", {}, {}, None)
    vhost.add_binding("queue", "q2", "a", "", {}, {}, None)
    assert names(vhost.route(vhost.exchange("b"), "k", message("k"))) == {"q1", "q2"}


def test_alternate_exchange_only_when_nothing_matched(vhost):
    declare_queues(vhost, "main", "spare")
    vhost.declare_exchange("ae", "fanout")
    vhost.declare_exchange("empty", "direct")
    vhost.declare_exchange("x", "direct", arguments={"alternate-exchange": "ae"})
    vhost.add_binding("queue", "spare", "ae", "", {}, {}, None)
    vhost.add_binding("queue", "main", "x", "k", {}, {}, None)
    vhost.add_binding("exchange", "empty", "x", "dead-end", {}, {}, None)
    route = vhost.route
    assert names(route(vhost.exchange("x"), "k", message("k"))) == {"main"}
    assert names(route(vhost.exchange("x"), "other", message("other"))) == {"spare"}
    assert names(route(vhost.exchange("x"), "dead-end", message("dead-end"))) == set()


def test_cc_and_bcc_add_routing_keys_and_bcc_is_removed(vhost):
    declare_queues(vhost, "a", "b", "c")
    msg = message("a", {"CC": ["b"], "BCC": ["c"], "keep": 1})
    assert names(vhost.route(vhost.exchange(""), "a", msg)) == {"a", "b", "c"}
    assert msg.headers == {"CC": ["b"], "keep": 1}
    assert msg.routing_keys == ["a", "b", "c"]


def test_cc_must_be_an_array(vhost):
    with pytest.raises(AMQPError) as info:
        vhost.route(vhost.exchange(""), "a", message("a", {"CC": "b"}))
    assert info.value.text == 'invalid message: {unacceptable_type_in_header,"CC",longstr}'


def test_headers_exchange_ignores_cc_keys(vhost):
    declare_queues(vhost, "q")
    vhost.add_binding("queue", "q", "amq.headers", "", {"h": 1}, {}, None)
    msg = message("k", {"h": 1, "CC": ["x", "y"]})
    assert names(vhost.route(vhost.exchange("amq.headers"), "k", msg)) == {"q"}
