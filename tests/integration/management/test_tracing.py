"""Firehose tracing as RabbitMQ 3.10 has it: the amq.rabbitmq.trace exchange every vhost holds,
tracing turned on and off per vhost through the management API's `tracing` field, and the
"publish.<exchange>" / "deliver.<queue>" messages a queue bound to the trace exchange with '#'
receives, from pika, the management API and an AMQP 1.0 client. Tests taking `api` run against
rabbitish and a real RabbitMQ with the same assertions; the differential test runs one scenario
on both and requires the same trace messages, header types included, node and connection names
aside."""

from __future__ import annotations

import re
import time
from typing import Any

import pika
import pytest

from tests.support.management import Api, q
from tests.support.tracing import TRACE_EXCHANGE, Traced, drain, traced_vhost, untyped
from tests.support.waiting import wait_until

RABBITMQ_EXCHANGES = [
    "",
    "amq.direct",
    "amq.fanout",
    "amq.headers",
    "amq.match",
    TRACE_EXCHANGE,
    "amq.topic",
]
PROPERTIES = pika.BasicProperties(
    content_type="text/plain",
    content_encoding="utf-8",
    headers={"s": "str", "i": 7, "b": True, "l": [1, "a"], "t": {"x": 1}, "big": 2**40},
    delivery_mode=2,
    priority=3,
    correlation_id="cid",
    reply_to="rt",
    expiration="60000",
    message_id="mid",
    timestamp=1700000000,
    type="ty",
    user_id="guest",
    app_id="app",
)


def _wait_for(channel: Any, queue: str, count: int) -> None:
    """The queue holds `count` messages (read from the queue itself, not from statistics)."""
    wait_until(
        lambda: channel.queue_declare(queue, passive=True).method.message_count >= count,
        timeout=10,
    )


# ---------------------------------------------------------------------- the exchange
def test_every_vhost_has_the_trace_exchange_where_rabbitmq_lists_it(api, uid):
    listed = api.ok("GET", "/api/exchanges/%2F")
    assert [e["name"] for e in listed if e["name"] in RABBITMQ_EXCHANGES] == RABBITMQ_EXCHANGES
    doc = next(e for e in listed if e["name"] == TRACE_EXCHANGE)
    expected = {
        "arguments": {},
        "auto_delete": False,
        "durable": True,
        "internal": True,
        "name": TRACE_EXCHANGE,
        "type": "topic",
        "vhost": "/",
    }
    assert {k: doc[k] for k in expected} == expected
    with traced_vhost(api, uid):
        names = [e["name"] for e in api.ok("GET", f"/api/exchanges/{q(uid)}")]
        assert TRACE_EXCHANGE in names
        assert api.ok("GET", f"/api/definitions/{q(uid)}")["exchanges"] == []


def test_clients_may_bind_to_the_trace_exchange_but_not_publish_to_or_delete_it(api, uid):
    text = f"exchange '{TRACE_EXCHANGE}' in vhost '/'"
    connection = pika.BlockingConnection(pika.URLParameters(api.amqp_url))
    try:
        channel = connection.channel()
        channel.exchange_declare(TRACE_EXCHANGE, passive=True)
        channel.exchange_declare(TRACE_EXCHANGE, "topic", durable=True, internal=True)
        channel.queue_declare(uid, exclusive=True)
        channel.queue_bind(uid, TRACE_EXCHANGE, "#")
        for attempt, code, reply in (
            (lambda ch: ch.exchange_delete(TRACE_EXCHANGE), 403, f"deletion of system {text}"),
            (lambda ch: ch.basic_publish(TRACE_EXCHANGE, "k", b""), 403, f"internal {text}"),
            (
                lambda ch: ch.exchange_declare(TRACE_EXCHANGE, "topic", durable=True),
                406,
                f"inequivalent arg 'internal' for {text}",
            ),
        ):
            channel = connection.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
                attempt(channel)
                channel.queue_declare("", exclusive=True)  # a round trip after a publish
            assert closed.value.reply_code == code
            assert reply in closed.value.reply_text
    finally:
        connection.close()
    path = f"/api/exchanges/%2F/{TRACE_EXCHANGE}"
    assert api.call("DELETE", path).status == 401
    published = api.call("POST", path + "/publish", {**_publish("k", "p")})
    assert published.json == {
        "error": "bad_request",
        "reason": f"403 ACCESS_REFUSED - cannot publish to internal {text}",
    }


def _publish(key: str, payload: str) -> dict[str, Any]:
    return {"properties": {}, "routing_key": key, "payload": payload, "payload_encoding": "string"}


