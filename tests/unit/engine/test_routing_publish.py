"""The one publish entry point a front end uses, driven directly (no protocol, no socket):
routing and mandatory outcomes, refusals, CC headers and alternate exchanges."""

from __future__ import annotations

import pytest

from rabbitish.engine.errors import AMQPError
from tests.support.engine import CODEC, bodies, message


def test_publish_reports_routing_and_mandatory_outcome(vhost):
    queue = vhost.declare_queue("q", owner=None)
    routed = vhost.publish("", "q", message(b"a"), mandatory=True)
    assert (routed.routed, routed.accepted, routed.returned) == (True, True, False)
    lost = vhost.publish("", "nowhere", message(b"b"), mandatory=True)
    assert (lost.routed, lost.returned) == (False, True)
    assert not vhost.publish("", "nowhere", message(b"c")).returned
    assert bodies(queue) == [b"a"]


def test_publish_refused_by_reject_publish_is_not_accepted(vhost):
    vhost.declare_queue(
        "q", owner=None, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    assert vhost.publish("", "q", message(b"a")).accepted
    refused = vhost.publish("", "q", message(b"b"))
    assert (refused.routed, refused.accepted) == (True, False)


def test_publish_follows_cc_headers_and_alternate_exchanges(vhost):
    a = vhost.declare_queue("a", owner=None)
    b = vhost.declare_queue("b", owner=None)
    vhost.declare_exchange("ae", "fanout")
    vhost.declare_exchange("x", "direct", arguments={"alternate-exchange": "ae"})
    vhost.add_binding("queue", "b", "ae", "", {}, {}, None)
    raw = CODEC.from_json({"headers": {"CC": ["b"]}})
    assert vhost.publish("", "a", CODEC.new_message("", "a", raw, b"cc")).routed
    assert vhost.publish("x", "unbound", message(b"via ae", "unbound")).routed
    assert bodies(a) == [b"cc"]
    assert bodies(b) == [b"cc", b"via ae"]


def test_publish_to_a_missing_exchange_is_404(vhost):
    with pytest.raises(AMQPError) as info:
        vhost.publish("missing", "k", message(b"x"))
    assert info.value.reply_code == 404
