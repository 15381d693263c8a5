"""basic.get: get-ok with message_count, get-empty, no-ack and acknowledged gets, redelivered
flag, delivery tags shared with consumers, a missing queue. Run against rabbitish and a real
RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import time

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

from tests.support.clients import blocking_connection as _pika


async def test_get_ok_counts_the_messages_left_and_get_empty_when_drained(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, exclusive=True)
        empty = await ch.basic_get(uid)
        assert isinstance(empty.delivery, aiormq.spec.Basic.GetEmpty)
        for i in range(3):
            await ch.basic_publish(b"m%d" % i, routing_key=uid)
        seen = []
        for expected_left in (2, 1, 0):
            got = await ch.basic_get(uid, no_ack=True)
            assert isinstance(got.delivery, aiormq.spec.Basic.GetOk)
            assert got.delivery.message_count == expected_left
            assert (got.delivery.exchange, got.delivery.routing_key) == ("", uid)
            assert got.delivery.redelivered is False
            seen.append(got.body)
        assert seen == [b"m0", b"m1", b"m2"]
        assert isinstance((await ch.basic_get(uid)).delivery, aiormq.spec.Basic.GetEmpty)
    finally:
        await conn.close()


async def test_get_with_ack_holds_the_message_until_acked(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid, exclusive=True)
        await ch.default_exchange.publish(aio_pika.Message(b"one"), routing_key=uid)
        await ch.default_exchange.publish(aio_pika.Message(b"two"), routing_key=uid)
        first = await queue.get(no_ack=False)
        assert first.body == b"one"
        assert first.delivery_tag == 1
        # unacked messages are not counted in message_count
        assert (await ch.declare_queue(uid, passive=True)).declaration_result.message_count == 1
        await first.reject(requeue=True)
        again = await queue.get(no_ack=False)
        assert (again.body, again.redelivered, again.delivery_tag) == (b"one", True, 2)
        await again.ack()
        second = await queue.get(no_ack=True)
        assert (second.body, second.redelivered) == (b"two", False)
        assert await queue.get(fail=False) is None


def test_get_and_consume_share_the_channel_delivery_tags(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        for i in range(3):
            ch.basic_publish("", uid, b"%d" % i)
        method, _props, body = ch.basic_get(uid)
        assert (method.delivery_tag, body, method.message_count) == (1, b"0", 2)
        delivered = []
        ch.basic_consume(uid, lambda c, m, p, b: delivered.append((m.delivery_tag, b)))
        deadline = time.monotonic() + 5
        while len(delivered) < 2:
            assert time.monotonic() < deadline, "deliveries did not arrive"
            conn.process_data_events(time_limit=0.05)
        assert delivered == [(2, b"1"), (3, b"2")]
        ch.basic_ack(delivery_tag=3, multiple=True)  # acks the get and both deliveries
        assert ch.queue_declare(uid, passive=True).method.message_count == 0
    finally:
        conn.close()


def test_unacked_get_returns_to_the_queue_when_the_channel_closes(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"kept")
        method, _props, _body = ch.basic_get(uid)
        assert method.redelivered is False
        ch.close()
        ch = conn.channel()
        method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert (body, method.redelivered, method.delivery_tag) == (b"kept", True, 1)
    finally:
        conn.close()


def test_get_from_a_missing_queue_404(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_get(f"{uid}-missing")
        assert info.value.reply_code == 404
        assert info.value.reply_text == f"NOT_FOUND - no queue '{uid}-missing' in vhost '/'"
        assert conn.is_open
    finally:
        conn.close()
