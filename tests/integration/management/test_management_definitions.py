"""Definitions in RabbitMQ's JSON format: the exported shape against RabbitMQ's, import and
export round trips in both directions between rabbitish and RabbitMQ, `serve --definitions`
and `rabbitish definitions export|import`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
from rabbitish.cli.commands import cli
from typer.testing import CliRunner

from rabbitish.testing import management_url, running_broker
from tests.support.broker_process import MODULE, BrokerProcess
from tests.support.management import Api, amqp_connection, q, rabbitmq_with_management
from tests.support.ports import ReservedPort
from tests.support.real_rabbitmq import rabbitmq_available

SECTIONS = (
    "users",
    "vhosts",
    "permissions",
    "topic_permissions",
    "parameters",
    "global_parameters",
    "policies",
    "queues",
    "exchanges",
    "bindings",
)
# What differs between any two brokers, whatever their definitions.
ENVIRONMENT = ("rabbit_version", "rabbitmq_version", "product_name", "product_version")


def fresh_api(broker) -> Api:
    return Api(broker.url, management_url(broker).replace("guest:guest@", ""), "rabbitish")


def declare_topology(api: Api, uid: str) -> None:
    """Durable and transient queues and exchanges, bindings with and without arguments, an
    exclusive queue (never exported), a policy and an operator policy."""
    with amqp_connection(api) as conn:
        ch = conn.channel()
        ch.queue_declare(f"{uid}-dq", durable=True, arguments={"x-max-priority": 3})
        ch.queue_declare(f"{uid}-tq", auto_delete=True)
        ch.exchange_declare(
            f"{uid}-dx", "topic", durable=True, arguments={"alternate-exchange": f"{uid}-ae"}
        )
        ch.exchange_declare(f"{uid}-ix", "direct", internal=True, auto_delete=True)
        ch.queue_bind(f"{uid}-dq", f"{uid}-dx", "a.#", arguments={"k": "v"})
        ch.queue_bind(f"{uid}-tq", f"{uid}-dx", "b")
        ch.exchange_bind(f"{uid}-ix", f"{uid}-dx", "d")
        exclusive = ch.queue_declare(f"{uid}-xq", exclusive=True).method.queue
        ch.queue_bind(exclusive, f"{uid}-dx", "c")
        body = {"pattern": f"^{uid}-d", "definition": {"max-length": 9}, "apply-to": "queues"}
        api.ok("PUT", f"/api/policies/%2F/{q(uid)}", {**body, "priority": 3})
        api.ok("PUT", f"/api/operator-policies/%2F/{q(uid)}", {**body, "apply-to": "all"})
        definitions = api.ok("GET", "/api/definitions")
        assert not [x for x in definitions["queues"] if x["name"] == exclusive]


def _mine(items: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    def named(item: dict[str, Any]) -> bool:
        return any(str(item.get(k, "")).startswith(uid) for k in ("name", "source"))

    return sorted((i for i in items if named(i)), key=lambda i: json.dumps(i, sort_keys=True))


def _clean(api: Api, uid: str) -> None:
    for name in ("dq", "tq"):
        api.call("DELETE", f"/api/queues/%2F/{q(f'{uid}-{name}')}")
    for name in ("dx", "ix"):
        api.call("DELETE", f"/api/exchanges/%2F/{q(f'{uid}-{name}')}")
    api.call("DELETE", f"/api/policies/%2F/{q(uid)}")
    api.call("DELETE", f"/api/operator-policies/%2F/{q(uid)}")


def normalised(doc: dict[str, Any]) -> dict[str, Any]:
    """A definitions document without environment fields, each section sorted."""
    return {
        key: sorted(value, key=lambda i: json.dumps(i, sort_keys=True))
        if isinstance(value, list)
        else value
        for key, value in doc.items()
        if key not in ENVIRONMENT
    }


# ---------------------------------------------------------------------- shape
def test_exported_shape(api, uid):
    declare_topology(api, uid)
    try:
        everything = api.ok("GET", "/api/definitions")
        assert list(everything)[:4] == list(ENVIRONMENT)
        assert set(everything) == {*ENVIRONMENT, *SECTIONS}
        guest = next(u for u in everything["users"] if u["name"] == "guest")
        assert set(guest) == {"name", "password_hash", "hashing_algorithm", "tags", "limits"}
        assert guest["hashing_algorithm"] == "rabbit_password_hashing_sha256"
        assert {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"} in (
            everything["permissions"]
        )
        assert {"name": "/"} in everything["vhosts"]
        mine = {s: _mine(everything[s], uid) for s in ("queues", "exchanges", "bindings")}
        assert mine["queues"] == [
            {
                "name": f"{uid}-dq",
                "vhost": "/",
                "durable": True,
                "auto_delete": False,
                "arguments": {"x-max-priority": 3},
            },
            {
                "name": f"{uid}-tq",
                "vhost": "/",
                "durable": False,
                "auto_delete": True,
                "arguments": {},
            },
        ]
        assert mine["exchanges"] == [
            {
                "name": f"{uid}-dx",
                "vhost": "/",
                "type": "topic",
                "durable": True,
                "auto_delete": False,
                "internal": False,
                "arguments": {"alternate-exchange": f"{uid}-ae"},
            },
            {
                "name": f"{uid}-ix",
                "vhost": "/",
                "type": "direct",
                "durable": False,
                "auto_delete": True,
                "internal": True,
                "arguments": {},
            },
        ]
        binding = {"source": f"{uid}-dx", "vhost": "/", "arguments": {}}
        assert mine["bindings"] == sorted(
            [
                {
                    **binding,
                    "destination": f"{uid}-dq",
                    "destination_type": "queue",
                    "routing_key": "a.#",
                    "arguments": {"k": "v"},
                },
                {
                    **binding,
                    "destination": f"{uid}-ix",
                    "destination_type": "exchange",
                    "routing_key": "d",
                },
                {
                    **binding,
                    "destination": f"{uid}-tq",
                    "destination_type": "queue",
                    "routing_key": "b",
                },
            ],
            key=lambda i: json.dumps(i, sort_keys=True),
        )
        definition = {"max-length": 9}
        assert _mine(everything["policies"], uid) == [
            {
                "vhost": "/",
                "name": uid,
                "pattern": f"^{uid}-d",
                "apply-to": "queues",
                "definition": definition,
                "priority": 3,
            }
        ]
        assert _mine(everything["parameters"], uid) == [
            {
                "value": {
                    "pattern": f"^{uid}-d",
                    "definition": definition,
                    "priority": 0,
                    "apply-to": "all",
                },
                "vhost": "/",
                "component": "operator_policy",
                "name": uid,
            }
        ]
        one = api.ok("GET", "/api/definitions/%2F")
        assert list(one) == [
            "rabbit_version",
            "parameters",
            "policies",
            "queues",
            "exchanges",
            "bindings",
        ]
        assert [{**x, "vhost": "/"} for x in _mine(one["queues"], uid)] == mine["queues"]
        missing = api.call("GET", "/api/definitions/nope")
        assert (missing.status, missing.json["reason"]) == (400, "vhost_not_found")
    finally:
        _clean(api, uid)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([1], "failed_to_parse_json"),
        ({"queues": [{"name": "x", "vhost": "nope", "durable": True}]}, ["no_such_vhost", "nope"]),
    ],
)
def test_import_refusals(api, body, reason):
    reply = api.call("POST", "/api/definitions", body)
    assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": reason})


def test_import_refuses_what_a_declare_refuses(api, uid):
    queue = {
        "name": uid,
        "vhost": "/",
        "durable": True,
        "auto_delete": False,
        "arguments": {"x-message-ttl": -5},
    }
    reply = api.call("POST", "/api/definitions", {"queues": [queue]})
    text = f"invalid arg 'x-message-ttl' for queue '{uid}' in vhost '/': {{value_negative,-5}}"
    assert (reply.status, reply.json["reason"]) == (
        400,
        ["amqp_error", "precondition_failed", list(text.encode()), "none"],
    )
    policy = {"vhost": "/", "name": uid, "pattern": "x", "definition": {"foo": 1}}
    reply = api.call("POST", "/api/definitions", {"policies": [policy]})
    assert reply.json["reason"] == (
        'Validation failed\n\n[{&lt;&lt;"foo"&gt;&gt;,1}] are not recognised policy '
        f"settings\n (//{uid})"
    )


# ---------------------------------------------------------------------- round trips
@pytest.fixture(scope="module")
def clean_rabbitmq() -> Iterator[Api]:
    """A RabbitMQ of these tests' own: the round trips compare whole exports."""
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with rabbitmq_with_management() as node:
        yield Api(node.url, f"http://127.0.0.1:{node.management_port}", "rabbitmq")


