"""Tracing through the management API's access resources, without HTTP: a vhost PUT's `tracing`
parsed as RabbitMQ's parse_bool parses it (and refused before the vhost is made), trace_on /
trace_off for any vhost name, and the vhost document's `tracing` field."""

from __future__ import annotations

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.management.access import AccessApi, tracing_flag
from rabbitish.management.errors import ApiError


@pytest.fixture
def access() -> AccessApi:
    return AccessApi(Node(ManualScheduler()))


@pytest.mark.parametrize(
    ("body", "flag"),
    [
        ({}, None),
        ({"tracing": True}, True),
        ({"tracing": "false"}, False),
        ({"tracing": "true"}, True),
    ],
)
def test_tracing_flag_takes_booleans_and_their_words(body, flag):
    assert tracing_flag(body) is flag


@pytest.mark.parametrize("value", ["yes", "TRUE", 1, 0, None, []])
def test_anything_else_is_not_boolean(value):
    with pytest.raises(ApiError) as refused:
        tracing_flag({"tracing": value})
    assert (refused.value.status, refused.value.body) == (
        400,
        {"error": "bad_request", "reason": ["not_boolean", value]},
    )


def test_a_vhost_put_turns_tracing_on_and_off(access):
    assert access.put_vhost("v", {"tracing": True}, "guest") == 201
    assert access.node.vhosts["v"].tracing
    assert access.put_vhost("v", {"description": "d"}, "guest") == 204  # absent: unchanged
    assert access.node.vhosts["v"].tracing
    assert access.put_vhost("v", {"tracing": False}, "guest") == 204
    assert not access.node.vhosts["v"].tracing


def test_a_refused_flag_makes_no_vhost(access):
    with pytest.raises(ApiError):
        access.put_vhost("v", {"tracing": "on"}, "guest")
    assert "v" not in access.node.vhosts


def test_trace_on_for_a_vhost_that_does_not_exist_does_not_create_it(access):
    access.set_tracing("later", True)
    assert "later" not in access.node.vhosts
    access.put_vhost("later", {}, "guest")
    assert access.node.vhosts["later"].tracing
    access.set_tracing("later", False)
    assert not access.node.vhosts["later"].tracing
