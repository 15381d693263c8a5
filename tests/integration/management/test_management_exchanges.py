"""Exchanges and bindings through the management HTTP API, with bindings made by pika."""

from __future__ import annotations

from tests.support.management import (
    NOT_FOUND,
    amqp_connection,
    q,
)


# ---------------------------------------------------------------------- exchanges
def test_exchange_put_get_delete(api, uid):
    path = f"/api/exchanges/%2F/{q(uid)}"
    assert api.call("PUT", path, {"type": "topic", "durable": True}).status == 201
    assert api.call("PUT", path, {"type": "topic", "durable": True}).status == 204
    clash = api.call("PUT", path, {"type": "fanout", "durable": True})
    assert clash.json["reason"] == (
        f"inequivalent arg 'type' for exchange '{uid}' in vhost '/': "
        "received 'fanout' but current is 'topic'"
    )
    doc = api.ok("GET", path)
    expected = {
        "name": uid,
        "vhost": "/",
        "type": "topic",
        "durable": True,
        "auto_delete": False,
        "internal": False,
        "arguments": {},
    }
    assert {k: doc[k] for k in expected} == expected
    unknown = api.call("PUT", f"/api/exchanges/%2F/{q(uid)}-x", {"type": "nope"})
    assert unknown.json == {"error": "bad_request", "reason": "unknown exchange type 'nope'"}
    default = api.ok("GET", "/api/exchanges/%2F/amq.default")
    assert (default["name"], default["type"], default["durable"]) == ("", "direct", True)
    names = {e["name"] for e in api.ok("GET", "/api/exchanges/%2F")}
    assert {"", "amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match", uid} <= names
    refused = {"error": "not_authorised", "reason": "Access refused."}
    for method, name in (("DELETE", "amq.direct"), ("DELETE", "amq.default"), ("PUT", "amq.x")):
        reply = api.call(method, f"/api/exchanges/%2F/{name}", {"type": "direct"})
        assert (reply.status, reply.json) == (401, refused)
    assert api.call("DELETE", path).status == 204
    assert api.call("DELETE", path).json == NOT_FOUND


# ---------------------------------------------------------------------- bindings
def test_bindings_listed_created_and_deleted(api, uid):
    connection = amqp_connection(api)
    try:
        channel = connection.channel()
        channel.exchange_declare(uid, "topic", auto_delete=False)
        channel.queue_declare(uid)
        channel.queue_bind(uid, uid, "a.*")
        channel.queue_bind(uid, uid, "b.#", arguments={"x-k": "v"})
        channel.exchange_bind(uid, "amq.topic", "c")
    finally:
        connection.close()
    between = api.ok("GET", f"/api/bindings/%2F/e/{q(uid)}/q/{q(uid)}")
    plain = next(b for b in between if b["routing_key"] == "a.*")
    assert plain == {
        "source": uid,
        "vhost": "/",
        "destination": uid,
        "destination_type": "queue",
        "routing_key": "a.*",
        "arguments": {},
        "properties_key": "a.%2A",
    }
    with_args = next(b for b in between if b["routing_key"] == "b.#")
    assert with_args["arguments"] == {"x-k": "v"}
    assert with_args["properties_key"].startswith("b.%23~")
    to_queue = api.ok("GET", f"/api/queues/%2F/{q(uid)}/bindings")
    assert to_queue[0] == {
        "source": "",
        "vhost": "/",
        "destination": uid,
        "destination_type": "queue",
        "routing_key": uid,
        "arguments": {},
        "properties_key": uid.replace("~", "%7E"),
    }
    assert len(to_queue) == 3
    assert len(api.ok("GET", f"/api/exchanges/%2F/{q(uid)}/bindings/source")) == 2
    incoming = api.ok("GET", f"/api/exchanges/%2F/{q(uid)}/bindings/destination")
    assert [(b["source"], b["destination_type"], b["routing_key"]) for b in incoming] == [
        ("amq.topic", "exchange", "c")
    ]
    single = f"/api/bindings/%2F/e/{q(uid)}/q/{q(uid)}/{q(plain['properties_key'])}"
    assert api.ok("GET", single) == plain
    assert api.call("DELETE", single).status == 204
    assert api.call("DELETE", single).json == NOT_FOUND
    created = api.call("POST", f"/api/bindings/%2F/e/{q(uid)}/q/{q(uid)}", {"routing_key": "n w"})
    assert (created.status, created.headers["location"]) == (201, f"{uid}/n%2Bw")
    created_e = api.call("POST", f"/api/bindings/%2F/e/amq.direct/e/{q(uid)}", {})
    assert (created_e.status, created_e.headers["location"]) == (201, f"{uid}/~")
    nowhere = api.call("POST", f"/api/bindings/%2F/e/{q(uid)}/q/no-such-queue", {})
    assert (nowhere.status, nowhere.json) == (
        404,
        {"error": "not_found", "reason": "no queue 'no-such-queue' in vhost '/'"},
    )
    api.ok("DELETE", f"/api/queues/%2F/{q(uid)}")
    api.ok("DELETE", f"/api/exchanges/%2F/{q(uid)}")
