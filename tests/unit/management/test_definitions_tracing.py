"""Definitions and the firehose, as RabbitMQ 3.10 imports them: a vhost's `tracing` turns tracing
on or off (anything but a boolean fails after the vhost is made, as RabbitMQ's put_vhost fails
on it), the default exchange and amq.* exchanges such as amq.rabbitmq.trace are skipped, and an
export lists none of them nor any tracing."""

from __future__ import annotations

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.management import definitions
from rabbitish.management.errors import ApiError


@pytest.fixture
def node() -> Node:
    return Node(ManualScheduler())


def test_a_vhosts_tracing_is_imported(node):
    definitions.apply(node, {"vhosts": [{"name": "on", "tracing": True}, {"name": "off"}]})
    assert node.vhosts["on"].tracing and not node.vhosts["off"].tracing
    definitions.apply(node, {"vhosts": [{"name": "on", "tracing": False}]})
    assert not node.vhosts["on"].tracing


def test_a_tracing_that_is_not_boolean_fails_after_the_vhost_is_made(node):
    with pytest.raises(ApiError) as refused:
        definitions.apply(node, {"vhosts": [{"name": "v", "tracing": "yes"}]})
    assert refused.value.body == {"error": "bad_request", "reason": ["case_clause", "yes"]}
    assert "v" in node.vhosts and not node.vhosts["v"].tracing


def test_the_default_and_amq_exchanges_are_skipped(node):
    exchanges = [
        {"name": "amq.rabbitmq.trace", "vhost": "/", "type": "direct", "internal": False},
        {"name": "amq.custom", "vhost": "/", "type": "fanout"},
        {"name": "", "vhost": "/", "type": "fanout"},
        {"name": "mine", "vhost": "/", "type": "fanout"},
    ]
    definitions.apply(node, {"exchanges": exchanges})
    trace = node.vhosts["/"].exchanges["amq.rabbitmq.trace"]
    assert (trace.type_name, trace.internal) == ("topic", True)
    assert "amq.custom" not in node.vhosts["/"].exchanges
    assert node.vhosts["/"].exchanges["mine"].type_name == "fanout"


def test_an_export_names_no_amq_exchange_and_no_tracing(node):
    node.set_tracing("/", True)
    exported = definitions.export(node)
    assert exported["exchanges"] == []
    assert exported["vhosts"] == [{"name": "/"}]
