"""Queues: server-named, passive, durable, exclusive and auto-delete queues, redeclare
equivalence, purge and delete, declare-ok counts and the empty-name shortcut. Every test runs
against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aio_pika
import aiormq
import aiormq.exceptions
import pika
import pika.exceptions
import pytest

LOCKED = (
    "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{q}' in vhost '/'. It "
    "could be originally declared on another connection or the exclusive property value does "
    "not match that of the original declaration."
)


def short(uid: str) -> str:
    """A unique name short enough for the 405 text to fit in a reply (255 bytes)."""
    return "-".join(uid.split("-")[:2]) + "-x"


@contextmanager
def connection(url: str) -> Iterator[pika.BlockingConnection]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn
    finally:
        if conn.is_open:
            conn.close()


@contextmanager
def channel(url: str) -> Iterator[Any]:
    with connection(url) as conn:
        yield conn.channel()


def channel_error(fn: Callable[[], Any]) -> tuple[int, str]:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        fn()
    return info.value.reply_code, info.value.reply_text


def queue_exists(url: str, name: str) -> bool:
    with channel(url) as ch:
        try:
            ch.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            assert error.reply_code in (404, 405)
            return error.reply_code == 405
        return True


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


# ---------------------------------------------------------------------- names
def test_server_named_queue(amqp_url, uid):
    with channel(amqp_url) as ch:
        name = ch.queue_declare("", exclusive=True).method.queue
        assert name.startswith("amq.gen-") and len(name) == 30
        assert all(c.isalnum() or c in "-_" for c in name[8:])
        ch.queue_declare(name, passive=True)
        assert channel_error(lambda: ch.queue_declare(name, exclusive=True)) == (
            403,
            f"ACCESS_REFUSED - queue name '{name}' contains reserved prefix 'amq.*'",
        )


async def test_server_named_queues_are_distinct_with_aiormq(amqp_url):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        names = {(await ch.queue_declare("", exclusive=True)).queue for _ in range(5)}
        assert len(names) == 5
        assert all(n.startswith("amq.gen-") and len(n) == 30 for n in names)
    finally:
        await conn.close()


def test_reserved_prefix(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare("amq." + uid)) == (
            403,
            f"ACCESS_REFUSED - queue name 'amq.{uid}' contains reserved prefix 'amq.*'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare("amq." + uid, passive=True)) == (
            404,
            f"NOT_FOUND - no queue 'amq.{uid}' in vhost '/'",
        )


def test_passive_declare(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare(uid, passive=True)) == (
            404,
            f"NOT_FOUND - no queue '{uid}' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 3})
        # flags and arguments of a passive declare are ignored
        ok = ch.queue_declare(uid, passive=True, durable=True, arguments={"x-max-length": 9})
        assert (ok.method.queue, ok.method.message_count, ok.method.consumer_count) == (uid, 0, 0)
        ch.queue_delete(uid)


# ---------------------------------------------------------------------- equivalence
@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {},
            {"durable": True},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"durable": True},
            {},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"auto_delete": True},
            {},
            "inequivalent arg 'auto_delete' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {},
            {"durable": True, "arguments": {"x-message-ttl": 5}},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"arguments": {"x-message-ttl": 2000}},
            {"arguments": {"x-message-ttl": 1000}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received '1000' but current is '2000'",
        ),
        (
            {"arguments": {"x-message-ttl": 2000}},
            {"arguments": {"x-message-ttl": "2000"}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received '2000' but current is '2000'",
        ),
        (
            {"arguments": {"x-max-length": 1}},
            {"arguments": {"x-max-length": True}},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received 'true' but current is '1'",
        ),
        (
            {},
            {"arguments": {"x-message-ttl": 2000}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received the value '2000' of type 'signedint' but current is none",
        ),
        (
            {"arguments": {"x-max-length": 2**40}},
            {},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received none but current is the value '1099511627776' of type 'long'",
        ),
        (
            {"arguments": {"x-dead-letter-exchange": "a"}},
            {"arguments": {"x-dead-letter-exchange": "b"}},
            "inequivalent arg 'x-dead-letter-exchange' for queue '{q}' in vhost '/': "
            "received 'b' but current is 'a'",
        ),
        (
            {"arguments": {"x-queue-mode": "lazy"}},
            {},
            "inequivalent arg 'x-queue-mode' for queue '{q}' in vhost '/': "
            "received none but current is the value 'lazy' of type 'longstr'",
        ),
        (
            {"arguments": {"x-single-active-consumer": True}},
            {"arguments": {"x-single-active-consumer": False}},
            "inequivalent arg 'x-single-active-consumer' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"arguments": {"x-queue-version": 1}},
            {"arguments": {"x-queue-version": 2}},
            "inequivalent arg 'x-queue-version' for queue '{q}' in vhost '/': "
            "received '2' but current is '1'",
        ),
        (
            {},
            {"arguments": {"x-queue-type": "quorum"}},
            "inequivalent arg 'x-queue-type' for queue '{q}' in vhost '/': "
            "received the value 'quorum' of type 'longstr' but current is none",
        ),
        ({"arguments": {"x-queue-type": "classic"}}, {}, None),
        ({}, {"arguments": {"x-queue-type": "classic"}}, None),
        ({"arguments": {"x-custom": 1}}, {"arguments": {"x-custom": "other"}}, None),
        ({"arguments": {"x-message-ttl": 2000}}, {"arguments": {"x-message-ttl": 2**40}}, 406),
    ],
)
def test_redeclare_equivalence_pika(amqp_url, uid, first, second, detail):
    with connection(amqp_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, **first)
        try:
            if detail is None:
                ch.queue_declare(uid, **second)
            elif detail == 406:
                assert channel_error(lambda: ch.queue_declare(uid, **second))[0] == 406
            else:
                assert channel_error(lambda: ch.queue_declare(uid, **second)) == (
                    406,
                    "PRECONDITION_FAILED - " + detail.format(q=uid),
                )
        finally:
            conn.channel().queue_delete(uid)


@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {},
            {"x-message-ttl": 2000},
            "received the value '2000' of type 'short' but current is none",
        ),
        ({}, {"x-message-ttl": 20}, "received the value '20' of type 'byte' but current is none"),
        (
            {},
            {"x-message-ttl": 100000},
            "received the value '100000' of type 'signedint' but current is none",
        ),
        (
            {"x-message-ttl": 2000},
            {},
            "received none but current is the value '2000' of type 'short'",
        ),
        (
            {"x-message-ttl": 2000},
            {"x-message-ttl": 2000.0},
            "received '2.0e3' but current is '2000'",
        ),
        ({"x-message-ttl": 2000}, {"x-message-ttl": 1.5}, "received '1.5' but current is '2000'"),
    ],
)
async def test_redeclare_equivalence_aiormq(amqp_url, uid, first, second, detail):
    """aiormq encodes integers in the smallest type, and RabbitMQ's texts name that type."""
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, auto_delete=True, arguments=first)
        await ch.queue_declare(uid, auto_delete=True, arguments=dict(first))  # same: fine
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
            await ch.queue_declare(uid, auto_delete=True, arguments=second)
        assert info.value.args[0] == (
            f"PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue '{uid}' in "
            f"vhost '/': {detail}"
        )
        ch = await conn.channel()
        await ch.queue_delete(uid)
    finally:
        await conn.close()


