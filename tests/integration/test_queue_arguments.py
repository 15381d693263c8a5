"""Queue arguments: message TTL (queue and per message), queue expiry, length limits with each
overflow mode, priorities, and RabbitMQ's exact texts for invalid values. Every test runs
against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aio_pika
import aiormq
import aiormq.exceptions
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.clients import bodies, channel_error
from tests.support.waiting import wait_until


@contextmanager
def channel(url: str, confirm: bool = False) -> Iterator[Any]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        if confirm:
            ch.confirm_delivery()  # a confirmed message is counted and ordered in its queue
        yield ch
    finally:
        if conn.is_open:
            conn.close()


def ready(ch: Any, queue: str) -> int:
    return ch.queue_declare(queue, passive=True).method.message_count


def queue_exists(url: str, name: str) -> bool:
    with channel(url) as ch:
        try:
            ch.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            assert error.reply_code == 404
            return False
        return True


# ---------------------------------------------------------------------- message TTL
def test_expired_messages_are_never_delivered(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-message-ttl": 60})
        ch.basic_publish("", uid, b"short-lived")
        wait_until(lambda: ready(ch, uid) == 0)
        assert ch.basic_get(uid, auto_ack=True)[0] is None


def test_zero_ttl_reaches_only_a_waiting_consumer(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-message-ttl": 0})
        ch.basic_publish("", uid, b"nobody-waits")
        assert ch.basic_get(uid, auto_ack=True)[0] is None
        got: list[bytes] = []
        ch.basic_consume(uid, lambda _c, _m, _p, body: got.append(body), auto_ack=True)
        ch.basic_publish("", uid, b"consumer-waits")
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            ch.connection.process_data_events(0.02)
        assert got == [b"consumer-waits"]


def test_per_message_expiration(amqp_url, uid):
    """The lower of queue TTL and expiration wins; the property is delivered unchanged; a
    message expires only when it reaches the head of the queue."""
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-message-ttl": 60000})
        ch.basic_publish("", uid, b"gone", pika.BasicProperties(expiration="0"))
        ch.basic_publish("", uid, b"kept", pika.BasicProperties(expiration="60000"))
        ch.basic_publish("", uid, b"late", pika.BasicProperties(expiration="1"))
        method, props, body = ch.basic_get(uid, auto_ack=True)
        assert (body, props.expiration, method.message_count) == (b"kept", "60000", 1)
        time.sleep(0.05)  # 50x the 1 ms expiration of the message now at the head
        assert ch.basic_get(uid, auto_ack=True)[0] is None


@pytest.mark.parametrize(
    ("expiration", "detail"),
    [
        ("soon", "no_integer"),
        ("", "no_integer"),
        ("-5", "{value_negative,-5}"),
        ("1.5", '{leftover_string,".5"}'),
        ("10 ", '{leftover_string," "}'),
        (" 10", "no_integer"),
        ("315360000001", "{value_too_large,315360000001}"),
        # ~p breaks the tuple once the text would reach column 79.
        ("0" * 13 + "315360000001", "{value_too_large,315360000001}"),
        ("0" * 14 + "315360000001", "{value_too_large,\n" + " " * 50 + "315360000001}"),
    ],
)
def test_invalid_expiration(amqp_url, uid, expiration, detail):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"x", pika.BasicProperties(expiration=expiration))
        assert channel_error(lambda: ch.basic_get(uid)) == (
            406,
            f"PRECONDITION_FAILED - invalid expiration '{expiration}': {detail}",
        )


@pytest.mark.parametrize("expiration", ["+5", "00100", "315360000000"])
def test_unusual_but_valid_expirations(amqp_url, uid, expiration):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"x", pika.BasicProperties(expiration=expiration))
        assert ch.basic_get(uid, auto_ack=True)[1].expiration == expiration


# ---------------------------------------------------------------------- queue expiry
def routable(ch: Any, queue: str) -> bool:
    """Is there a queue by that name? Asked with a mandatory publish, because a declare, even
    a passive one, counts as use and restarts the expiry countdown."""
    returned: list[bool] = []
    ch.add_on_return_callback(lambda *args: returned.append(True))
    try:
        ch.basic_publish("", queue, b"probe", mandatory=True)
    except pika.exceptions.UnroutableError:
        return False
    ch.connection.process_data_events(0)
    return not returned


def test_unused_queue_expires(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, arguments={"x-expires": 100})
        assert routable(ch, uid)  # messages do not keep it alive
        wait_until(lambda: not routable(ch, uid))


async def test_queue_with_a_consumer_does_not_expire(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid, arguments={"x-expires": 100})

        async def ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            return None

        tag = await queue.consume(ignore)
        await asyncio.sleep(0.25)  # more than twice the expiry, with a consumer
        with channel(amqp_url, confirm=True) as probe:
            assert routable(probe, uid)
            await queue.cancel(tag)
            deadline = time.monotonic() + 5
            while routable(probe, uid):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)


# ---------------------------------------------------------------------- length limits
def test_max_length_drops_the_oldest(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-max-length": 2})
        for body in (b"1", b"2", b"3"):
            ch.basic_publish("", uid, body)  # drop-head: confirms are all acks
        assert bodies(ch, uid) == [b"2", b"3"]


def test_max_length_bytes_drops_the_oldest(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-max-length-bytes": 10})
        for body in (b"aaaa", b"bbbb", b"cc", b"dddd"):
            ch.basic_publish("", uid, body)
        assert bodies(ch, uid) == [b"bbbb", b"cc", b"dddd"]


def test_max_length_counts_ready_messages_only(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-max-length": 1})
        ch.basic_publish("", uid, b"1")
        method, _props, _body = ch.basic_get(uid)  # unacked: no longer counts
        ch.basic_publish("", uid, b"2")
        assert ready(ch, uid) == 1
        ch.basic_ack(method.delivery_tag)


def test_reject_publish_nacks_confirmed_publishes(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(
            uid, exclusive=True, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
        )
        ch.basic_publish("", uid, b"1")
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("", uid, b"2")
        assert bodies(ch, uid) == [b"1"]
        ch.basic_publish("", uid, b"3")  # room again
        assert bodies(ch, uid) == [b"3"]


async def test_reject_publish_with_aiormq_and_without_confirms(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        args = {"x-max-length-bytes": 3, "x-overflow": "reject-publish"}
        await ch.queue_declare(uid, exclusive=True, arguments=args)
        assert isinstance(await ch.basic_publish(b"abc", routing_key=uid), commands.Basic.Ack)
        with pytest.raises(aiormq.exceptions.DeliveryError) as info:
            await ch.basic_publish(b"d", routing_key=uid)
        assert isinstance(info.value.frame, commands.Basic.Nack)
        plain = await conn.channel(publisher_confirms=False)
        await plain.basic_publish(b"e", routing_key=uid)  # dropped silently
        declared = await plain.queue_declare(uid, passive=True)
        assert declared.message_count == 1
        got = await plain.basic_get(uid, no_ack=True)
        assert got.body == b"abc"
    finally:
        await conn.close()


def test_reject_publish_ignores_other_queues(amqp_url, uid):
    """A message routed to a full reject-publish queue and to another queue is nacked, and
    still delivered to the other queue."""
    with channel(amqp_url, confirm=True) as ch:
        full = uid + "-full"
        ch.queue_declare(
            full, exclusive=True, arguments={"x-max-length": 0, "x-overflow": "reject-publish"}
        )
        ch.queue_declare(uid, exclusive=True)
        for queue in (full, uid):
            ch.queue_bind(queue, "amq.fanout")
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("amq.fanout", "", b"m")
        assert (bodies(ch, full), bodies(ch, uid)) == ([], [b"m"])


# ---------------------------------------------------------------------- priorities
def test_priority_queue_delivers_higher_priorities_first(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-max-priority": 5})
        for body, priority in ((b"p0", None), (b"p3", 3), (b"p9", 9), (b"p5", 5), (b"p3b", 3)):
            ch.basic_publish("", uid, body, pika.BasicProperties(priority=priority))
        first = ch.basic_get(uid)[0]
        second = ch.basic_get(uid)[0]
        ch.basic_nack(first.delivery_tag, multiple=False, requeue=True)
        ch.basic_nack(second.delivery_tag, multiple=False, requeue=True)
        # above the maximum counts as the maximum: p9 and p5 share the top level, in order
        wait_until(lambda: ready(ch, uid) == 5)
        assert bodies(ch, uid) == [b"p9", b"p5", b"p3", b"p3b", b"p0"]


def test_priorities_are_ignored_without_x_max_priority(amqp_url, uid):
    with channel(amqp_url, confirm=True) as ch:
        ch.queue_declare(uid, exclusive=True)
        for body, priority in ((b"a", 1), (b"b", 9), (b"c", 5)):
            ch.basic_publish("", uid, body, pika.BasicProperties(priority=priority))
        assert bodies(ch, uid) == [b"a", b"b", b"c"]


# ---------------------------------------------------------------------- invalid values
INVALID = [
    ({"x-message-ttl": -1}, "x-message-ttl", "{value_negative,-1}"),
    ({"x-message-ttl": "100"}, "x-message-ttl", '"expected integer, got longstr"'),
    ({"x-message-ttl": True}, "x-message-ttl", '"expected integer, got bool"'),
    ({"x-message-ttl": 315360000001}, "x-message-ttl", "{value_too_large,315360000001}"),
    ({"x-expires": 0}, "x-expires", "{value_zero,0}"),
    ({"x-expires": -5}, "x-expires", "{value_negative,-5}"),
    ({"x-expires": "x"}, "x-expires", '"expected integer, got longstr"'),
    ({"x-max-length": -1}, "x-max-length", "{value_negative,-1}"),
    ({"x-max-length-bytes": "1"}, "x-max-length-bytes", '"expected integer, got longstr"'),
    ({"x-overflow": "bogus"}, "x-overflow", "invalid_overflow"),
    ({"x-overflow": 5}, "x-overflow", "{unacceptable_type,signedint}"),
    (
        {"x-dead-letter-routing-key": "k"},
        "x-dead-letter-routing-key",
        "routing_key_but_no_dlx_defined",
    ),
    (
        {"x-dead-letter-exchange": "x", "x-dead-letter-routing-key": 5},
        "x-dead-letter-routing-key",
        "{unacceptable_type,signedint}",
    ),
    ({"x-max-priority": -1}, "x-max-priority", "{value_negative,-1}"),
    ({"x-max-priority": 256}, "x-max-priority", "{max_value_exceeded,256}"),
    ({"x-max-priority": "5"}, "x-max-priority", '"expected integer, got longstr"'),
    ({"x-queue-mode": "bogus"}, "x-queue-mode", "\"unsupported queue mode 'bogus'\""),
    ({"x-queue-type": "bogus"}, "x-queue-type", "\"unsupported queue type 'bogus'\""),
    ({"x-queue-version": 3}, "x-queue-version", "\"unsupported queue version '3'\""),
    ({"x-single-active-consumer": 1}, "x-single-active-consumer", "{unacceptable_type,signedint}"),
    ({"x-expires": 0, "x-message-ttl": -1}, "x-expires", "{value_zero,0}"),
    ({"x-message-ttl": -1, "x-expires": 0}, "x-expires", "{value_zero,0}"),
]


@pytest.mark.parametrize(("arguments", "key", "detail"), INVALID)
def test_invalid_arguments_pika(amqp_url, uid, arguments, key, detail):
    with channel(amqp_url) as ch:
        assert channel_error(
            lambda: ch.queue_declare(uid, exclusive=True, arguments=arguments)
        ) == (
            406,
            f"PRECONDITION_FAILED - invalid arg '{key}' for queue '{uid}' in vhost '/': {detail}",
        )


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        (
            {"x-max-length": 1.5},
            "invalid arg 'x-max-length' for {q}: \"expected integer, got float\"",
        ),
        ({"x-overflow": 1}, "invalid arg 'x-overflow' for {q}: {unacceptable_type,byte}"),
        (
            {"x-dead-letter-exchange": 5, "x-expires": 0},
            "invalid type 'byte' for arg 'x-dead-letter-exchange' in {q}",
        ),
        (
            {"x-max-in-memory-length": -1},
            "invalid arg 'x-max-in-memory-length' for {q} of queue type rabbit_classic_queue",
        ),
        (
            {"x-max-age": "1D", "x-max-priority": "x"},
            "invalid arg 'x-max-priority' for {q}: \"expected integer, got longstr\"",
        ),
        (
            {"x-delivery-limit": 5},
            "invalid arg 'x-delivery-limit' for {q} of queue type rabbit_classic_queue",
        ),
    ],
)
async def test_invalid_arguments_aiormq(amqp_url, uid, arguments, text):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
            await ch.queue_declare(uid, exclusive=True, arguments=arguments)
        assert info.value.args[0] == "PRECONDITION_FAILED - " + text.replace(
            "{q}", f"queue '{uid}' in vhost '/'"
        )
    finally:
        await conn.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"x-message-ttl": 0},
        {"x-message-ttl": 315360000000},
        {"x-max-priority": 0},
        {"x-max-priority": 255},
        {"x-dead-letter-exchange": ""},
        {"x-overflow": "reject-publish-dlx"},
        {"x-queue-mode": "lazy", "x-queue-version": 2, "x-queue-type": "classic"},
        {"x-custom-argument": [1, "a", {"b": None}]},
    ],
)
def test_valid_edge_values(amqp_url, uid, arguments):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True, arguments=arguments)
