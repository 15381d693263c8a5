"""The management HTTP API over real HTTP (urllib and aiohttp clients), with state made by real
AMQP clients (pika, aio-pika, aiormq). Most tests run against rabbitish and against a real
RabbitMQ with its management plugin (`api` fixture): same status codes, same JSON fields and
error bodies."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import aio_pika
import aiohttp
import aiormq
import pika
import pika.exceptions
import pytest

import rabbitish
from tests.support.real_rabbitmq import (
    RealRabbit,
    _free_port,
    _packaged_version,
    rabbitmq_available,
)

T = TypeVar("T")
GUEST = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
NOT_FOUND = {"error": "Object Not Found", "reason": "Not Found"}
LOCKED = (
    "cannot obtain exclusive access to locked queue '{}' in vhost '/'. It could be originally "
    "declared on another connection or the exclusive property value does not match that of the "
    "original declaration."
)


# ---------------------------------------------------------------------- HTTP helpers
@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Api:
    """One broker: its AMQP URL and its management API."""

    amqp_url: str
    base: str
    kind: str

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: tuple[str, str] | None = ("guest", "guest"),
        headers: dict[str, str] | None = None,
    ) -> Reply:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            all_headers["Authorization"] = f"Basic {token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, all_headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Reply(response.status, _lower(response.headers), response.read().decode())
        except urllib.error.HTTPError as err:
            return Reply(err.code, _lower(err.headers), err.read().decode())

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        reply = self.call(method, path, body)
        assert reply.status in (200, 201, 204), (reply.status, reply.text)
        return reply.json if reply.text else None


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def q(name: str) -> str:
    return quote(name, safe="")


def wait_for(check: Callable[[], T], timeout: float = 5.0) -> T:
    """Poll until `check()` is truthy (RabbitMQ's statistics arrive a moment late)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            assert value, "condition not met in time"
            return value
        time.sleep(0.05)


# ---------------------------------------------------------------------- brokers
class _FastStatsRabbit(RealRabbit):
    """A RabbitMQ whose management statistics refresh every second instead of every 5 s (the
    collectors run at the shortest sample interval of the retention policies)."""

    def _write_config(self) -> None:
        super()._write_config()
        with (self.data_dir / "rabbitmq.conf").open("a") as conf:
            conf.write("collect_statistics_interval = 100\n")
            for section in ("global", "basic", "detailed"):
                conf.write(f"management.sample_retention_policies.{section}.minute = 1\n")


@contextlib.contextmanager
def _rabbitmq_with_management() -> Iterator[RealRabbit]:
    data_dir = Path(tempfile.mkdtemp(prefix="rabbitish-rmq-mgmt-"))
    port = _free_port()
    node = _FastStatsRabbit(
        port=port,
        url=f"amqp://guest:guest@127.0.0.1:{port}/%2F",
        management_port=_free_port(),
        version=_packaged_version(),
        data_dir=data_dir,
        dist_port=_free_port(),
        nodename=f"rabbitish-mgmt-{uuid.uuid4().hex[:12]}@localhost",
    )
    try:
        node.start()
        yield node
    finally:
        node.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def rabbitmq_api() -> Iterator[Api]:
    """A real RabbitMQ with the management plugin (RABBITMQ_MANAGEMENT_URL + RABBITMQ_URL reuse
    one already running)."""
    if os.environ.get("RABBITMQ_MANAGEMENT_URL") and os.environ.get("RABBITMQ_URL"):
        yield Api(os.environ["RABBITMQ_URL"], os.environ["RABBITMQ_MANAGEMENT_URL"], "rabbitmq")
        return
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with _rabbitmq_with_management() as node:
        yield Api(node.url, f"http://127.0.0.1:{node.management_port}", "rabbitmq")


@pytest.fixture(scope="session")
def rabbitish_api(rabbitish_broker, rabbitish_management_url) -> Api:
    base = f"http://127.0.0.1:{rabbitish_broker.management_port}"
    return Api(rabbitish_broker.url, base, "rabbitish")


@pytest.fixture(params=["rabbitish", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def api(request) -> Api:
    """Runs a test against rabbitish's management API and against RabbitMQ's."""
    return request.getfixturevalue(f"{request.param}_api")


def _pika(api: Api, name: str | None = None) -> pika.BlockingConnection:
    params = pika.URLParameters(api.amqp_url)
    if name is not None:
        params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


def _ready(api: Api, queue: str, count: int) -> dict[str, Any]:
    """The queue document once it reports `count` ready messages."""

    def check() -> dict[str, Any] | None:
        doc = api.ok("GET", f"/api/queues/%2F/{q(queue)}")
        return doc if doc.get("messages_ready") == count else None

    return wait_for(check)


# ---------------------------------------------------------------------- auth, routing
def test_basic_auth_and_whoami(api):
    anonymous = api.call("GET", "/api/overview", auth=None)
    assert anonymous.status == 401
    assert anonymous.headers["www-authenticate"] == 'Basic realm="RabbitMQ Management"'
    assert anonymous.text == ""
    wrong = api.call("GET", "/api/queues", auth=("guest", "nope"))
    assert wrong.status == 401
    assert wrong.json == {"error": "not_authorized", "reason": "Login failed"}
    assert api.call("GET", "/api/whoami", auth=("nobody", "x")).status == 401
    assert api.ok("GET", "/api/whoami") == {"name": "guest", "tags": ["administrator"]}


def test_unknown_paths_and_methods(api):
    missing = api.call("GET", "/api/nonexistent")
    assert (missing.status, missing.json) == (404, NOT_FOUND)
    wrong_method = api.call("PATCH", "/api/queues/%2F/anything", {})
    assert wrong_method.status == 405
    allowed = {m.strip() for m in wrong_method.headers["allow"].split(",")}
    assert {"GET", "PUT", "DELETE"} <= allowed
    assert api.call("DELETE", "/api/overview").status == 405
    assert api.call("GET", "/api/queues/no-such-vhost").status == 404
    assert api.call("GET", "/api/queues/no-such-vhost/x").json == NOT_FOUND
    assert api.ok("GET", "/api/health/checks/alarms") == {"status": "ok"}


def test_overview_vhosts_and_listeners(api):
    connection = _pika(api)
    try:
        version = connection._impl.server_properties["version"]
        version = version.decode() if isinstance(version, bytes) else version
        overview = api.ok("GET", "/api/overview")
        assert overview["rabbitmq_version"] == version
        amqp_port = int(api.amqp_url.rsplit(":", 1)[1].split("/")[0])
        listeners = {item["protocol"]: item["port"] for item in overview["listeners"]}
        assert listeners["amqp"] == amqp_port
        assert listeners["http"] == int(api.base.rsplit(":", 1)[1])
        assert set(overview["object_totals"]) >= {
            "channels",
            "connections",
            "consumers",
            "exchanges",
            "queues",
        }
        assert {t["name"] for t in overview["exchange_types"]} >= {"direct", "fanout", "topic"}
    finally:
        connection.close()
    vhosts = api.ok("GET", "/api/vhosts")
    default = next(v for v in vhosts if v["name"] == "/")
    assert default["description"] == "Default virtual host"
    assert default["tracing"] is False
    assert api.ok("GET", "/api/vhosts/%2F")["name"] == "/"
    assert api.call("GET", "/api/vhosts/nope").json == NOT_FOUND


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
    connection = _pika(api)
    try:
        channel = connection.channel()
        for i in range(3):
            channel.basic_publish("", uid, f"m{i}".encode())
        channel.basic_get(uid)  # one unacknowledged
        doc = wait_for(lambda: (d := api.ok("GET", path)).get("messages_unacknowledged") == 1 and d)
        assert (doc["messages"], doc["messages_ready"]) == (3, 2)
        not_empty = api.call("DELETE", path + "?if-empty=true")
        assert (not_empty.status, not_empty.json) == (
            400,
            {"error": "bad_request", "reason": f"queue '{uid}' in vhost '/' not empty"},
        )
        assert api.call("DELETE", path + "/contents").status == 204
        _ready(api, uid, 0)
        channel.basic_consume(uid, lambda *a: None)
        in_use = api.call("DELETE", path + "?if-unused=true")
        assert in_use.json["reason"] == f"queue '{uid}' in vhost '/' in use"
    finally:
        connection.close()
    assert api.call("DELETE", path + "/contents").status == 204
    assert api.call("DELETE", "/api/queues/%2F/no-such-queue/contents").json == NOT_FOUND
    assert api.call("DELETE", path).status == 204


def test_exclusive_queue_of_another_connection_is_locked(api, uid):
    connection = _pika(api)
    try:
        channel = connection.channel()
        channel.queue_declare(uid, exclusive=True)
        channel.basic_publish("", uid, b"mine")
        path = f"/api/queues/%2F/{q(uid)}"
        assert wait_for(lambda: api.ok("GET", path)["exclusive"]) is True
        locked = LOCKED.format(uid)
        for method, suffix, body in (("PUT", "", {}), ("DELETE", "", None)):
            reply = api.call(method, path + suffix, body)
            assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": locked})
        assert api.call("DELETE", path + "/contents").json["reason"] == locked
        get = api.call("POST", path + "/get", _get_body(1))
        # the reason is the channel.close text, cut to 252 bytes plus "..." like on the wire
        wire = f"405 RESOURCE_LOCKED - {locked}"
        assert (get.status, get.json["reason"]) == (400, wire[: 4 + 252] + "...")
    finally:
        connection.close()


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


# ---------------------------------------------------------------------- publish and get
def _get_body(count: int, ackmode: str = "ack_requeue_true", **extra: Any) -> dict[str, Any]:
    return {"count": count, "ackmode": ackmode, "encoding": "auto", **extra}


def _publish_body(key: str, payload: str, **properties: Any) -> dict[str, Any]:
    return {
        "routing_key": key,
        "payload": payload,
        "payload_encoding": "string",
        "properties": properties,
    }


def test_publish_then_peek_requeues_in_order(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    api.ok("PUT", path, {})
    publish = "/api/exchanges/%2F/amq.default/publish"
    headers = {"i": 5, "big": 5000000000, "f": 1.5, "s": "str", "b": False, "l": [1, "x"]}
    first = _publish_body(uid, "été", content_type="text/plain", headers=headers, priority=3)
    assert api.ok("POST", publish, first) == {"routed": True}
    binary = {"routing_key": uid, "payload": "/w==", "payload_encoding": "base64", "properties": {}}
    assert api.ok("POST", publish, binary) == {"routed": True}
    assert api.ok("POST", publish, _publish_body(uid, "third", message_id="m3")) == {"routed": True}
    _ready(api, uid, 3)
    peeked = api.ok("POST", path + "/get", _get_body(2))
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
    again = api.ok("POST", path + "/get", _get_body(5, "reject_requeue_true", truncate=2))
    assert [m["redelivered"] for m in again] == [True, True, False]
    assert [m["payload_bytes"] for m in again] == [5, 1, 5]
    assert [m["payload"] for m in again] == ["é", "/w==", "th"]
    assert [m["message_count"] for m in again] == [2, 1, 0]
    as_base64 = api.ok("POST", path + "/get", {**_get_body(1), "encoding": "base64"})
    assert as_base64[0]["payload"] == base64.b64encode("été".encode()).decode()
    consumed = api.ok("POST", path + "/get", _get_body(1, "ack_requeue_false"))
    assert consumed[0]["payload"] == "été"
    _ready(api, uid, 2)
    connection = _pika(api)
    try:
        method, _props, body = connection.channel().basic_get(uid, auto_ack=True)
        assert (body, method.redelivered) == (b"\xff", True)
    finally:
        connection.close()
    assert api.ok("POST", path + "/get", _get_body(1, "reject_requeue_false"))[0]["payload"] == (
        "third"
    )
    _ready(api, uid, 0)
    assert api.ok("POST", path + "/get", _get_body(3)) == []


def test_publish_routes_through_exchanges(api, uid):
    exchange = f"/api/exchanges/%2F/{q(uid)}"
    api.ok("PUT", exchange, {"type": "fanout"})
    assert api.ok("POST", exchange + "/publish", _publish_body("k", "lost")) == {"routed": False}
    api.ok("PUT", f"/api/queues/%2F/{q(uid)}", {})
    api.ok("POST", f"/api/bindings/%2F/e/{q(uid)}/q/{q(uid)}", {"routing_key": "ignored"})
    assert api.ok("POST", exchange + "/publish", _publish_body("k", "kept")) == {"routed": True}
    got = api.ok("POST", f"/api/queues/%2F/{q(uid)}/get", _get_body(5))
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
    missing = api.call("POST", "/api/exchanges/%2F/nope/publish", _publish_body("k", "x"))
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
        reply = api.call("POST", publish, {**_publish_body("k", "x"), **change})
        assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": reason})
    no_vhost = api.call("POST", "/api/exchanges/nope/amq.default/publish", _publish_body("k", "x"))
    assert (no_vhost.status, no_vhost.json["error"]) == (401, "not_authorised")


def test_get_errors(api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    api.ok("PUT", path, {})
    missing = api.call("POST", path + "/get", {})
    assert (
        missing.json["reason"]
        == "[{key_missing,ackmode},{key_missing,count},{key_missing,encoding}]"
    )
    encoding = api.call("POST", path + "/get", {**_get_body(1), "encoding": "x"})
    assert encoding.json == {
        "error": "bad_request",
        "reason": "Unsupported encoding. Please use auto or base64.",
    }
    truncate = api.call("POST", path + "/get", _get_body(1, truncate="x"))
    assert truncate.json == {"error": "bad_request", "reason": ["not_integer", "x"]}
    assert api.call("POST", path + "/get", _get_body(1, "bogus")).status == 500
    assert api.call("POST", path + "/get", {**_get_body(1), "count": "2"}).status == 200
    gone = api.call("POST", "/api/queues/%2F/no-such-queue/get", _get_body(1))
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
            async with http.post(url, json=_get_body(2)) as response:
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


# ---------------------------------------------------------------------- bindings
def test_bindings_listed_created_and_deleted(api, uid):
    connection = _pika(api)
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


# ---------------------------------------------------------------------- connections, channels
def test_connections_channels_and_forced_close(api, uid):
    connection = _pika(api, name=uid)
    try:
        plain = connection.channel()
        plain.queue_declare(uid, exclusive=True)
        plain.basic_qos(prefetch_count=3)
        plain.basic_consume(uid, lambda *a: None, consumer_tag=f"{uid}-tag")
        transactional = connection.channel()
        transactional.tx_select()
        transactional.basic_publish("", uid, b"staged")
        connection.process_data_events(0)

        def ours() -> dict[str, Any] | None:
            for item in api.ok("GET", "/api/connections"):
                if item.get("client_properties", {}).get("connection_name") == uid:
                    return item if item.get("channels") == 2 else None
            return None

        doc = wait_for(ours)
        assert re.fullmatch(r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+", doc["name"])
        expected = {"user": "guest", "vhost": "/", "protocol": "AMQP 0-9-1", "channels": 2}
        assert {k: doc[k] for k in expected} == expected
        assert doc["peer_port"] == int(doc["name"].split(" ")[0].rsplit(":", 1)[1])
        assert api.ok("GET", f"/api/connections/{q(doc['name'])}")["name"] == doc["name"]

        def both_channels() -> list[dict[str, Any]] | None:
            found = api.ok("GET", f"/api/connections/{q(doc['name'])}/channels")
            tx = [c for c in found if c.get("transactional")]
            return found if len(found) == 2 and tx and tx[0]["messages_uncommitted"] == 1 else None

        channels = sorted(wait_for(both_channels), key=lambda c: c["number"])
        assert [c["name"] for c in channels] == [
            f"{doc['name']} ({plain.channel_number})",
            f"{doc['name']} ({transactional.channel_number})",
        ]
        assert (channels[0]["consumer_count"], channels[0]["prefetch_count"]) == (1, 3)
        assert (channels[1]["transactional"], channels[1]["confirm"]) == (True, False)
        assert api.ok("GET", f"/api/channels/{q(channels[1]['name'])}")["number"] == (
            transactional.channel_number
        )
        queue = api.ok("GET", f"/api/queues/%2F/{q(uid)}")
        consumer = queue["consumer_details"][0]
        assert (consumer["consumer_tag"], consumer["ack_required"], consumer["prefetch_count"]) == (
            f"{uid}-tag",
            True,
            3,
        )
        assert consumer["channel_details"]["connection_name"] == doc["name"]
        assert consumer["queue"] == {"name": uid, "vhost": "/"}
        assert any(c["consumer_tag"] == f"{uid}-tag" for c in api.ok("GET", "/api/consumers"))
        closed = api.call(
            "DELETE", f"/api/connections/{q(doc['name'])}", headers={"X-Reason": "bye"}
        )
        assert closed.status == 204
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                connection.process_data_events(time_limit=0.1)
        assert (info.value.reply_code, info.value.reply_text) == (320, "CONNECTION_FORCED - bye")
    finally:
        if connection.is_open:
            connection.close()
    assert api.call("GET", f"/api/connections/{q(doc['name'])}").status == 404


async def test_forced_close_default_reason_reaches_aiormq(api, uid):
    connection = await aiormq.connect(f"{api.amqp_url}?name={uid}")
    try:

        def ours() -> str | None:
            for item in api.ok("GET", "/api/connections"):
                if item.get("client_properties", {}).get("connection_name") == uid:
                    return item["name"]
            return None

        name = wait_for(ours)
        assert api.call("DELETE", f"/api/connections/{q(name)}").status == 204
        with pytest.raises(aiormq.exceptions.ConnectionClosed) as info:
            await connection.closing
        assert info.value.args == (320, "CONNECTION_FORCED - Closed via management plugin")
    finally:
        await connection.close()


# ---------------------------------------------------------------------- listing parameters
def test_columns_sort_and_pagination(api, uid):
    for suffix in ("b", "a", "c"):
        api.ok("PUT", f"/api/queues/%2F/{q(uid)}-{suffix}", {})
    try:
        query = f"?page=1&page_size=2&name={q(uid)}-&columns=name,durable&sort=name"
        page = api.ok("GET", "/api/queues/%2F" + query)
        assert {k: v for k, v in page.items() if k != "total_count"} == {
            "filtered_count": 3,
            "item_count": 2,
            "items": [
                {"name": f"{uid}-a", "durable": False},
                {"name": f"{uid}-b", "durable": False},
            ],
            "page": 1,
            "page_count": 2,
            "page_size": 2,
        }
        names = [x["name"] for x in api.ok("GET", "/api/queues?sort=name&sort_reverse=true")]
        ours = [n for n in names if n.startswith(f"{uid}-")]
        assert ours == [f"{uid}-c", f"{uid}-b", f"{uid}-a"]
        out_of_range = api.call("GET", f"/api/queues?page=99&page_size=2&name={q(uid)}-")
        assert (out_of_range.status, out_of_range.json) == (
            400,
            {
                "error": "page_out_of_range",
                "reason": "Page out of range, page: 99 page size: 2, len: 3",
            },
        )
    finally:
        for suffix in ("a", "b", "c"):
            api.ok("DELETE", f"/api/queues/%2F/{q(uid)}-{suffix}")


# ---------------------------------------------------------------------- rabbitish only
def test_rates_follow_traffic(rabbitish_api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    rabbitish_api.ok("PUT", path, {})
    body = _publish_body(uid, "x")
    publish = "/api/exchanges/%2F/amq.default/publish"

    def rate() -> float:
        rabbitish_api.ok("POST", publish, body)
        stats = rabbitish_api.ok("GET", path)["message_stats"]
        return stats["publish_details"]["rate"]

    assert wait_for(rate) > 0
    rabbitish_api.ok("DELETE", path)


async def test_management_port_choices():
    async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=0) as broker:
        assert broker.management_port is None and broker.management is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=taken) as broker:
            assert broker.management_port is None  # logged, and the broker runs without it
            connection = await aio_pika.connect(broker.url)
            await connection.close()
    async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=0) as broker:
        port = await broker.start_management()
        assert port == broker.management_port == await broker.start_management()
        async with (
            aiohttp.ClientSession(headers=GUEST) as http,
            http.get(f"http://127.0.0.1:{port}/api/overview") as response,
        ):
            assert (await response.json())["listeners"][0]["port"] == broker.port