def test_integer_widths_are_equivalent(amqp_url, uid):
    """A short from aiormq and a signedint from pika with the same value are the same."""
    import asyncio

    async def declare() -> None:
        conn = await aiormq.connect(amqp_url)
        ch = await conn.channel()
        await ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 300})
        await conn.close()

    asyncio.run(declare())
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 300})
        ch.queue_delete(uid)


# ---------------------------------------------------------------------- exclusive
EXCLUSIVE_OPERATIONS = {
    "declare": lambda ch, q: ch.queue_declare(q),
    "declare-exclusive": lambda ch, q: ch.queue_declare(q, exclusive=True),
    "declare-durable": lambda ch, q: ch.queue_declare(q, durable=True),
    "passive": lambda ch, q: ch.queue_declare(q, passive=True),
    "consume": lambda ch, q: ch.basic_consume(q, lambda *a: None),
    "get": lambda ch, q: ch.basic_get(q),
    "bind": lambda ch, q: ch.queue_bind(q, "amq.direct", "k"),
    "purge": lambda ch, q: ch.queue_purge(q),
    "delete": lambda ch, q: ch.queue_delete(q),
}


@pytest.mark.parametrize("operation", list(EXCLUSIVE_OPERATIONS))
def test_exclusive_queue_is_locked_to_its_connection(amqp_url, uid, operation):
    uid = short(uid)
    with channel(amqp_url) as owner:
        owner.queue_declare(uid, exclusive=True)
        with channel(amqp_url) as other:
            assert channel_error(lambda: EXCLUSIVE_OPERATIONS[operation](other, uid)) == (
                405,
                LOCKED.format(q=uid),
            )
        owner.queue_declare(uid, passive=True)