# ---------------------------------------------------------------------- turning it on and off
def test_the_vhost_tracing_field_follows_put(api, uid):
    path = f"/api/vhosts/{q(uid)}"
    try:
        assert api.call("PUT", path, {}).status == 201
        assert api.ok("GET", path)["tracing"] is False
        assert api.call("PUT", path, {"tracing": True}).status == 204
        assert api.ok("GET", path)["tracing"] is True
        refused = api.call("PUT", path, {"tracing": "yes"})
        assert (refused.status, refused.json) == (
            400,
            {"error": "bad_request", "reason": ["not_boolean", "yes"]},
        )
        assert api.ok("GET", path)["tracing"] is True
        assert api.call("PUT", path, {"tracing": "false"}).status == 204
        assert api.ok("GET", path)["tracing"] is False
    finally:
        api.call("DELETE", path)


def test_trace_on_for_a_missing_vhost_through_rabbitish_tracing_resource(rabbitish_api: Api, uid):
    """rabbitish's `/api/tracing/{vhost}` is rabbitmqctl trace_on / trace_off: any vhost name,
    created or not, and it creates none."""
    assert rabbitish_api.call("PUT", f"/api/tracing/{q(uid)}").status == 204
    assert rabbitish_api.call("GET", f"/api/vhosts/{q(uid)}").status == 404
    try:
        assert rabbitish_api.call("PUT", f"/api/vhosts/{q(uid)}", {}).status == 201
        assert rabbitish_api.ok("GET", f"/api/vhosts/{q(uid)}")["tracing"] is True
        assert rabbitish_api.call("DELETE", f"/api/tracing/{q(uid)}").status == 204
        assert rabbitish_api.ok("GET", f"/api/vhosts/{q(uid)}")["tracing"] is False
    finally:
        rabbitish_api.call("DELETE", f"/api/vhosts/{q(uid)}")
    refused = rabbitish_api.call("PUT", f"/api/tracing/{q(uid)}", auth=("nobody", "x"))
    assert refused.status == 401


