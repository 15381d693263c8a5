"""Exchanges: routing by type, predeclared exchanges, declare / delete / bind rules and texts,
exchange-to-exchange bindings, auto-delete, internal and alternate exchanges. Every test runs
against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import datetime
import decimal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aio_pika
import aiormq
import aiormq.exceptions
import pika
import pika.exceptions
import pytest

NOT_DEFAULT = "ACCESS_REFUSED - operation not permitted on the default exchange"


@contextmanager
def channel(url: str) -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn.channel()
    finally:
        if conn.is_open:
            conn.close()


def channel_error(fn: Callable[[], Any]) -> tuple[int, str]:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        fn()
    return info.value.reply_code, info.value.reply_text


def bodies(ch: Any, queue: str) -> list[bytes]:
    """Everything ready in a queue, in order (publishes on the same channel are routed before a
    later basic.get, on both brokers)."""
    out = []
    while True:
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append(body)


def temp_queue(ch: Any) -> str:
    return ch.queue_declare("", exclusive=True).method.queue


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


# ---------------------------------------------------------------------- declare
@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {"exchange_type": "direct"},
            {"exchange_type": "fanout"},
            "inequivalent arg 'type' for exchange '{x}' in vhost '/': "
            "received 'fanout' but current is 'direct'",
        ),
        (
            {"durable": False},
            {"durable": True},
            "inequivalent arg 'durable' for exchange '{x}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"auto_delete": True},
            {"auto_delete": False},
            "inequivalent arg 'auto_delete' for exchange '{x}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"internal": True},
            {"internal": False},
            "inequivalent arg 'internal' for exchange '{x}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"arguments": {"alternate-exchange": "ae1"}},
            {"arguments": {"alternate-exchange": "ae2"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received 'ae2' but current is 'ae1'",
        ),
        (
            {"arguments": {"alternate-exchange": "ae1"}},
            {},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received none but current is the value 'ae1' of type 'longstr'",
        ),
        (
            {},
            {"arguments": {"alternate-exchange": "ae1"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received the value 'ae1' of type 'longstr' but current is none",
        ),
        ({"arguments": {"x-other": 1}}, {"arguments": {"x-other": "2"}}, None),
    ],
)
def test_redeclare_equivalence(amqp_url, uid, first, second, detail):
    def declare(ch: Any, options: dict[str, Any]) -> None:
        options = {"exchange_type": "direct", "auto_delete": True, **options}
        ch.exchange_declare(uid, **options)

    with channel(amqp_url) as ch:
        declare(ch, first)
        declare(ch, first)  # the same declaration again is fine
        if detail is None:
            declare(ch, second)
        else:
            assert channel_error(lambda: declare(ch, second)) == (
                406,
                "PRECONDITION_FAILED - " + detail.format(x=uid),
            )
        ch.connection.channel().exchange_delete(uid)


def test_passive_declare_of_a_missing_exchange_404(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare(uid, passive=True)) == (
            404,
            f"NOT_FOUND - no exchange '{uid}' in vhost '/'",
        )


def test_passive_declare_ignores_type_and_flags(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "topic", auto_delete=True)
        ch.exchange_declare(uid, "no-such-type", passive=True, durable=True)
        ch.exchange_delete(uid)


def test_reserved_amq_prefix(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq." + uid, "direct")) == (
            403,
            f"ACCESS_REFUSED - exchange name 'amq.{uid}' contains reserved prefix 'amq.*'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq." + uid, passive=True)) == (
            404,
            f"NOT_FOUND - no exchange 'amq.{uid}' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq.direct", "fanout", durable=True)) == (
            406,
            "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'amq.direct' in vhost "
            "'/': received 'fanout' but current is 'direct'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_delete("amq.fanout")) == (
            403,
            "ACCESS_REFUSED - deletion of system exchange 'amq.fanout' in vhost '/' not allowed",
        )


@pytest.mark.parametrize(("type_", "adjective"), [("no-such-type", "unknown"), ("", "invalid")])
def test_unknown_exchange_type_closes_the_connection_503(amqp_url, uid, type_, adjective):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        ch.exchange_declare(uid, type_)
    assert (info.value.reply_code, info.value.reply_text) == (
        503,
        f"COMMAND_INVALID - {adjective} exchange type '{type_}'",
    )
    assert not conn.is_open


async def test_unknown_exchange_type_with_aiormq(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    ch = await conn.channel()
    with pytest.raises(aiormq.exceptions.ConnectionCommandInvalid):
        await ch.exchange_declare(uid, exchange_type="x-no-such-type")
    assert conn.is_closed


def test_alternate_exchange_of_the_wrong_type_is_refused(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(
            lambda: ch.exchange_declare(uid, "direct", arguments={"alternate-exchange": 5})
        ) == (
            406,
            f"PRECONDITION_FAILED - invalid type 'signedint' for arg 'alternate-exchange' in "
            f"exchange '{uid}' in vhost '/'",
        )


# ---------------------------------------------------------------------- the default exchange
@pytest.mark.parametrize(
    "operation",
    [
        lambda ch, q: ch.exchange_declare("", "direct"),
        lambda ch, q: ch.exchange_declare("", "direct", passive=True),
        lambda ch, q: ch.exchange_delete(""),
        lambda ch, q: ch.queue_bind(q, "", q),
        lambda ch, q: ch.queue_unbind(q, "", q),
        lambda ch, q: ch.exchange_bind("", "amq.direct", "k"),
        lambda ch, q: ch.exchange_bind("amq.direct", "", "k"),
        lambda ch, q: ch.exchange_unbind("", "amq.direct", "k"),
    ],
    ids=[
        "declare",
        "passive",
        "delete",
        "queue-bind",
        "queue-unbind",
        "as-destination",
        "as-source",
        "e2e-unbind",
    ],
)
def test_default_exchange_cannot_be_changed(amqp_url, uid, operation):
    with channel(amqp_url) as ch:
        queue = temp_queue(ch)
        assert channel_error(lambda: operation(ch, queue)) == (403, NOT_DEFAULT)


# ---------------------------------------------------------------------- delete
def test_delete_if_unused_counts_only_bindings_from_the_exchange(amqp_url, uid):
    source, target = uid + "-src", uid + "-dst"
    with channel(amqp_url) as ch:
        ch.exchange_declare(source, "fanout")
        ch.exchange_declare(target, "fanout")
        ch.exchange_bind(target, source)
        assert channel_error(lambda: ch.exchange_delete(source, if_unused=True)) == (
            406,
            f"PRECONDITION_FAILED - exchange '{source}' in vhost '/' in use",
        )
    with channel(amqp_url) as ch:
        ch.exchange_delete(target, if_unused=True)  # only bound to: unused
        ch.exchange_delete(source, if_unused=True)  # its binding went with the target
        assert channel_error(lambda: ch.exchange_declare(source, passive=True))[0] == 404


def test_deleting_a_missing_exchange_succeeds(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_delete(uid)
        ch.exchange_delete(uid, if_unused=True)


# ---------------------------------------------------------------------- bindings
def test_binding_errors_name_the_missing_source_first(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_bind(uid + "-q", uid + "-x", "k")) == (
            404,
            f"NOT_FOUND - no exchange '{uid}-x' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_bind(uid + "-q", "amq.direct", "k")) == (
            404,
            f"NOT_FOUND - no queue '{uid}-q' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_bind(uid + "-d", uid + "-s", "k")) == (
            404,
            f"NOT_FOUND - no exchange '{uid}-s' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_bind(uid + "-d", "amq.direct", "k")) == (
            404,
            f"NOT_FOUND - no exchange '{uid}-d' in vhost '/'",
        )


def test_unbinding_what_does_not_exist_succeeds(amqp_url, uid):
    with channel(amqp_url) as ch:
        queue = temp_queue(ch)
        ch.queue_unbind(queue, "amq.direct", "never-bound")
        ch.queue_unbind(uid + "-no-queue", "amq.direct", "k")
        ch.queue_unbind(queue, uid + "-no-exchange", "k")
        ch.exchange_unbind(uid + "-no-dest", "amq.direct", "k")
        ch.exchange_unbind("amq.fanout", "amq.direct", "never-bound")
        ch.queue_declare(queue, passive=True)


def test_binding_twice_is_one_binding(amqp_url, uid):
    with channel(amqp_url) as ch:
        queue = temp_queue(ch)
        ch.queue_bind(queue, "amq.direct", uid)
        ch.queue_bind(queue, "amq.direct", uid)
        ch.basic_publish("amq.direct", uid, b"once")
        assert bodies(ch, queue) == [b"once"]
        ch.queue_unbind(queue, "amq.direct", uid)
        ch.basic_publish("amq.direct", uid, b"gone")
        assert bodies(ch, queue) == []


async def test_exchange_to_exchange_chain_and_unbind(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        first = await ch.declare_exchange(uid + "-1", aio_pika.ExchangeType.TOPIC)
        second = await ch.declare_exchange(uid + "-2", aio_pika.ExchangeType.DIRECT)
        third = await ch.declare_exchange(uid + "-3", aio_pika.ExchangeType.FANOUT)
        await second.bind(first, routing_key="a.*")
        await third.bind(second, routing_key="a.b")
        queue = await ch.declare_queue(exclusive=True)
        await queue.bind(third)
        for key in ("a.b", "a.c", "x.y"):
            await first.publish(aio_pika.Message(key.encode()), routing_key=key)
        message = await queue.get(no_ack=True, timeout=5)
        assert (message.body, message.exchange, message.routing_key) == (b"a.b", uid + "-1", "a.b")
        assert await queue.get(no_ack=True, fail=False) is None
        await third.unbind(second, routing_key="a.b")
        await first.publish(aio_pika.Message(b"after"), routing_key="a.b")
        assert await queue.get(no_ack=True, fail=False, timeout=5) is None
        for exchange in (first, second, third):
            await exchange.delete()


async def test_auto_delete_cascades_along_a_chain(amqp_url, uid):
    """An auto-delete exchange whose last binding goes is deleted, which removes the binding
    to it from its source, which may then go too."""
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        kind = aio_pika.ExchangeType.FANOUT
        first = await ch.declare_exchange(uid + "-1", kind, auto_delete=True)
        second = await ch.declare_exchange(uid + "-2", kind, auto_delete=True)
        third = await ch.declare_exchange(uid + "-3", kind, auto_delete=True)
        await second.bind(first)
        await third.bind(second)
        queue = await ch.declare_queue(exclusive=True)
        await queue.bind(third)
        await queue.unbind(third)
        for name in (uid + "-1", uid + "-2", uid + "-3"):
            with pytest.raises(aio_pika.exceptions.ChannelNotFoundEntity):
                await ch.declare_exchange(name, passive=True)
            ch = await conn.channel()


def test_exchange_cycles_deliver_once(amqp_url, uid):
    names = [f"{uid}-{i}" for i in range(3)]
    with channel(amqp_url) as ch:
        for name in names:
            ch.exchange_declare(name, "topic", auto_delete=True)
        for source, destination in zip(names, names[1:] + names[:1], strict=True):
            ch.exchange_bind(destination, source, "#")
        queue = temp_queue(ch)
        ch.queue_bind(queue, names[0], "#")
        ch.queue_bind(queue, names[2], "k.*")
        ch.basic_publish(names[1], "k.x", b"m")
        assert bodies(ch, queue) == [b"m"]


def test_auto_delete_exchange_goes_with_its_last_binding(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "direct", auto_delete=True)
        ch.exchange_declare(uid, "direct", passive=True)  # no bindings yet: still there
        queue = temp_queue(ch)
        ch.queue_bind(queue, uid, "a")
        ch.queue_bind(queue, uid, "b")
        ch.queue_unbind(queue, uid, "a")
        ch.exchange_declare(uid, passive=True)
        ch.queue_unbind(queue, uid, "b")
        assert channel_error(lambda: ch.exchange_declare(uid, passive=True)) == (
            404,
            f"NOT_FOUND - no exchange '{uid}' in vhost '/'",
        )


def test_auto_delete_exchange_goes_when_its_queue_is_deleted(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "fanout", auto_delete=True)
        ch.exchange_declare(uid + "-dst", "fanout", auto_delete=True)
        ch.exchange_bind(uid + "-dst", uid)
        queue = temp_queue(ch)
        ch.queue_bind(queue, uid)
        ch.queue_delete(queue)
        ch.exchange_declare(uid, passive=True)  # still has the exchange binding
        ch.exchange_unbind(uid + "-dst", uid)
        assert channel_error(lambda: ch.exchange_declare(uid, passive=True))[0] == 404
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-dst", passive=True)  # a destination is not auto-deleted
        ch.exchange_delete(uid + "-dst")


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


def test_cr_and_lf_are_dropped_from_names(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "\r\n", "fanout", auto_delete=True)
        ch.exchange_declare(uid, passive=True)
        queue = temp_queue(ch)
        ch.queue_bind(queue, "\n" + uid)
        ch.basic_publish(uid, "", b"m")
        assert bodies(ch, queue) == [b"m"]
