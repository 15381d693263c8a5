"""Queue and exchange bindings: errors, idempotent bind and unbind, exchange-to-exchange chains and
cycles, and auto-delete exchanges that go with their last binding. Every test
runs against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import aio_pika
import pytest

from tests.support.clients import bodies, channel_error, temp_queue
from tests.support.clients import pika_channel as channel


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
