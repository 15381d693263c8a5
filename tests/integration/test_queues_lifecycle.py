"""Queue lifecycle: exclusive queues locked to their connection and deleted with it, auto-delete
queues, declare-ok counts, purge and delete (if-unused, if-empty). Every test runs against
rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

from typing import Any

import aio_pika
import aiormq
import aiormq.exceptions
import pytest

from tests.support.clients import channel_error
from tests.support.clients import pika_channel as channel
from tests.support.clients import pika_connection as connection
from tests.support.queues import LOCKED, queue_exists, short
from tests.support.waiting import wait_until

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
