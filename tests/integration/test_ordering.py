"""Requeued messages go back to their original position: after nack / reject with requeue,
basic.recover and closing a channel that holds unacked messages, a fresh consumer sees
publication order. Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import time

import aio_pika
import pika
import pytest

BODIES = [b"%d" % i for i in range(1, 11)]


class Session:
    def __init__(self, url: str, queue: str) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.queue = queue
        self.probe = self.conn.channel()
        self.probe.queue_declare(queue, exclusive=True)
        for body in BODIES:
            self.probe.basic_publish("", queue, body)

    def consumer(
        self, prefetch: int = 0
    ) -> tuple[pika.adapters.blocking_connection.BlockingChannel, list]:
        ch = self.conn.channel()
        if prefetch:
            ch.basic_qos(prefetch_count=prefetch)
        got: list[tuple[int, bytes, bool]] = []
        ch.basic_consume(
            self.queue,
            lambda c, m, p, b: got.append((m.delivery_tag, b, m.redelivered)),
            consumer_tag=f"c{ch.channel_number}",
        )
        return ch, got

    def until(self, predicate, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, "condition not met in time"
            self.conn.process_data_events(time_limit=0.02)

    def ready(self) -> int:
        return self.probe.queue_declare(self.queue, passive=True).method.message_count

    def drain_in_order(self) -> list[tuple[bytes, bool]]:
        """What a fresh consumer sees: (body, redelivered) for every message left."""
        expected = self.ready()
        ch, got = self.consumer()
        self.until(lambda: len(got) == expected)
        ch.basic_ack(delivery_tag=0, multiple=True)
        return [(body, redelivered) for _tag, body, redelivered in got]


@pytest.fixture
def session(amqp_url, uid):
    s = Session(amqp_url, uid)
    yield s
    if s.conn.is_open:
        s.conn.close()


def test_nack_reject_and_recover_restore_publication_order(session):
    ch, got = session.consumer()
    session.until(lambda: len(got) == 10)
    ch.basic_cancel(f"c{ch.channel_number}")  # keep requeued messages in the queue
    ch.basic_ack(delivery_tag=1)
    ch.basic_ack(delivery_tag=2)
    ch.basic_nack(delivery_tag=7, requeue=True)
    ch.basic_reject(delivery_tag=4, requeue=True)
    ch.basic_nack(delivery_tag=9, requeue=False)
    session.until(lambda: session.ready() == 2)
    ch.basic_recover(requeue=True)  # everything else the channel holds
    session.until(lambda: session.ready() == 7)
    assert session.drain_in_order() == [(b, True) for b in BODIES if b not in (b"1", b"2", b"9")]


def test_closing_a_channel_with_unacked_messages_restores_order(session):
    ch, got = session.consumer(prefetch=4)
    session.until(lambda: len(got) == 4)
    ch.basic_ack(delivery_tag=2)
    session.until(lambda: len(got) == 5)  # the freed credit brings 5
    ch.close()  # 1, 3, 4 and 5 go back in front of 6..10
    session.until(lambda: session.ready() == 9)
    assert session.drain_in_order() == [
        (b"1", True),
        (b"3", True),
        (b"4", True),
        (b"5", True),
        *[(b, False) for b in BODIES[5:]],
    ]


def test_two_consumers_requeue_into_original_positions(session):
    first, got_first = session.consumer(prefetch=2)
    second, got_second = session.consumer(prefetch=2)
    session.until(lambda: len(got_first) == 2 and len(got_second) == 2)
    held = sorted(b for _t, b, _r in got_first + got_second)
    assert held == [b"1", b"2", b"3", b"4"]
    second.close()
    session.until(lambda: session.ready() == 8)
    first.basic_nack(delivery_tag=0, multiple=True, requeue=True)
    # the head of the queue is now 1, 2 (both redelivered): that is what `first` gets again
    session.until(lambda: len(got_first) == 4)
    assert sorted(b for _t, b, _r in got_first[2:]) == [b"1", b"2"]
    assert all(r for _t, _b, r in got_first[2:])
    first.close()
    session.until(lambda: session.ready() == 10)
    assert session.drain_in_order() == [(b, b in (b"1", b"2", b"3", b"4")) for b in BODIES]


async def test_aio_pika_rejects_and_channel_close_keep_order(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        setup = await conn.channel()
        await setup.declare_queue(uid, exclusive=True)
        for body in BODIES:
            await setup.default_exchange.publish(aio_pika.Message(body), routing_key=uid)
        ch = await conn.channel()
        queue = await ch.get_queue(uid)
        held: list[aio_pika.abc.AbstractIncomingMessage] = []

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            held.append(message)

        tag = await queue.consume(on_message)
        deadline = time.monotonic() + 5
        while len(held) < 10:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        await queue.cancel(tag)
        for message in held[1::2]:  # 2, 4, 6, 8, 10 back to their places
            await message.reject(requeue=True)
        await ch.close()  # 1, 3, 5, 7, 9 too
        fresh = await conn.channel()
        order = []
        async with (await fresh.get_queue(uid)).iterator() as messages:
            async for message in messages:
                order.append((message.body, message.redelivered))
                await message.ack()
                if len(order) == 10:
                    break
        assert order == [(b, True) for b in BODIES]
