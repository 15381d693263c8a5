"""The firehose driven through the engine (no front end): which vhosts are traced, what a
publish and a delivery copy to amq.rabbitmq.trace, and what is never copied. Header values are
read through the engine-level codec, which keeps values, not wire types (the integration tests
check the 0-9-1 types)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from rabbitish.engine.delivery import Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.message import FieldValue
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import SessionRef, SocketStats
from rabbitish.engine.tracing import TraceOrigin, origin_of, property_table
from rabbitish.engine.vhost import VirtualHost
from rabbitish.wire_names import NODE_NAME, TRACE_EXCHANGE
from tests.support.engine import CODEC, Taker, message

PUBLISHER = TraceOrigin("10.0.0.1:40000 -> 10.0.0.2:5672", 7, "alice")


@dataclass
class Connection:
    """As much of a FrontEndConnection as a trace reads: its socket."""

    socket: SocketStats


def traced(vhost: VirtualHost) -> Any:
    """A queue bound to the trace exchange with '#', as a firehose user binds one."""
    queue = vhost.declare_queue("firehose", owner=None)
    vhost.add_binding("queue", "firehose", TRACE_EXCHANGE, "#", {}, {}, None)
    return queue


def copies(queue: Any) -> list[tuple[str, dict[str, Any], bytes]]:
    """(routing key, headers, body) of every trace message in `queue`, taken off it."""
    out = []
    for entry in queue.ready.clear():
        trace = entry.message
        assert trace.exchange == TRACE_EXCHANGE
        out.append((trace.routing_key, CODEC.decode(trace.raw_properties)["headers"], trace.body))
    return out


def test_the_trace_exchange_is_internal_and_cannot_be_deleted(vhost):
    exchange = vhost.exchanges[TRACE_EXCHANGE]
    assert (exchange.type_name, exchange.durable, exchange.internal) == ("topic", True, True)
    with pytest.raises(AMQPError) as refused:
        vhost.publish(TRACE_EXCHANGE, "x", message())
    assert refused.value.reply_code == 403
    with pytest.raises(AMQPError) as refused:
        vhost.delete_exchange(TRACE_EXCHANGE)
    assert refused.value.reply_code == 403


def test_tracing_is_off_by_default_and_copies_nothing(vhost):
    firehose = traced(vhost)
    vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"m"), source=PUBLISHER)
    assert vhost.firehose is None and not vhost.tracing
    assert copies(firehose) == []


def test_tracing_is_a_set_of_names_on_the_node(node: Node):
    """As RabbitMQ's trace_vhosts: on for a vhost not created yet, kept across a vhost's
    deletion, and only the named vhost is traced."""
    node.set_tracing("later", True)
    assert node.tracing("later") and "later" not in node.vhosts
    assert node.add_vhost("later").tracing
    node.delete_vhost("later")
    assert node.add_vhost("later").tracing
    assert not node.vhosts["/"].tracing
    node.set_tracing("later", False)
    assert not node.vhosts["later"].tracing and not node.tracing("later")
    node.set_tracing("/", True)
    node.set_tracing("/", True)  # again: no change
    assert node.traced_vhosts == {"/"}


def test_a_publish_is_copied_with_rabbitmqs_headers(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    queue = vhost.declare_queue("q", owner=None)
    published = message(b"body", "q", content_type="text/plain", headers={"h": 1}, priority=3)
    vhost.publish("", "q", published, source=PUBLISHER)
    [(key, headers, body)] = copies(firehose)
    assert (key, body) == ("publish.", b"body")
    assert headers == {
        "exchange_name": "",
        "routing_keys": ["q"],
        "properties": {"priority": 3, "headers": {"h": 1}, "content_type": "text/plain"},
        "node": NODE_NAME,
        "vhost": "/",
        "connection": PUBLISHER.connection,
        "channel": 7,
        "user": "alice",
        "routed_queues": ["q"],
    }
    assert list(headers) == [
        *("exchange_name", "routing_keys", "properties", "node"),
        *("vhost", "connection", "channel", "user", "routed_queues"),
    ]
    assert queue.message_count == 1  # the message itself went on as usual


def test_routed_queues_are_what_rabbitmqs_routing_returns(node, vhost):
    """Through the default exchange: every routing key (CC included), existing queue or not;
    through another exchange: the queues reached. Sorted, each once; none when unroutable."""
    node.set_tracing("/", True)
    firehose = traced(vhost)
    for name in ("b", "a"):
        vhost.declare_queue(name, owner=None)
        vhost.add_binding("queue", name, "amq.fanout", "", {}, {}, None)
    cc = CODEC.from_json({"headers": {"CC": ["zz", "a"]}})
    vhost.publish("", "b", CODEC.new_message("", "b", cc, b"cc"), source=PUBLISHER)
    vhost.publish("amq.fanout", "k", message(b"fan", "k", "amq.fanout"), source=PUBLISHER)
    vhost.publish("amq.topic", "k", message(b"none", "k", "amq.topic"), source=PUBLISHER)
    got = [(key, h["routing_keys"], h["routed_queues"]) for key, h, _ in copies(firehose)]
    assert got == [
        ("publish.", ["b", "zz", "a"], ["a", "b", "zz"]),
        ("publish.amq.fanout", ["k"], ["a", "b"]),
        ("publish.amq.topic", ["k"], []),
    ]


def test_a_publish_is_copied_before_any_queue_has_it(node, vhost):
    """A consumer waiting on the queue is given the message during the publish: its delivery
    copy must follow the publish copy, as in RabbitMQ."""
    node.set_tracing("/", True)
    firehose = traced(vhost)
    queue = vhost.declare_queue("q", owner=None)
    taker = Taker(queue, settled_on_delivery=True)
    queue.add_consumer(taker)
    vhost.publish("", "q", message(b"m"), source=PUBLISHER)
    assert [key for key, _, _ in copies(firehose)] == ["publish.", "deliver.q"]


def test_a_transactional_publish_is_copied_when_published_even_if_rolled_back(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    queue = vhost.declare_queue("q", owner=None)
    tx = node.transactions.begin(owner=None)
    vhost.publish("", "q", message(b"staged"), tx=tx, source=PUBLISHER)
    assert [body for _, _, body in copies(firehose)] == [b"staged"]
    tx.rollback()
    assert queue.message_count == 0 and copies(firehose) == []


def test_deliveries_and_gets_are_copied_with_redelivered(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"m"), source=PUBLISHER)
    got = queue.get(False, PUBLISHER)
    assert got is not None
    settle([got], Outcome.REQUEUE)
    taker = Taker(queue)
    queue.add_consumer(taker)
    delivered = [(key, h.get("redelivered"), h["channel"], b) for key, h, b in copies(firehose)]
    assert delivered == [
        ("publish.", None, 7, b"m"),
        ("deliver.q", 0, 7, b"m"),
        ("deliver.q", 1, 0, b"m"),  # a consumer with no session: no connection named
    ]


def test_delivery_headers_in_rabbitmqs_order(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"m"))
    copies(firehose)
    queue.get(True, PUBLISHER)
    [(_, headers, _)] = copies(firehose)
    assert list(headers) == [
        *("exchange_name", "routing_keys", "properties", "node"),
        *("redelivered", "vhost", "connection", "channel", "user"),
    ]


def test_trace_messages_are_never_traced(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"m"), source=PUBLISHER)
    taker = Taker(firehose, settled_on_delivery=True)
    firehose.add_consumer(taker)  # takes the publish copy: no deliver.firehose copy of it
    assert [d.entry.message.routing_key for d in taker.deliveries] == ["publish."]
    assert firehose.message_count == 0


def test_turning_tracing_off_stops_the_copies(node, vhost):
    node.set_tracing("/", True)
    firehose = traced(vhost)
    vhost.declare_queue("q", owner=None)
    node.set_tracing("/", False)
    vhost.publish("", "q", message(b"m"), source=PUBLISHER)
    assert vhost.firehose is None and vhost.publisher.firehose is None
    assert copies(firehose) == []


def test_origin_of_a_session_is_its_connections_name_number_and_user():
    socket = SocketStats(peer_host="127.0.0.1", peer_port=54321, host="127.0.0.1", port=5672)
    session = SessionRef(Connection(socket), 3, "bob")  # type: ignore[arg-type]
    assert origin_of(session) == TraceOrigin("127.0.0.1:54321 -> 127.0.0.1:5672", 3, "bob")
    assert origin_of(PUBLISHER) is PUBLISHER
    assert origin_of(None) == TraceOrigin("", 0, "")


def test_property_table_lists_properties_in_reverse_field_order_with_rabbitmqs_types():
    headers = {"k": FieldValue("long", 1)}
    table = property_table(
        {"content_type": "t", "headers": headers, "delivery_mode": 2, "timestamp": 1700000000}
    )
    assert table == {
        "timestamp": FieldValue("signedint", 1700000000),
        "delivery_mode": FieldValue("signedint", 2),
        "headers": FieldValue("table", headers),
        "content_type": FieldValue("longstr", b"t"),
    }
    assert list(table) == ["timestamp", "delivery_mode", "headers", "content_type"]


def test_the_memory_monitor_hears_of_the_copies_bytes(node, vhost):
    node.set_tracing("/", True)
    traced(vhost)
    vhost.declare_queue("q", owner=None)
    sizes: list[int] = []
    vhost.on_published = sizes.append
    vhost.publish("", "q", message(b"12345"), source=PUBLISHER)
    assert sizes == [5, 5]  # the message, then its copy