def test_exclusive_queue_other_connections_may_publish_and_unbind(amqp_url, uid):
    uid = short(uid)
    with channel(amqp_url) as owner:
        owner.queue_declare(uid, exclusive=True)
        owner.queue_bind(uid, "amq.direct", uid)
        with channel(amqp_url) as other:
            other.confirm_delivery()
            other.basic_publish("amq.direct", uid, b"from-other")
            other.basic_publish("", uid, b"by-name")
            other.queue_unbind(uid, "amq.direct", "never-bound")
            assert channel_error(lambda: other.queue_unbind(uid, "amq.direct", uid)) == (
                405,
                LOCKED.format(q=uid),
            )
        assert owner.queue_declare(uid, passive=True).method.message_count == 2


@pytest.mark.parametrize(("first", "second"), [(True, False), (False, True)])
def test_exclusive_flag_must_match_on_the_same_connection(amqp_url, uid, first, second):
    uid = short(uid)
    with connection(amqp_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=first, auto_delete=True)
        assert channel_error(lambda: ch.queue_declare(uid, exclusive=second, auto_delete=True)) == (
            405,
            LOCKED.format(q=uid),
        )
        conn.channel().queue_delete(uid)


def test_exclusive_durable_redeclares_as_non_durable(amqp_url, uid):
    """RabbitMQ treats an exclusive queue as transient whatever the durable flag says."""
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True, durable=True)
        ch.queue_declare(uid, exclusive=True, durable=False)
        ch.queue_declare(uid, exclusive=True, durable=True)


