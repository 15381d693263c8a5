"""Headers exchange matching with RabbitMQ's value comparison, and x-match validation."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from rabbitish.engine.errors import AMQPError
from rabbitish.engine.exchanges.headers import headers_match, validate_binding

MODES = "expected all, any, all-with-x, or any-with-x"


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
