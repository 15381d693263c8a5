"""Policies and operator policies through the management API, against rabbitish and RabbitMQ:
the resources and their validation replies, and what a policy does to queues and exchanges
(TTL, dead-lettering, length limits, alternate exchanges, precedence over queue arguments)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from tests.support.clients import bodies
from tests.support.management import NOT_FOUND, Api, amqp_connection, q
from tests.support.waiting import wait_until


@contextlib.contextmanager
def policy(api: Api, name: str, body: dict[str, Any], operator: bool = False) -> Iterator[str]:
    """A policy set for the test's duration (brokers are shared: patterns name the test)."""
    path = f"/api/{'operator-policies' if operator else 'policies'}/%2F/{q(name)}"
    assert api.call("PUT", path, body).status == 201
    try:
        yield path
    finally:
        api.call("DELETE", path)


def queue_doc(api: Api, name: str) -> dict[str, Any]:
    return api.ok("GET", f"/api/queues/%2F/{q(name)}")


def depth(channel: Any, name: str) -> int:
    return channel.queue_declare(name, passive=True).method.message_count


def wait_policy(api: Api, queue: str, name: str | None) -> dict[str, Any]:
    """The queue's document once it shows policy `name` applied (RabbitMQ applies it
    asynchronously to existing queues)."""

    def applied() -> dict[str, Any] | None:
        doc = queue_doc(api, queue)
        return doc if "policy" in doc and doc["policy"] == name else None

    return wait_until(applied)


# ---------------------------------------------------------------------- the resources
def test_policy_resources(api, uid):
    path = f"/api/policies/%2F/{q(uid)}"
    body = {"pattern": f"^{uid}", "definition": {"message-ttl": 1000}}
    assert api.call("PUT", path, body).status == 201
    try:
        expected = {
            "vhost": "/",
            "name": uid,
            "pattern": f"^{uid}",
            "apply-to": "all",
            "definition": {"message-ttl": 1000},
            "priority": 0,
        }
        assert api.ok("GET", path) == expected
        assert expected in api.ok("GET", "/api/policies")
        assert expected in api.ok("GET", "/api/policies/%2F")
        changed = {**body, "apply-to": "queues", "priority": 5}
        assert api.call("PUT", path, changed).status == 204
        assert api.ok("GET", path) == {**expected, "apply-to": "queues", "priority": 5}
    finally:
        assert api.call("DELETE", path).status == 204
    assert (api.call("GET", path).status, api.call("GET", path).json) == (404, NOT_FOUND)
    assert api.call("DELETE", path).status == 404
    assert api.call("GET", "/api/policies/nope").json == NOT_FOUND
    missing_vhost = api.call("PUT", f"/api/policies/nope/{uid}", body)
    assert (missing_vhost.status, missing_vhost.json["reason"]) == (404, "vhost_not_found")


INVALID = [
    ({"message-ttl": "x"}, '&lt;&lt;"x"&gt;&gt; is not a valid message TTL'),
    ({"message-ttl": -1}, "-1 is not a valid message TTL"),
    ({"message-ttl": 1.5}, "1.5 is not a valid message TTL"),
    ({"expires": 0}, "0 is not a valid queue expiry"),
    ({"max-length": -3, "max-length-bytes": 1.5}, "-3 is not a valid maximum length"),
    ({"max-length-bytes": -1}, "-1 is not a valid maximum length in bytes"),
    ({"overflow": "bogus"}, '&lt;&lt;"bogus"&gt;&gt; is not a valid overflow value'),
    ({"queue-mode": "bogus"}, '&lt;&lt;"bogus"&gt;&gt; is not a valid queue-mode value'),
    ({"dead-letter-exchange": 5}, "5 is not a valid dead letter exchange name"),
    ({"dead-letter-routing-key": 5}, "5 is not a valid dead letter routing key"),
    ({"alternate-exchange": 1}, "1 is not a valid alternate exchange name"),
    ({"message-ttl": -1, "foo": 1}, "-1 is not a valid message TTL"),
    (
        {"foo": 1, "bar": 2, "expires": 5000},
        '[{&lt;&lt;"bar"&gt;&gt;,2},{&lt;&lt;"foo"&gt;&gt;,1}] are not recognised policy settings',
    ),
    (
        {"max-priority": 5},
        '[{&lt;&lt;"max-priority"&gt;&gt;,5}] are not recognised policy settings',
    ),
    ({}, "no policy provided"),
]