async def test_exclusive_queue_is_deleted_with_its_connection(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    ch = await conn.channel()
    await ch.declare_queue(uid, exclusive=True)
    await ch.default_exchange.publish(aio_pika.Message(b"m"), routing_key=uid)
    assert queue_exists(amqp_url, uid)
    await conn.close()
    wait_until(lambda: not queue_exists(amqp_url, uid))


# ---------------------------------------------------------------------- auto-delete
def test_auto_delete_queue_goes_when_its_last_consumer_cancels(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.confirm_delivery()  # a confirmed message is in the queue's counts
        ch.queue_declare(uid, auto_delete=True)
        ch.basic_publish("", uid, b"m")
        assert ch.queue_declare(uid, passive=True).method.message_count == 1  # no consumer yet
        first = ch.basic_consume(uid, lambda *a: None)
        second = ch.basic_consume(uid, lambda *a: None)
        ch.basic_cancel(first)
        assert ch.queue_declare(uid, passive=True).method.consumer_count == 1
        ch.basic_cancel(second)
        wait_until(lambda: not queue_exists(amqp_url, uid))


async def test_auto_delete_queue_goes_when_the_consumer_channel_closes(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, auto_delete=True)

        async def ignore(message: Any) -> None:
            return None

        await ch.basic_consume(uid, ignore)
        await ch.close()
        wait_until(lambda: not queue_exists(amqp_url, uid))
    finally:
        await conn.close()


# ---------------------------------------------------------------------- counts, purge, delete
def test_declare_ok_counts_ready_messages_and_consumers(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.confirm_delivery()
        ch.queue_declare(uid, exclusive=True)
        for i in range(4):
            ch.basic_publish("", uid, str(i).encode())
        ch.basic_get(uid)  # one unacked: not counted
        ok = ch.queue_declare(uid, exclusive=True).method
        assert (ok.message_count, ok.consumer_count) == (3, 0)
        ch.basic_qos(prefetch_count=1)
        ch.basic_consume(uid, lambda *a: None)
        ch.connection.process_data_events(0.05)
        ok = ch.queue_declare(uid, passive=True).method
        assert (ok.message_count, ok.consumer_count) == (2, 1)


def test_purge_counts_ready_messages_only(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.confirm_delivery()
        ch.queue_declare(uid, exclusive=True)
        for _ in range(3):
            ch.basic_publish("", uid, b"m")
        method, _props, _body = ch.basic_get(uid)
        assert ch.queue_purge(uid).method.message_count == 2
        assert ch.queue_purge(uid).method.message_count == 0
        ch.basic_reject(method.delivery_tag, requeue=True)  # the unacked one survives purge
        wait_until(lambda: ch.queue_declare(uid, passive=True).method.message_count == 1)
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_purge(uid + "-missing")) == (
            404,
            f"NOT_FOUND - no queue '{uid}-missing' in vhost '/'",
        )


def test_delete_if_unused_and_if_empty(amqp_url, uid):
    with connection(amqp_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid)
        tag = ch.basic_consume(uid, lambda *a: None)
        other = conn.channel()
        assert channel_error(lambda: other.queue_delete(uid, if_unused=True)) == (
            406,
            f"PRECONDITION_FAILED - queue '{uid}' in vhost '/' in use",
        )
        ch.basic_cancel(tag)
        ch.confirm_delivery()
        ch.basic_publish("", uid, b"m")
        other = conn.channel()
        assert channel_error(lambda: other.queue_delete(uid, if_empty=True)) == (
            406,
            f"PRECONDITION_FAILED - queue '{uid}' in vhost '/' not empty",
        )
        other = conn.channel()
        assert other.queue_delete(uid, if_unused=True).method.message_count == 1
        assert other.queue_delete(uid).method.message_count == 0  # missing: fine


async def test_delete_returns_the_ready_count(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid)
        for _ in range(3):
            await ch.default_exchange.publish(aio_pika.Message(b"m"), routing_key=uid)
        message = await queue.get(timeout=5)  # unacked: not counted
        result = await queue.delete(if_unused=False, if_empty=False)
        assert result.message_count == 2
        await message.ack()  # acking a delivery from a deleted queue is harmless
        assert not queue_exists(amqp_url, uid)


# ---------------------------------------------------------------------- the empty name
def test_empty_name_means_the_last_declared_queue(amqp_url, uid):
    with channel(amqp_url) as ch:
        name = ch.queue_declare(uid, exclusive=True).method.queue
        ch.queue_bind("", "amq.direct", uid + "-key")
        ch.queue_bind("", "amq.direct")  # empty key too: the key is the queue name
        ch.basic_publish("amq.direct", uid + "-key", b"1")
        ch.basic_publish("amq.direct", name, b"2")
        ch.basic_publish("amq.direct", "", b"not-routed")
        assert ch.basic_get("", auto_ack=True)[2] == b"1"
        assert ch.queue_purge("").method.message_count == 1
        ch.queue_unbind("", "amq.direct", uid + "-key")
        ch.basic_publish("amq.direct", uid + "-key", b"3")
        assert ch.basic_get("", auto_ack=True)[0] is None
        tag = ch.basic_consume("", lambda *a: None)
        ch.basic_cancel(tag)
        ch.queue_delete("")
        assert channel_error(lambda: ch.queue_declare(name, passive=True))[0] == 404


@pytest.mark.parametrize(
    "operation",
    [
        lambda ch: ch.queue_bind("", "amq.direct", "k"),
        lambda ch: ch.queue_unbind("", "amq.direct", "k"),
        lambda ch: ch.queue_purge(""),
        lambda ch: ch.queue_delete(""),
        lambda ch: ch.basic_get(""),
        lambda ch: ch.basic_consume("", lambda *a: None),
    ],
    ids=["bind", "unbind", "purge", "delete", "get", "consume"],
)
def test_empty_name_without_a_declared_queue_404(amqp_url, operation):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: operation(ch)) == (
            404,
            "NOT_FOUND - no previously declared queue",
        )


def test_passive_declare_of_the_empty_name_is_not_a_shortcut(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True)
        assert channel_error(lambda: ch.queue_declare("", passive=True)) == (
            404,
            "NOT_FOUND - no queue '' in vhost '/'",
        )


def test_long_error_texts_are_cut_like_rabbitmq(amqp_url, uid):
    """A reply text over 255 bytes ends in '...' within the limit."""
    name = short(uid) + "q" * 150
    with channel(amqp_url) as owner:
        owner.queue_declare(name, exclusive=True)
        with channel(amqp_url) as other:
            code, text = channel_error(lambda: other.queue_declare(name, passive=True))
    full = LOCKED.format(q=name)
    assert (code, text) == (405, full.encode()[:252].decode() + "...")


@pytest.mark.parametrize("passive", [True, False])
def test_declaring_the_direct_reply_to_pseudo_queue(amqp_url, passive):
    with channel(amqp_url) as ch:
        ok = ch.queue_declare("amq.rabbitmq.reply-to", passive=passive, durable=True).method
        assert (ok.queue, ok.message_count, ok.consumer_count) == ("amq.rabbitmq.reply-to", 0, 1)
        assert channel_error(
            lambda: ch.queue_declare("amq.rabbitmq.reply-to.x", passive=passive)
        ) == (
            404,
            "NOT_FOUND - no queue 'amq.rabbitmq.reply-to.x' in vhost '/'",
        )
