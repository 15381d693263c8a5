"""Routing by exchange type (direct, fanout, topic, headers), the predeclared exchanges, internal
exchanges and alternate exchanges, with pika, aio-pika and aiormq publishers. Every test
runs against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import datetime
import decimal
from typing import Any

import aio_pika
import aiormq
import aiormq.exceptions
import pika
import pika.exceptions
import pytest

from tests.support.clients import bodies, channel_error, temp_queue
from tests.support.clients import pika_channel as channel


# ---------------------------------------------------------------------- routing by type
def test_direct_routes_on_the_exact_key(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "direct", auto_delete=True)
        qa, qb = temp_queue(ch), temp_queue(ch)
        ch.queue_bind(qa, uid, "a")
        ch.queue_bind(qb, uid, "b")
        ch.queue_bind(qb, uid, "a")
        for key in ("a", "b", "c", "A", ""):
            ch.basic_publish(uid, key, key.encode() or b"-")
        assert bodies(ch, qa) == [b"a"]
        assert bodies(ch, qb) == [b"a", b"b"]


async def test_fanout_ignores_the_routing_key(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        exchange = await ch.declare_exchange(uid, aio_pika.ExchangeType.FANOUT, auto_delete=True)
        queues = [await ch.declare_queue(exclusive=True) for _ in range(2)]
        for queue in queues:
            await queue.bind(exchange, routing_key="ignored")
        await exchange.publish(aio_pika.Message(b"m"), routing_key="whatever")
        for queue in queues:
            message = await queue.get(no_ack=True, timeout=5)
            assert (message.body, message.routing_key) == (b"m", "whatever")


TOPIC_PATTERNS = [
    "a.b.c",
    "a.*.c",
    "a.#",
    "#",
    "*",
    "#.c",
    "a.#.c",
    "*.*",
    "a..c",
    "",
    "a.*.#",
    "#.#",
    "*.#.*",
    "a.b.#.#",
]

TOPIC_KEYS = ["a.b.c", "a.c", "a", "c", "a..c", "", "a.b.b.c", "x.y", "a.b", ".", "a.b.c.d"]


def test_topic_matching_table(amqp_url, uid):
    """Which binding patterns match which keys, including empty words and the empty key."""
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "topic", auto_delete=True)
        queues = {pattern: temp_queue(ch) for pattern in TOPIC_PATTERNS}
        for pattern, queue in queues.items():
            ch.queue_bind(queue, uid, pattern)
        for key in TOPIC_KEYS:
            ch.basic_publish(uid, key, key.encode())
        got = {pattern: [b.decode() for b in bodies(ch, q)] for pattern, q in queues.items()}
    assert got == {
        "a.b.c": ["a.b.c"],
        "a.*.c": ["a.b.c", "a..c"],
        "a.#": ["a.b.c", "a.c", "a", "a..c", "a.b.b.c", "a.b", "a.b.c.d"],
        "#": TOPIC_KEYS,
        "*": ["a", "c"],
        "#.c": ["a.b.c", "a.c", "c", "a..c", "a.b.b.c"],
        "a.#.c": ["a.b.c", "a.c", "a..c", "a.b.b.c"],
        "*.*": ["a.c", "x.y", "a.b", "."],
        "a..c": ["a..c"],
        "": [""],
        "a.*.#": ["a.b.c", "a.c", "a..c", "a.b.b.c", "a.b", "a.b.c.d"],
        "#.#": TOPIC_KEYS,
        "*.#.*": ["a.b.c", "a.c", "a..c", "a.b.b.c", "x.y", "a.b", ".", "a.b.c.d"],
        "a.b.#.#": ["a.b.c", "a.b.b.c", "a.b", "a.b.c.d"],
    }


async def _publish_headers(url: str, exchange: str, headers: dict[str, Any]) -> None:
    """aiormq encodes small integers as byte/short, unlike pika's signedint."""
    conn = await aiormq.connect(url)
    try:
        ch = await conn.channel()
        await ch.confirm_delivery()
        props = aiormq.spec.Basic.Properties(headers=headers)
        await ch.basic_publish(b"m", exchange=exchange, properties=props)
    finally:
        await conn.close()