@pytest.mark.rabbitmq
def test_rabbitmq_definitions_round_trip_through_rabbitish(clean_rabbitmq, uid):
    rabbitmq_api = clean_rabbitmq
    declare_topology(rabbitmq_api, uid)
    # A user of RabbitMQ's with its password hash and permission regexes: rabbitish exports it
    # unchanged, lets it log in with its password and holds it to its patterns.
    user = f"/api/users/{q(uid)}"
    rabbitmq_api.ok("PUT", user, {"password": "pw", "tags": "monitoring,management"})
    permissions = {"configure": f"^{uid}", "write": ".*", "read": ""}
    rabbitmq_api.ok("PUT", f"/api/permissions/%2F/{q(uid)}", permissions)
    try:
        exported = rabbitmq_api.ok("GET", "/api/definitions")
    finally:
        _clean(rabbitmq_api, uid)
        rabbitmq_api.call("DELETE", user)
    assert {"user": uid, "vhost": "/", **permissions} in exported["permissions"]
    with running_broker(management=True) as broker:
        api = fresh_api(broker)
        assert api.call("POST", "/api/definitions", exported).status == 204
        assert normalised(api.ok("GET", "/api/definitions")) == normalised(exported)
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:  # guest still in
            assert conn.channel().queue_declare(f"{uid}-dq", passive=True)
        url = broker.url.replace("guest:guest", f"{uid}:pw")
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            conn.channel().queue_declare(f"{uid}-mine", auto_delete=True)
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                conn.channel().queue_declare("not-mine")
            assert refused.value.reply_code == 403