# ---------------------------------------------------------------------- what is traced
def firehose_scenario(api: Api, vhost: str, url: str) -> list[Traced]:
    """Publishes of every routing kind, gets, a requeue, a transaction rolled back and one
    committed, a consumer, and a publish and a get over HTTP; the trace messages, in order."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    for name in ("q1", "q2", "q3"):
        channel.queue_declare(name)
    channel.exchange_declare("fan", "fanout")
    channel.queue_bind("q2", "fan")
    channel.queue_bind("q1", "fan")
    channel.basic_publish("", "q1", b"one", PROPERTIES)
    channel.basic_publish("", "nosuch", b"two")
    cc_bcc = pika.BasicProperties(headers={"CC": ["q3", "q1"], "BCC": ["q2"]})
    channel.basic_publish("amq.direct", "zz", b"three", cc_bcc)
    channel.basic_publish("fan", "k", b"four")
    channel.basic_publish("amq.topic", "nothing.here", b"five")
    channel.basic_publish("", "q3", b"cc", pika.BasicProperties(headers={"CC": ["q2", "zz"]}))
    method, _, _ = channel.basic_get("q1")
    channel.basic_nack(method.delivery_tag, requeue=True)
    channel.basic_get("q1", auto_ack=True)
    channel.tx_select()
    channel.basic_publish("", "q3", b"rolled back")
    channel.tx_rollback()
    channel.basic_publish("", "q3", b"committed")
    channel.tx_commit()
    got: list[bytes] = []
    channel.basic_consume("q3", lambda _c, _m, _p, body: got.append(body), auto_ack=True)
    deadline = time.monotonic() + 10
    while len(got) < 2:
        assert time.monotonic() < deadline, "no deliveries from q3"
        connection.process_data_events(time_limit=0.05)
    api.ok("POST", f"/api/exchanges/{q(vhost)}/amq.default/publish", _publish("q2", "http"))
    api.ok(
        "POST",
        f"/api/queues/{q(vhost)}/q2/get",
        {"count": 1, "ackmode": "ack_requeue_false", "encoding": "auto"},
    )
    _wait_for(connection.channel(), "firehose", 14)
    connection.close()
    return drain(url, "firehose")


def test_publishes_and_deliveries_are_traced_with_rabbitmqs_headers(api, uid):
    node = api.ok("GET", "/api/overview")["node"]
    amqp_port = api.amqp_url.rsplit(":", 1)[1].split("/")[0]
    with traced_vhost(api, uid) as url:
        traces = firehose_scenario(api, uid, url)
    assert [(t.routing_key, t.body) for t in traces] == [
        ("publish.", b"one"),
        ("publish.", b"two"),
        ("publish.amq.direct", b"three"),
        ("publish.fan", b"four"),
        ("publish.amq.topic", b"five"),
        ("publish.", b"cc"),
        ("deliver.q1", b"one"),
        ("deliver.q1", b"one"),
        ("publish.", b"rolled back"),
        ("publish.", b"committed"),
        ("deliver.q3", b"cc"),
        ("deliver.q3", b"committed"),
        ("publish.", b"http"),
        ("deliver.q2", b"four"),
    ]
    assert all(t.exchange == TRACE_EXCHANGE and t.properties == {} for t in traces)
    first = traces[0].headers
    assert list(first) == [
        *("exchange_name", "routing_keys", "properties", "node"),
        *("vhost", "connection", "channel", "user", "routed_queues"),
    ]
    assert untyped(first["properties"]) == {
        "app_id": "app",
        "user_id": "guest",
        "type": "ty",
        "timestamp": 1700000000,
        "message_id": "mid",
        "expiration": "60000",
        "reply_to": "rt",
        "correlation_id": "cid",
        "priority": 3,
        "delivery_mode": 2,
        "headers": {"s": "str", "i": 7, "b": True, "l": [1, "a"], "t": {"x": 1}, "big": 2**40},
        "content_encoding": "utf-8",
        "content_type": "text/plain",
    }
    assert first["node"] == ("longstr", node)
    assert (first["vhost"], first["channel"], first["user"]) == (
        ("longstr", uid),
        ("signedint", 1),
        ("longstr", "guest"),
    )
    pika_connection = rf"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:{amqp_port}"
    http_connection = r"<.+\.\d+\.\d+\.\d+>"  # RabbitMQ's direct connection: a process id
    names = [untyped(t.headers["connection"]) for t in traces]
    assert all(re.fullmatch(pika_connection, name) for name in names[:-2])
    assert all(re.fullmatch(http_connection, name) for name in names[-2:])  # publish, get
    routed = {
        t.body: untyped(t.headers["routed_queues"]) for t in traces if "routed_queues" in t.headers
    }
    assert routed == {
        b"one": ["q1"],
        b"two": ["nosuch"],  # the default exchange names the key, queue or not
        b"three": [],
        b"four": ["q1", "q2"],
        b"five": [],
        b"cc": ["q2", "q3", "zz"],
        b"rolled back": ["q3"],
        b"committed": ["q3"],
        b"http": ["q2"],
    }
    three = traces[2].headers
    assert untyped(three["routing_keys"]) == ["zz", "q3", "q1", "q2"]  # BCC's key, not header
    assert untyped(three["properties"]) == {"headers": {"CC": ["q3", "q1"]}}
    deliveries = [t.headers for t in traces if t.routing_key.startswith("deliver.")]
    assert [untyped(h["redelivered"]) for h in deliveries] == [0, 1, 0, 0, 0]
    assert list(deliveries[0]) == [
        *("exchange_name", "routing_keys", "properties", "node"),
        *("redelivered", "vhost", "connection", "channel", "user"),
    ]


@pytest.mark.rabbitmq
def test_the_trace_messages_are_rabbitmqs(rabbitish_api: Api, rabbitmq_api: Api, uid):
    """One scenario on both brokers: the same trace messages in the same order, every header
    with the same value and wire type, but for the node's and the connections' names."""

    def run(api: Api) -> list[tuple[str, str, dict[str, Any], bytes]]:
        with traced_vhost(api, uid) as url:
            traces = firehose_scenario(api, uid, url)
        masked = []
        for trace in traces:
            headers = dict(trace.headers)
            headers["node"] = headers["connection"] = ("longstr", "...")
            masked.append((trace.routing_key, trace.exchange, headers, trace.body))
        return masked

    assert run(rabbitish_api) == run(rabbitmq_api)


def test_amqp_1_0_transfers_are_traced(api, uid):
    """A 1.0 sender's transfers are traced as publishes and a 1.0 receiver's as deliveries,
    naming the 1.0 connection (its properties are what each broker maps the 1.0 message to)."""
    proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton.utils import BlockingConnection

    amqp_port = api.amqp_url.rsplit(":", 1)[1].split("/")[0]
    with traced_vhost(api, uid) as url:
        connection = BlockingConnection(
            f"amqp://guest:guest@127.0.0.1:{amqp_port}", timeout=5, virtual_host=f"vhost:{uid}"
        )
        try:
            channel_connection = pika.BlockingConnection(pika.URLParameters(url))
            channel_connection.channel().queue_declare("q10")
            channel_connection.close()
            sender = connection.create_sender("/queue/q10")
            sender.send(proton.Message(body=b"from 1.0", inferred=True))
            receiver = connection.create_receiver("/queue/q10", credit=1)
            assert bytes(receiver.receive(timeout=5).body) == b"from 1.0"
            receiver.accept()
        finally:
            connection.close()
        check = pika.BlockingConnection(pika.URLParameters(url))
        _wait_for(check.channel(), "firehose", 2)
        check.close()
        traces = drain(url, "firehose")
    assert [(t.routing_key, t.body) for t in traces] == [
        ("publish.", b"from 1.0"),
        ("deliver.q10", b"from 1.0"),
    ]
    name = rf"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:{amqp_port}"
    for trace in traces:
        headers = {k: untyped(v) for k, v in trace.headers.items()}
        assert re.fullmatch(name, headers["connection"])
        assert (headers["vhost"], headers["user"]) == (uid, "guest")
        assert (headers["exchange_name"], headers["routing_keys"]) == ("", ["q10"])
    assert untyped(traces[0].headers["routed_queues"]) == ["q10"]
    assert untyped(traces[1].headers["redelivered"]) == 0
