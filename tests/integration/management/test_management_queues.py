"""Queues through the management HTTP API: declare, inequivalent redeclare, reserved names,
counts, purge, conditional delete and exclusive queues of other connections."""

from __future__ import annotations

from tests.support.management import (
    LOCKED,
    NOT_FOUND,
    amqp_connection,
    get_body,
    q,
    ready,
)
from tests.support.waiting import wait_until


# ---------------------------------------------------------------------- queues
def test_queue_put_get_and_inequivalent_redeclare(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    assert api.call("PUT", path, {"arguments": {"x-message-ttl": 60000}}).status == 201
    assert api.call("PUT", path, {"arguments": {"x-message-ttl": 60000}}).status == 204
    clash = api.call("PUT", path, {"durable": True, "arguments": {"x-message-ttl": 60000}})
    assert clash.status == 400
    assert clash.json == {
        "error": "bad_request",
        "reason": f"inequivalent arg 'durable' for queue '{uid}' in vhost '/': "
        "received 'true' but current is 'false'",
    }
    no_ttl = api.call("PUT", path, {})
    assert no_ttl.json["reason"] == (
        f"inequivalent arg 'x-message-ttl' for queue '{uid}' in vhost '/': received none but "
        "current is the value '60000' of type 'long'"
    )
    doc = api.ok("GET", path)
    expected = {
        "name": uid,
        "vhost": "/",
        "durable": False,
        "auto_delete": False,
        "exclusive": False,
        "arguments": {"x-message-ttl": 60000},
        "type": "classic",
    }
    assert {k: doc[k] for k in expected} == expected
    assert doc["consumer_details"] == []
    assert any(item["name"] == uid for item in api.ok("GET", "/api/queues"))
    assert any(item["name"] == uid for item in api.ok("GET", "/api/queues/%2F"))
    assert api.call("DELETE", path).status == 204
    assert (api.call("DELETE", path).status, api.call("GET", path).json) == (404, NOT_FOUND)


def test_queue_names_with_slashes_and_reserved_names(api, uid):
    name = f"{uid}/with slash"
    path = f"/api/queues/%2F/{q(name)}"
    assert api.call("PUT", path, {}).status == 201
    assert api.ok("GET", path)["name"] == name
    assert api.call("DELETE", path).status == 204
    refused = api.call("PUT", "/api/queues/%2F/amq.reserved", {})
    assert (refused.status, refused.json) == (
        401,
        {"error": "not_authorised", "reason": "Access refused."},
    )
    no_vhost = api.call("PUT", f"/api/queues/nope/{q(uid)}", {})
    assert (no_vhost.status, no_vhost.json) == (
        404,
        {"error": "not_found", "reason": "vhost_not_found"},
    )
    bad_json = api.call("PUT", path, None, headers={})
    assert bad_json.status == 201  # an empty body declares with the defaults
    api.ok("DELETE", path)
    invalid = api.call("PUT", path, {"arguments": {"x-max-length": "abc"}})
    assert invalid.json == {
        "error": "bad_request",
        "reason": f"invalid arg 'x-max-length' for queue '{name}' in vhost '/': "
        '"expected integer, got longstr"',
    }


def test_counts_purge_and_conditional_delete(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    api.ok("PUT", path, {})
    connection = amqp_connection(api)
    try:
        channel = connection.channel()
        for i in range(3):
            channel.basic_publish("", uid, f"m{i}".encode())
        channel.basic_get(uid)  # one unacknowledged
        doc = wait_until(
            lambda: (d := api.ok("GET", path)).get("messages_unacknowledged") == 1 and d
        )
        assert (doc["messages"], doc["messages_ready"]) == (3, 2)
        not_empty = api.call("DELETE", path + "?if-empty=true")
        assert (not_empty.status, not_empty.json) == (
            400,
            {"error": "bad_request", "reason": f"queue '{uid}' in vhost '/' not empty"},
        )
        assert api.call("DELETE", path + "/contents").status == 204
        ready(api, uid, 0)
        channel.basic_consume(uid, lambda *a: None)
        in_use = api.call("DELETE", path + "?if-unused=true")
        assert in_use.json["reason"] == f"queue '{uid}' in vhost '/' in use"
    finally:
        connection.close()
    assert api.call("DELETE", path + "/contents").status == 204
    assert api.call("DELETE", "/api/queues/%2F/no-such-queue/contents").json == NOT_FOUND
    assert api.call("DELETE", path).status == 204


def test_exclusive_queue_of_another_connection_is_locked(api, uid):
    connection = amqp_connection(api)
    try:
        channel = connection.channel()
        channel.queue_declare(uid, exclusive=True)
        channel.basic_publish("", uid, b"mine")
        path = f"/api/queues/%2F/{q(uid)}"
        assert wait_until(lambda: api.ok("GET", path)["exclusive"]) is True
        locked = LOCKED.format(uid)
        for method, suffix, body in (("PUT", "", {}), ("DELETE", "", None)):
            reply = api.call(method, path + suffix, body)
            assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": locked})
        assert api.call("DELETE", path + "/contents").json["reason"] == locked
        get = api.call("POST", path + "/get", get_body(1))
        # the reason is the channel.close text, cut to 252 bytes plus "..." like on the wire
        wire = f"405 RESOURCE_LOCKED - {locked}"
        assert (get.status, get.json["reason"]) == (400, wire[: 4 + 252] + "...")
    finally:
        connection.close()