@pytest.mark.rabbitmq
def test_rabbitish_definitions_round_trip_through_rabbitmq(clean_rabbitmq, uid):
    rabbitmq_api = clean_rabbitmq
    with running_broker(management=True) as broker:
        api = fresh_api(broker)
        declare_topology(api, uid)
        exported = api.ok("GET", "/api/definitions")
    assert rabbitmq_api.call("POST", "/api/definitions", exported).status == 204
    try:
        back = normalised(rabbitmq_api.ok("GET", "/api/definitions"))
        del back["global_parameters"]  # each RabbitMQ keeps its own cluster id
        assert back == {k: v for k, v in normalised(exported).items() if k != "global_parameters"}
    finally:
        _clean(rabbitmq_api, uid)


def test_imported_user_with_a_password_logs_in_where_permitted(uid):
    """Users given with a plain `password` log in (RabbitMQ's import accepts that form too),
    in the vhosts their permissions name only."""
    users = [{"name": uid, "password": "secret", "tags": "management"}]
    with running_broker(management=True) as broker:
        api = fresh_api(broker)
        assert api.call("POST", "/api/definitions", {"users": users}).status == 204
        url = broker.url.replace("guest:guest", f"{uid}:secret")
        with pytest.raises(pika.exceptions.ProbableAccessDeniedError):
            pika.BlockingConnection(pika.URLParameters(url))
        permission = {"user": uid, "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"}
        assert api.call("POST", "/api/definitions", {"permissions": [permission]}).status == 204
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            assert conn.channel().is_open
        exported = api.ok("GET", "/api/definitions")
        [user] = [u for u in exported["users"] if u["name"] == uid]
        assert (user["tags"], user["hashing_algorithm"]) == (
            ["management"],
            "rabbit_password_hashing_sha256",
        )
        assert permission in exported["permissions"]


# ---------------------------------------------------------------------- start-up and CLI
def test_serve_definitions_and_cli_export_import(tmp_path, uid):
    definitions = {
        "queues": [
            {
                "name": f"{uid}-q",
                "vhost": "/",
                "durable": True,
                "auto_delete": False,
                "arguments": {},
            }
        ],
        "policies": [
            {
                "vhost": "/",
                "name": uid,
                "pattern": f"^{uid}",
                "apply-to": "queues",
                "definition": {"max-length": 1},
                "priority": 0,
            }
        ],
    }
    path = tmp_path / "definitions.json"
    path.write_text(json.dumps(definitions))
    with (
        ReservedPort() as http,
        BrokerProcess("--definitions", str(path), "--management-port", str(http.port)) as broker,
    ):
        url = f"http://guest:guest@127.0.0.1:{http.port}"
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.queue_declare(f"{uid}-q", passive=True, durable=True)
            for body in (b"1", b"2"):
                ch.basic_publish("", f"{uid}-q", body)
            assert ch.queue_declare(f"{uid}-q", passive=True).method.message_count == 1
        out = tmp_path / "out.json"
        result = CliRunner().invoke(cli, ["definitions", "export", str(out), "--url", url])
        assert result.exit_code == 0, result.output
    exported = json.loads(out.read_text())
    assert {"vhost": "/", **definitions["policies"][0]} in exported["policies"]
    with running_broker(management=True) as other:
        url = management_url(other)
        result = CliRunner().invoke(cli, ["definitions", "import", str(out), "--url", url])
        assert (result.exit_code, result.output) == (0, f"imported definitions from {out}\n")
        assert normalised(fresh_api(other).ok("GET", "/api/definitions")) == normalised(exported)


def test_serve_refuses_a_bad_definitions_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"queues": [{"name": "q", "vhost": "nope"}]}))
    done = subprocess.run(
        [
            *MODULE,
            "serve",
            "--port",
            "0",
            "--management-port",
            "0",
            "--data-dir",
            ":memory:",
            "--definitions",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"cannot start: definitions file {path}: ['no_such_vhost', 'nope']" in done.stderr
