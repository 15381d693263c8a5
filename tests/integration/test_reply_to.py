"""Direct reply-to (amq.rabbitmq.reply-to) RPC and its errors. Run against rabbitish and a real
RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import re

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

from tests.support.clients import blocking_connection as _pika
from tests.support.clients import pika_wait as _wait

REPLY_TO = "amq.rabbitmq.reply-to"
# amq.rabbitmq.reply-to.<base64 of the channel's Erlang pid>.<base64 of a 16-byte key>
REPLY_NAME = re.compile(r"amq\.rabbitmq\.reply-to\.[A-Za-z0-9+/]+={0,2}\.[A-Za-z0-9+/]{22}==")


async def test_rpc_with_aio_pika_requester_and_aiormq_responder(amqp_url, uid):
    responder = await aiormq.connect(amqp_url)
    try:
        server = await responder.channel()
        await server.queue_declare(uid, exclusive=True)
        seen_reply_to: list[str] = []

        async def serve(message: aiormq.abc.DeliveredMessage) -> None:
            reply_to = message.header.properties.reply_to
            seen_reply_to.append(reply_to)
            await server.basic_publish(
                message.body.upper(),
                routing_key=reply_to,
                properties=aiormq.spec.Basic.Properties(
                    correlation_id=message.header.properties.correlation_id
                ),
            )

        await server.basic_consume(uid, serve, no_ack=True)

        async with await aio_pika.connect(amqp_url) as conn:
            ch = await conn.channel()
            replies = await ch.get_queue(REPLY_TO, ensure=False)
            answers: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
            await replies.consume(answers.put, no_ack=True)
            for n in range(3):
                await ch.default_exchange.publish(
                    aio_pika.Message(b"ping %d" % n, correlation_id=f"c{n}", reply_to=REPLY_TO),
                    routing_key=uid,
                )
                answer = await asyncio.wait_for(answers.get(), 5)
                assert (answer.body, answer.correlation_id) == (b"PING %d" % n, f"c{n}")
                assert answer.exchange == ""
                assert answer.routing_key == seen_reply_to[-1]
                assert answer.redelivered is False
        assert REPLY_NAME.fullmatch(seen_reply_to[0]), seen_reply_to[0]
        assert len(set(seen_reply_to)) == 1  # one name per consuming channel
    finally:
        await responder.close()


def test_rpc_with_pika_on_both_sides(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        client = conn.channel()
        answers: list[tuple[str, bytes]] = []
        client.basic_consume(
            REPLY_TO, lambda c, m, p, b: answers.append((p.correlation_id, b)), auto_ack=True
        )
        client.basic_publish(
            "", uid, b"question", pika.BasicProperties(reply_to=REPLY_TO, correlation_id="q1")
        )
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        _method, props, body = server.basic_get(uid, auto_ack=True)
        assert body == b"question"
        assert REPLY_NAME.fullmatch(props.reply_to), props.reply_to
        server.basic_publish(
            "", props.reply_to, b"answer", pika.BasicProperties(correlation_id="q1")
        )
        _wait(lambda: answers, conn)
        assert answers == [("q1", b"answer")]
    finally:
        conn.close()


def test_consuming_reply_to_with_acks_is_refused_406(amqp_url):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume(REPLY_TO, lambda *a: None, auto_ack=False)
        assert info.value.reply_code == 406
        assert info.value.reply_text == "PRECONDITION_FAILED - reply consumer cannot acknowledge"
        assert conn.is_open
    finally:
        conn.close()


def test_publishing_with_reply_to_without_consuming_is_refused_406(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"x", pika.BasicProperties(reply_to=REPLY_TO))
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_qos(prefetch_count=1)
        assert info.value.reply_code == 406
        assert info.value.reply_text == "PRECONDITION_FAILED - fast reply consumer does not exist"
        # the refused message was not enqueued
        assert conn.channel().queue_declare(uid, passive=True).method.message_count == 0
    finally:
        conn.close()


def test_consuming_reply_to_twice_on_a_channel_is_refused_406(amqp_url):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)
        conn.channel().basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)  # other channel
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)
        assert info.value.reply_code == 406
        assert info.value.reply_text == "PRECONDITION_FAILED - reply consumer already set"
    finally:
        conn.close()


def test_replies_after_cancel_are_dropped_and_mandatory_ones_returned(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        returned: list[bytes] = []
        server.add_on_return_callback(lambda c, m, p, b: returned.append(b))
        client = conn.channel()
        answers: list[bytes] = []
        tag = client.basic_consume(REPLY_TO, lambda c, m, p, b: answers.append(b), auto_ack=True)
        client.basic_publish("", uid, b"q", pika.BasicProperties(reply_to=REPLY_TO))
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        reply_to = server.basic_get(uid, auto_ack=True)[1].reply_to
        client.basic_cancel(tag)
        server.basic_publish("", reply_to, b"dropped")
        server.basic_publish("", reply_to, b"returned", mandatory=True)
        _wait(lambda: returned, conn)
        assert returned == [b"returned"]
        assert answers == []
        # publishing with reply_to now fails again: the reply consumer is gone
        client.basic_publish("", uid, b"q2", pika.BasicProperties(reply_to=REPLY_TO))
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            client.basic_qos(prefetch_count=1)
        assert info.value.reply_text == "PRECONDITION_FAILED - fast reply consumer does not exist"
    finally:
        conn.close()


def test_mandatory_reply_is_delivered_and_also_returned(amqp_url, uid):
    # RabbitMQ 3.10 never counts a direct reply-to publish as routed.
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        returned: list[tuple[int, str, bytes]] = []
        server.add_on_return_callback(
            lambda c, m, p, b: returned.append((m.reply_code, m.routing_key, b))
        )
        client = conn.channel()
        answers: list[bytes] = []
        client.basic_consume(REPLY_TO, lambda c, m, p, b: answers.append(b), auto_ack=True)
        client.basic_publish("", uid, b"q", pika.BasicProperties(reply_to=REPLY_TO))
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        reply_to = server.basic_get(uid, auto_ack=True)[1].reply_to
        server.basic_publish("", reply_to, b"answer", mandatory=True)
        _wait(lambda: answers and returned, conn)
        assert answers == [b"answer"]
        assert returned == [(312, reply_to, b"answer")]
    finally:
        conn.close()


def test_reply_to_a_closed_requester_is_dropped(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        requester = _pika(amqp_url)
        client = requester.channel()
        client.basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)
        client.basic_publish("", uid, b"q", pika.BasicProperties(reply_to=REPLY_TO))
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        reply_to = server.basic_get(uid, auto_ack=True)[1].reply_to
        requester.close()
        server.basic_publish("", reply_to, b"nobody listens")
        server.basic_qos(prefetch_count=1)  # the responder's channel is unaffected
        assert server.is_open
    finally:
        conn.close()


def test_reply_in_a_transaction_is_delivered_at_once_and_returned_at_commit(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        returned: list[bytes] = []
        server.add_on_return_callback(lambda c, m, p, b: returned.append(b))
        client = conn.channel()
        answers: list[bytes] = []
        client.basic_consume(REPLY_TO, lambda c, m, p, b: answers.append(b), auto_ack=True)
        client.basic_publish("", uid, b"q", pika.BasicProperties(reply_to=REPLY_TO))
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        reply_to = server.basic_get(uid, auto_ack=True)[1].reply_to
        server.tx_select()
        server.basic_publish("", reply_to, b"answer", mandatory=True)
        _wait(lambda: answers, conn)
        assert (answers, returned) == ([b"answer"], [])
        server.tx_commit()
        _wait(lambda: returned, conn)
        assert returned == [b"answer"]
    finally:
        conn.close()


def test_passive_declare_of_reply_to_names(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        server = conn.channel()
        server.queue_declare(uid, exclusive=True)
        client = conn.channel()
        client.basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)
        client.basic_publish("", uid, b"q", pika.BasicProperties(reply_to=REPLY_TO))
        _wait(lambda: server.queue_declare(uid, passive=True).method.message_count == 1, conn)
        reply_to = server.basic_get(uid, auto_ack=True)[1].reply_to
        for name in (REPLY_TO, reply_to):
            ok = server.queue_declare(name, passive=True).method
            assert (ok.queue, ok.message_count, ok.consumer_count) == (name, 0, 1)
        missing = f"{REPLY_TO}.{uid}"
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            server.queue_declare(missing, passive=True)
        assert info.value.reply_code == 404
        assert info.value.reply_text == f"NOT_FOUND - no queue '{missing}' in vhost '/'"
    finally:
        if conn.is_open:
            conn.close()