@pytest.mark.parametrize(("definition", "text"), INVALID)
def test_policy_validation(api, uid, definition, text):
    reply = api.call(
        "PUT", f"/api/policies/%2F/{q(uid)}", {"pattern": "^x", "definition": definition}
    )
    assert (reply.status, reply.json) == (
        400,
        {"error": "bad_request", "reason": f"Validation failed\n\n{text}\n"},
    )


def test_policy_body_validation(api, uid):
    path = f"/api/policies/%2F/{q(uid)}"
    cases = [
        ({"pattern": "^x"}, "[{key_missing,definition}]"),
        ({"definition": {"max-length": 1}}, "[{key_missing,pattern}]"),
        (
            {"pattern": "(", "definition": {"max-length": 1}},
            "Validation failed\n\npattern should be regular expression but is invalid: "
            '{"missing )",1}\n',
        ),
        (
            {"pattern": 5, "definition": {"max-length": 1}},
            "Validation failed\n\npattern should be a binary but was 5\n",
        ),
        (
            {"pattern": "^x", "definition": {"max-length": 1}, "apply-to": "bogus"},
            "Validation failed\n\napply-to 'bogus' unrecognised; should be 'queues', "
            "'exchanges' or 'all'\n",
        ),
        (
            {"pattern": "^x", "definition": {"max-length": 1}, "priority": "5"},
            'Validation failed\n\npriority should be a number, actually was &lt;&lt;"5"&gt;&gt;\n',
        ),
    ]
    for body, reason in cases:
        reply = api.call("PUT", path, body)
        assert (reply.status, reply.json) == (400, {"error": "bad_request", "reason": reason})
    assert api.call("PUT", path, {"pattern": "^x", "definition": "no"}).status == 500


def test_operator_policy_keys(api, uid):
    path = f"/api/operator-policies/%2F/{q(uid)}"
    try:
        for key in ("message-ttl", "expires", "max-length", "max-length-bytes", "delivery-limit"):
            body = {"pattern": f"^{uid}", "definition": {key: 5}}
            assert api.call("PUT", path, body).status in (201, 204)
        for key, value in (("overflow", "reject-publish"), ("dead-letter-exchange", "x")):
            reply = api.call("PUT", path, {"pattern": f"^{uid}", "definition": {key: value}})
            assert (reply.status, reply.json["reason"]) == (
                400,
                f'Validation failed\n\n[{{<<"{key}">>,<<"{value}">>}}] are not recognised '
                "policy settings\n",
            )
        assert api.ok("GET", path)["definition"] == {"delivery-limit": 5}
        assert api.ok("GET", "/api/operator-policies/%2F")[0]["name"] == uid
    finally:
        assert api.call("DELETE", path).status == 204


# ---------------------------------------------------------------------- effects
def test_policy_message_ttl_and_dead_letter(api, uid):
    dead = f"{uid}-dead"
    definition = {
        "message-ttl": 50,
        "dead-letter-exchange": "",
        "dead-letter-routing-key": dead,
    }
    body = {"pattern": f"^{uid}$", "definition": definition}
    with policy(api, uid, body), amqp_connection(api) as conn:
        ch = conn.channel()
        ch.queue_declare(dead)
        ch.queue_declare(uid)
        doc = wait_policy(api, uid, uid)
        assert doc["effective_policy_definition"] == definition
        ch.basic_publish("", uid, b"m1")
        wait_until(lambda: depth(ch, dead) == 1)
        assert depth(ch, uid) == 0
        _method, props, body = ch.basic_get(dead, auto_ack=True)
        assert body == b"m1"
        assert props.headers["x-death"][0]["reason"] == "expired"
        ch.queue_delete(uid)
        ch.queue_delete(dead)