HEADER_CASES = [
    ("all", {"a": 1, "b": "x"}, {"a": 1, "b": "x", "c": 0}, "pika", True),
    ("all", {"a": 1, "b": "x"}, {"a": 1}, "pika", False),
    ("any", {"a": 1, "b": "x"}, {"b": "x"}, "pika", True),
    ("any", {"a": 1, "b": "x"}, {"c": 1}, "pika", False),
    ("all", {}, {}, "pika", True),
    ("any", {}, {"a": 1}, "pika", False),
    ("all", {"x-k": "1"}, {"x-k": "2"}, "pika", True),
    ("any", {"x-k": "1"}, {"x-k": "1"}, "pika", False),
    ("all-with-x", {"x-k": "1"}, {"x-k": "1"}, "pika", True),
    ("all-with-x", {"x-k": "1"}, {"x-k": "2"}, "pika", False),
    ("any-with-x", {"x-k": "1", "b": 2}, {"x-k": "1"}, "pika", True),
    ("all", {"n": 1}, {"n": 1}, "aiormq", True),  # signedint binding, byte header
    ("all", {"n": 2**40}, {"n": 2**40}, "aiormq", True),
    ("all", {"n": 1}, {"n": 1.0}, "aiormq", True),
    ("all", {"n": 1}, {"n": "1"}, "pika", False),
    ("all", {"n": 1}, {"n": True}, "pika", False),
    ("all", {"n": True}, {"n": True}, "aiormq", True),
    ("all", {"n": "a"}, {"n": b"a"}, "pika", True),  # longstr and binary are both binaries
    ("all", {"n": decimal.Decimal(1)}, {"n": 1}, "pika", False),
    ("all", {"n": None}, {"n": 5}, "pika", True),  # void: presence is enough
    ("all", {"n": None}, {"m": 5}, "pika", False),
    ("all", {"n": {"a": [1, "x"]}}, {"n": {"a": [1, "x"]}}, "pika", True),
    (
        "all",
        {"t": datetime.datetime(2020, 1, 1)},
        {"t": datetime.datetime(2020, 1, 1)},
        "pika",
        True,
    ),
]


@pytest.mark.parametrize(("mode", "binding", "headers", "publisher", "routed"), HEADER_CASES)
def test_headers_matching(amqp_url, uid, mode, binding, headers, publisher, routed):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "headers", auto_delete=True)
        queue = temp_queue(ch)
        ch.queue_bind(queue, uid, "", arguments={"x-match": mode, **binding})
        if publisher == "pika":
            ch.basic_publish(uid, "", b"m", pika.BasicProperties(headers=headers))
        else:
            asyncio.run(_publish_headers(amqp_url, uid, headers))
        assert bool(bodies(ch, queue)) is routed


def test_headers_binding_without_x_match_means_all(amqp_url, uid):
    with channel(amqp_url) as ch:
        queue = temp_queue(ch)
        ch.queue_bind(queue, "amq.headers", "", arguments={"a": 1, "b": 2})
        ch.basic_publish("amq.headers", "", b"1", pika.BasicProperties(headers={"a": 1}))
        ch.basic_publish("amq.headers", "", b"2", pika.BasicProperties(headers={"a": 1, "b": 2}))
        ch.basic_publish("amq.headers", "", b"3")
        assert bodies(ch, queue) == [b"2"]


@pytest.mark.parametrize(
    ("x_match", "text"),
    [
        (
            "bogus",
            'Invalid x-match field value <<"bogus">>; expected all, any, all-with-x, or any-with-x',
        ),
        (
            "ALL",
            'Invalid x-match field value <<"ALL">>; expected all, any, all-with-x, or any-with-x',
        ),
        ("", "Invalid x-match field value <<>>; expected all, any, all-with-x, or any-with-x"),
        (5, "Invalid x-match field type signedint (value 5); expected longstr"),
        (True, "Invalid x-match field type bool (value true); expected longstr"),
    ],
)
def test_headers_binding_with_invalid_x_match_is_refused(amqp_url, uid, x_match, text):
    with channel(amqp_url) as ch:
        queue = ch.queue_declare(uid, exclusive=True).method.queue
        assert channel_error(
            lambda: ch.queue_bind(queue, "amq.headers", "", arguments={"x-match": x_match})
        ) == (406, f"PRECONDITION_FAILED - {text}")
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "fanout", auto_delete=True)
        assert (
            channel_error(
                lambda: ch.exchange_bind(uid, "amq.match", "", arguments={"x-match": x_match})
            )[0]
            == 406
        )


# ---------------------------------------------------------------------- predeclared exchanges
def test_default_exchange_routes_to_the_queue_named_by_the_key(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"direct")
        ch.basic_publish("", uid + "-nobody", b"lost")
        assert bodies(ch, uid) == [b"direct"]


