"""A vhost's publisher (engine/routing.py): the publish outcome, routing through CC / BCC keys,
exchange-to-exchange bindings and alternate exchanges, direct reply-to, and dead-lettering,
over a real topology."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.message import Message
from rabbitish.engine.queue import Queue
from rabbitish.engine.routing import Publisher
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import message


@pytest.fixture
def vhost() -> VirtualHost:
    return VirtualHost("vh", ManualScheduler())


@pytest.fixture
def publisher(vhost: VirtualHost) -> Publisher:
    return vhost.publisher


def declare(vhost: VirtualHost, *names: str, **kwargs: Any) -> list[Queue]:
    return [vhost.topology.declare_queue(name, owner=None, **kwargs) for name in names]


def bodies(queue: Queue) -> list[bytes]:
    return [entry.message.body for entry in queue.ready]


def refused(call: Any, *args: Any) -> tuple[int, str]:
    with pytest.raises(AMQPError) as caught:
        call(*args)
    return caught.value.reply_code, caught.value.text


def test_a_publish_reports_routed_accepted_and_returned(vhost, publisher):
    (q,) = declare(vhost, "q")
    sizes: list[int] = []
    publisher.on_published = sizes.append
    result = publisher.publish("", "q", message(body=b"abc"), mandatory=True)
    assert (result.routed, result.accepted, result.returned) == (True, True, False)
    result = publisher.publish("", "nowhere", message(), mandatory=True)
    assert (result.routed, result.accepted, result.returned) == (False, True, True)
    assert not publisher.publish("", "nowhere", message()).returned
    assert (publisher.publishes, sizes) == (3, [3, 4, 4])
    assert bodies(q) == [b"abc"]
    default = vhost.topology.exchanges[""]
    assert (default.published_in, default.published_out) == (3, 1)


def test_a_queue_refusing_the_message_makes_the_publish_not_accepted(vhost, publisher):
    declare(vhost, "q", arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    result = publisher.publish("", "q", message())
    assert (result.routed, result.accepted, result.returned) == (True, False, False)


def test_the_publish_exchange_must_exist_and_not_be_internal(vhost, publisher):
    vhost.topology.declare_exchange("inner", "direct", internal=True)
    assert refused(publisher.publish_exchange, "nope") == (404, "no exchange 'nope' in vhost 'vh'")
    assert refused(publisher.publish_exchange, "inner") == (
        403,
        "cannot publish to internal exchange 'inner' in vhost 'vh'",
    )


def test_cc_and_bcc_add_routing_keys_and_bcc_is_removed(vhost, publisher):
    a, b, c = declare(vhost, "a", "b", "c")
    sent = message(routing_key="a", headers={"CC": ["b"], "BCC": ["c"], "other": 1})
    assert publisher.publish("", "a", sent).routed
    assert bodies(a) == bodies(b) == bodies(c) == [b"body"]
    assert sent.headers == {"CC": ["b"], "other": 1}
    assert sent.routing_keys == ["a", "b", "c"]


def test_a_cc_header_that_is_not_a_list_is_refused(publisher):
    assert refused(publisher.publish, "", "a", message(routing_key="a", headers={"CC": "b"})) == (
        406,
        'invalid message: {unacceptable_type_in_header,"CC",longstr}',
    )


def test_routing_follows_exchange_bindings_and_alternate_exchanges_once_per_queue(vhost):
    topology = vhost.topology
    q, spare = declare(vhost, "q", "spare")
    topology.declare_exchange("ae", "fanout")
    topology.declare_exchange("front", "direct", arguments={"alternate-exchange": "ae"})
    topology.declare_exchange("back", "fanout")
    topology.add_binding("queue", "spare", "ae", "", {}, {}, None)
    topology.add_binding("exchange", "back", "front", "k", {}, {}, None)
    topology.add_binding("queue", "q", "back", "", {}, {}, None)
    topology.add_binding("queue", "q", "front", "k", {}, {}, None)
    front = topology.exchanges["front"]
    assert vhost.publisher.route(front, "k", message(routing_key="k")) == [q]
    assert vhost.publisher.route(front, "other", message(routing_key="other")) == [spare]


def test_a_direct_reply_goes_to_its_target_and_never_counts_as_routed(publisher):
    replies: list[Message] = []
    publisher.reply_to_targets["amq.rabbitmq.reply-to.abc"] = replies.append
    reply = message(routing_key="amq.rabbitmq.reply-to.abc")
    result = publisher.publish("", "amq.rabbitmq.reply-to.abc", reply, mandatory=True)
    assert replies == [reply]
    assert (result.routed, result.returned) == (False, True)
    assert publisher.reply_to_exists("amq.rabbitmq.reply-to")
    assert publisher.reply_to_exists("amq.rabbitmq.reply-to.abc")
    assert not publisher.reply_to_exists("amq.rabbitmq.reply-to.other")


def test_dead_lettering_settles_then_republishes_with_an_x_death_record(vhost, publisher):
    removed: list[bytes] = []
    publisher.settled = lambda queue, entry: removed.append(entry.message.body)
    arguments = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dead"}
    source, dead = declare(vhost, "source", "dead")
    source.arguments.update(arguments)
    source.apply_policies(None, None)
    source.enqueue(message(routing_key="source", body=b"a"))
    entry = source.ready.pop()
    publisher.dead_letter(source, [entry], "rejected")
    assert removed == [b"a"]
    (dead_entry,) = list(dead.ready)
    assert dead_entry.message.routing_key == "dead"
    (death,) = dead_entry.message.headers["x-death"]
    assert (death["queue"], death["reason"], death["count"]) == ("source", "rejected", 1)


def test_without_a_dead_letter_exchange_messages_are_only_settled(vhost, publisher):
    removed: list[bytes] = []
    publisher.settled = lambda queue, entry: removed.append(entry.message.body)
    (q,) = declare(vhost, "q", arguments={"x-dead-letter-exchange": "missing"})
    q.enqueue(message(body=b"a"))
    publisher.dead_letter(q, [q.ready.pop()], "expired")
    assert removed == [b"a"]


def test_an_automatic_death_that_closes_a_loop_is_not_delivered(vhost, publisher):
    (q,) = declare(vhost, "q", arguments={"x-dead-letter-exchange": ""})
    q.enqueue(message(body=b"a"))
    publisher.dead_letter(q, [q.ready.pop()], "rejected")  # a rejection may loop back
    assert bodies(q) == [b"a"]
    publisher.dead_letter(q, [q.ready.pop()], "expired")  # an expiry back to q is a loop
    assert bodies(q) == []


# ---------------------------------------------------------------------- through the vhost
def names(queues: list[Any]) -> set[str]:
    return {q.name for q in queues}


def declare_queues(vhost: VirtualHost, *queue_names: str) -> None:
    declare(vhost, *queue_names)


def test_route_through_exchange_bindings_and_cycles(vhost):
    declare_queues(vhost, "q1", "q2")
    for name in ("a", "b", "c"):
        vhost.topology.declare_exchange(name, "fanout")
    vhost.topology.add_binding("exchange", "b", "a", "", {}, {}, None)
    vhost.topology.add_binding("exchange", "c", "b", "", {}, {}, None)
    vhost.topology.add_binding("exchange", "a", "c", "", {}, {}, None)
    vhost.topology.add_binding("queue", "q1", "c", "", {}, {}, None)
    vhost.topology.add_binding("queue", "q2", "a", "", {}, {}, None)
    assert names(vhost.route(vhost.exchange("b"), "k", message(routing_key="k"))) == {"q1", "q2"}


def test_alternate_exchange_only_when_nothing_matched(vhost):
    declare_queues(vhost, "main", "spare")
    vhost.topology.declare_exchange("ae", "fanout")
    vhost.topology.declare_exchange("empty", "direct")
    vhost.topology.declare_exchange("x", "direct", arguments={"alternate-exchange": "ae"})
    vhost.topology.add_binding("queue", "spare", "ae", "", {}, {}, None)
    vhost.topology.add_binding("queue", "main", "x", "k", {}, {}, None)
    vhost.topology.add_binding("exchange", "empty", "x", "dead-end", {}, {}, None)
    route = vhost.route
    assert names(route(vhost.exchange("x"), "k", message(routing_key="k"))) == {"main"}
    assert names(route(vhost.exchange("x"), "other", message(routing_key="other"))) == {"spare"}
    assert names(route(vhost.exchange("x"), "dead-end", message(routing_key="dead-end"))) == set()


def test_headers_exchange_ignores_cc_keys(vhost):
    declare_queues(vhost, "q")
    vhost.topology.add_binding("queue", "q", "amq.headers", "", {"h": 1}, {}, None)
    msg = message(routing_key="k", headers={"h": 1, "CC": ["x", "y"]})
    assert names(vhost.route(vhost.exchange("amq.headers"), "k", msg)) == {"q"}