def test_policy_length_limit_on_an_existing_queue(api, uid):
    with amqp_connection(api) as conn:
        ch = conn.channel()
        ch.queue_declare(uid)
        for n in range(5):
            ch.basic_publish("", uid, f"m{n}".encode())
        wait_until(lambda: depth(ch, uid) == 5)
        with policy(api, uid, {"pattern": f"^{uid}$", "definition": {"max-length": 2}}):
            wait_until(lambda: depth(ch, uid) == 2)
            assert wait_policy(api, uid, uid)["effective_policy_definition"] == {"max-length": 2}
            ch.basic_publish("", uid, b"m5")
            wait_until(lambda: depth(ch, uid) == 2)
            assert bodies(ch, uid) == [b"m4", b"m5"]
        assert wait_policy(api, uid, None)["effective_policy_definition"] == {}
        ch.queue_delete(uid)


def test_queue_arguments_against_a_policy(api, uid):
    """Limits: the lower of argument and policy; dead-letter settings: the argument."""
    dead_a, dead_b = f"{uid}-a", f"{uid}-b"
    arguments = {
        "x-max-length": 3,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_a,
    }
    definition = {"max-length": 1, "dead-letter-routing-key": dead_b}
    body = {"pattern": f"^{uid}$", "definition": definition}
    with policy(api, uid, body), amqp_connection(api) as conn:
        ch = conn.channel()
        ch.queue_declare(dead_a)
        ch.queue_declare(dead_b)
        ch.queue_declare(uid, arguments=arguments)
        for n in range(3):
            ch.basic_publish("", uid, f"m{n}".encode())
        wait_until(lambda: depth(ch, dead_a) == 2)
        assert (depth(ch, uid), depth(ch, dead_b)) == (1, 0)
        assert bodies(ch, dead_a) == [b"m0", b"m1"]
        for name in (uid, dead_a, dead_b):
            ch.queue_delete(name)


def test_highest_priority_wins_and_operator_policy_lowers(api, uid):
    low = {"pattern": f"^{uid}", "definition": {"max-length": 10}, "priority": 1}
    high = {"pattern": f"^{uid}$", "definition": {"max-length": 5}, "priority": 2}
    operator = {"pattern": f"^{uid}", "definition": {"max-length": 3, "message-ttl": 60000}}
    with (
        policy(api, f"{uid}-low", low),
        policy(api, f"{uid}-high", high),
        policy(api, f"{uid}-op", operator, operator=True),
        amqp_connection(api) as conn,
    ):
        ch = conn.channel()
        ch.queue_declare(uid)
        doc = wait_policy(api, uid, f"{uid}-high")
        assert (doc["policy"], doc["operator_policy"]) == (f"{uid}-high", f"{uid}-op")
        assert doc["effective_policy_definition"] == {"max-length": 3, "message-ttl": 60000}
        for n in range(5):
            ch.basic_publish("", uid, f"m{n}".encode())
        wait_until(lambda: depth(ch, uid) == 3)
        ch.queue_delete(uid)


def test_policy_alternate_exchange(api, uid):
    exchange, ae, caught = f"{uid}-x", f"{uid}-ae", f"{uid}-caught"
    body = {"pattern": f"^{uid}-x$", "definition": {"alternate-exchange": ae}}
    with policy(api, uid, {**body, "apply-to": "exchanges"}), amqp_connection(api) as conn:
        ch = conn.channel()
        ch.exchange_declare(ae, "fanout")
        ch.exchange_declare(exchange, "direct")
        ch.queue_declare(caught)
        ch.queue_bind(caught, ae)
        ch.basic_publish(exchange, "nowhere", b"lost", pika.BasicProperties())
        wait_until(lambda: depth(ch, caught) == 1)
        ch.queue_delete(caught)
        ch.exchange_delete(exchange)
        ch.exchange_delete(ae)