@pytest.mark.parametrize(
    ("name", "type_"),
    [
        ("amq.direct", "direct"),
        ("amq.fanout", "fanout"),
        ("amq.topic", "topic"),
        ("amq.headers", "headers"),
        ("amq.match", "headers"),
    ],
)
async def test_predeclared_exchanges(amqp_url, uid, name, type_):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.exchange_declare(name, passive=True)
        await ch.exchange_declare(name, exchange_type=type_, durable=True)  # equivalent: fine
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
            await ch.exchange_declare(name, exchange_type=type_)  # not durable
        assert info.value.args[0] == (
            f"PRECONDITION_FAILED - inequivalent arg 'durable' for exchange '{name}' in vhost "
            "'/': received 'false' but current is 'true'"
        )
    finally:
        await conn.close()


# ---------------------------------------------------------------------- internal, alternate
def test_internal_exchange_refuses_publishes_but_routes_bound_traffic(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "fanout", internal=True, auto_delete=True)
        ch.exchange_bind(uid, "amq.direct", uid)
        queue = temp_queue(ch)
        ch.queue_bind(queue, uid)
        ch.basic_publish("amq.direct", uid, b"via-binding")
        assert bodies(ch, queue) == [b"via-binding"]
        ch.basic_publish(uid, "", b"direct")
        assert channel_error(lambda: ch.queue_declare(queue, passive=True)) == (
            403,
            f"ACCESS_REFUSED - cannot publish to internal exchange '{uid}' in vhost '/'",
        )


def test_alternate_exchange_takes_unroutable_messages(amqp_url, uid):
    ae = uid + "-ae"
    with channel(amqp_url) as ch:
        ch.exchange_declare(ae, "fanout", auto_delete=True, internal=True)
        ch.exchange_declare(uid, "direct", auto_delete=True, arguments={"alternate-exchange": ae})
        routed, spare = temp_queue(ch), temp_queue(ch)
        ch.queue_bind(routed, uid, "k")
        ch.queue_bind(spare, ae)
        returned: list[str] = []
        ch.add_on_return_callback(lambda _c, method, _p, _b: returned.append(method.routing_key))
        ch.confirm_delivery()
        ch.basic_publish(uid, "k", b"routed", mandatory=True)
        ch.basic_publish(uid, "other", b"spare", mandatory=True)
        assert returned == []  # routed by the alternate exchange: not returned
        assert bodies(ch, routed) == [b"routed"]
        method, _props, body = ch.basic_get(spare, auto_ack=True)
        assert (body, method.exchange, method.routing_key) == (b"spare", uid, "other")


def test_unroutable_by_the_alternate_exchange_too_is_returned(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-ae", "direct", auto_delete=True)
        ch.exchange_declare(
            uid, "direct", auto_delete=True, arguments={"alternate-exchange": uid + "-ae"}
        )
        ch.exchange_declare(
            uid + "-gone", "direct", auto_delete=True, arguments={"alternate-exchange": uid + "-x"}
        )
        returned: list[tuple[int, str, str]] = []
        ch.add_on_return_callback(
            lambda _c, m, _p, _b: returned.append((m.reply_code, m.reply_text, m.exchange))
        )
        ch.basic_publish(uid, "k", b"1", mandatory=True)
        ch.basic_publish(uid + "-gone", "k", b"2", mandatory=True)
        ch.queue_declare("", exclusive=True)  # a round trip: returns arrive before its reply
        ch.connection.process_data_events(0)
        assert returned == [(312, "NO_ROUTE", uid), (312, "NO_ROUTE", uid + "-gone")]
        ch.exchange_delete(uid + "-ae")


def test_alternate_exchange_is_not_used_when_a_bound_exchange_is_matched(amqp_url, uid):
    """The alternate exchange is for messages the exchange itself does not route."""
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-ae", "fanout", auto_delete=True)
        ch.exchange_declare(uid + "-dead-end", "direct", auto_delete=True)
        ch.exchange_declare(
            uid, "direct", auto_delete=True, arguments={"alternate-exchange": uid + "-ae"}
        )
        ch.exchange_bind(uid + "-dead-end", uid, "k")
        spare = temp_queue(ch)
        ch.queue_bind(spare, uid + "-ae")
        ch.basic_publish(uid, "k", b"to-dead-end")
        ch.basic_publish(uid, "x", b"to-ae")
        assert bodies(ch, spare) == [b"to-ae"]
