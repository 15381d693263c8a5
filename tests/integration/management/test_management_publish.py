"""Publishing and getting messages through the management HTTP API (urllib and aiohttp), checked
with pika and aio-pika consumers: payload encodings, properties, requeueing and errors."""

from __future__ import annotations

import base64

import aio_pika
import aiohttp

from tests.support.management import (
    GUEST,
    amqp_connection,
    get_body,
    publish_body,
    q,
    ready,
)


def test_publish_then_peek_requeues_in_order(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    api.ok("PUT", path, {})
    publish = "/api/exchanges/%2F/amq.default/publish"
    headers = {"i": 5, "big": 5000000000, "f": 1.5, "s": "str", "b": False, "l": [1, "x"]}
    first = publish_body(uid, "été", content_type="text/plain", headers=headers, priority=3)
    assert api.ok("POST", publish, first) == {"routed": True}
    binary = {"routing_key": uid, "payload": "/w==", "payload_encoding": "base64", "properties": {}}
    assert api.ok("POST", publish, binary) == {"routed": True}
    assert api.ok("POST", publish, publish_body(uid, "third", message_id="m3")) == {"routed": True}
    ready(api, uid, 3)
    peeked = api.ok("POST", path + "/get", get_body(2))
    assert peeked == [
        {
            "payload_bytes": 5,
            "redelivered": False,
            "exchange": "",
            "routing_key": uid,
            "message_count": 2,
            "properties": {"content_type": "text/plain", "headers": headers, "priority": 3},
            "payload": "été",
            "payload_encoding": "string",
        },
        {
            "payload_bytes": 1,
            "redelivered": False,
            "exchange": "",
            "routing_key": uid,
            "message_count": 1,
            "properties": [],
            "payload": "/w==",
            "payload_encoding": "base64",
        },
    ]
    again = api.ok("POST", path + "/get", get_body(5, "reject_requeue_true", truncate=2))
    assert [m["redelivered"] for m in again] == [True, True, False]
    assert [m["payload_bytes"] for m in again] == [5, 1, 5]
    assert [m["payload"] for m in again] == ["é", "/w==", "th"]
    assert [m["message_count"] for m in again] == [2, 1, 0]
    as_base64 = api.ok("POST", path + "/get", {**get_body(1), "encoding": "base64"})
    assert as_base64[0]["payload"] == base64.b64encode("été".encode()).decode()
    consumed = api.ok("POST", path + "/get", get_body(1, "ack_requeue_false"))
    assert consumed[0]["payload"] == "été"
    ready(api, uid, 2)
    connection = amqp_connection(api)
    try:
        method, _props, body = connection.channel().basic_get(uid, auto_ack=True)
        assert (body, method.redelivered) == (b"\xff", True)
    finally:
        connection.close()
    assert api.ok("POST", path + "/get", get_body(1, "reject_requeue_false"))[0]["payload"] == (
        "third"
    )
    ready(api, uid, 0)
    assert api.ok("POST", path + "/get", get_body(3)) == []


def test_publish_routes_through_exchanges(api, uid):
    exchange = f"/api/exchanges/%2F/{q(uid)}"
    api.ok("PUT", exchange, {"type": "fanout"})
    assert api.ok("POST", exchange + "/publish", publish_body("k", "lost")) == {"routed": False}
    api.ok("PUT", f"/api/queues/%2F/{q(uid)}", {})
    api.ok("POST", f"/api/bindings/%2F/e/{q(uid)}/q/{q(uid)}", {"routing_key": "ignored"})
    assert api.ok("POST", exchange + "/publish", publish_body("k", "kept")) == {"routed": True}
    got = api.ok("POST", f"/api/queues/%2F/{q(uid)}/get", get_body(5))
    assert [(m["exchange"], m["routing_key"], m["payload"]) for m in got] == [(uid, "k", "kept")]
    api.ok("DELETE", f"/api/queues/%2F/{q(uid)}")
    api.ok("DELETE", exchange)


def test_publish_errors(api):
    publish = "/api/exchanges/%2F/amq.default/publish"
    empty = api.call("POST", publish, {})
    assert (empty.status, empty.json["reason"]) == (
        400,
        "[{key_missing,routing_key},\n {key_missing,properties},\n {key_missing,payload},\n"
        " {key_missing,payload_encoding}]",
    )
    partial = api.call("POST", publish, {"routing_key": "x", "payload": "y"})
    assert partial.json["reason"] == "[{key_missing,properties},{key_missing,payload_encoding}]"
    at_79 = api.call("POST", publish, {"routing_key": "x"})  # ~p breaks a list of 79
    assert at_79.json["reason"] == (
        "[{key_missing,properties},\n {key_missing,payload},\n {key_missing,payload_encoding}]"
    )
    missing = api.call("POST", "/api/exchanges/%2F/nope/publish", publish_body("k", "x"))
    assert (missing.status, missing.json) == (
        400,
        {"error": "bad_request", "reason": "404 NOT_FOUND - no exchange 'nope' in vhost '/'"},
    )
    cases = [
        ({"payload_encoding": "base64", "payload": "%%%"}, ["not_base64", "%%%"]),
        ({"payload_encoding": "nope"}, ["unsupported_encoding", "nope"]),
        ({"properties": {"priority": "x"}}, ["not_int", "priority"]),
        (
            {"properties": {"expiration": "abc"}},
            "406 PRECONDITION_FAILED - invalid expiration 'abc': no_integer",
        ),
        ({"properties": {"headers": {"n": None}}}, "null_not_allowed"),
        (
            {"properties": {"user_id": "mallory"}},
            "406 PRECONDITION_FAILED - user_id property set to 'mallory' but authenticated "
            "user was 'guest'",
        ),
    ]
    for change, reason in cases:
        reply = api.call("POST", publish, {**publish_body("k", "x"), **change})
        assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": reason})
    no_vhost = api.call("POST", "/api/exchanges/nope/amq.default/publish", publish_body("k", "x"))
    assert (no_vhost.status, no_vhost.json["error"]) == (401, "not_authorised")


def test_get_errors(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    api.ok("PUT", path, {})
    missing = api.call("POST", path + "/get", {})
    assert (
        missing.json["reason"]
        == "[{key_missing,ackmode},{key_missing,count},{key_missing,encoding}]"
    )
    encoding = api.call("POST", path + "/get", {**get_body(1), "encoding": "x"})
    assert encoding.json == {
        "error": "bad_request",
        "reason": "Unsupported encoding. Please use auto or base64.",
    }
    truncate = api.call("POST", path + "/get", get_body(1, truncate="x"))
    assert truncate.json == {"error": "bad_request", "reason": ["not_integer", "x"]}
    assert api.call("POST", path + "/get", get_body(1, "bogus")).status == 500
    assert api.call("POST", path + "/get", {**get_body(1), "count": "2"}).status == 200
    gone = api.call("POST", "/api/queues/%2F/no-such-queue/get", get_body(1))
    assert (gone.status, gone.json) == (
        404,
        {"error": "not_found", "reason": "NOT_FOUND - no queue 'no-such-queue' in vhost '/'"},
    )
    not_json = api.call("PUT", path, None, headers={})
    assert not_json.status == 204
    api.ok("DELETE", path)


async def test_get_while_consumer_waits_and_aio_pika_sees_redelivery(api, uid):
    """A peek puts messages back; a consumer that attaches afterwards gets them, marked
    redelivered, in publication order."""
    connection = await aio_pika.connect(api.amqp_url)
    try:
        channel = await connection.channel()
        queue = await channel.declare_queue(uid, auto_delete=True)
        for i in range(3):
            await channel.default_exchange.publish(aio_pika.Message(b"m%d" % i), uid)
        async with aiohttp.ClientSession(headers=GUEST) as http:
            url = f"{api.base}/api/queues/%2F/{q(uid)}/get"
            async with http.post(url, json=get_body(2)) as response:
                assert response.status == 200
                assert [m["payload"] for m in await response.json()] == ["m0", "m1"]
        seen = []
        async with queue.iterator() as messages:
            async for message in messages:
                seen.append((message.body, message.redelivered))
                await message.ack()
                if len(seen) == 3:
                    break
        assert seen == [(b"m0", True), (b"m1", True), (b"m2", False)]
    finally:
        await connection.close()
