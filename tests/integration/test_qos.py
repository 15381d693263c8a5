"""basic.qos: per-consumer (global=false) and per-channel (global=true) prefetch, both at once,
changes taking effect, prefetch_size. A limit is proven by accounting: when a consumer holds N
deliveries and the queue still has the rest ready, nothing is in flight. Run against rabbitish and
a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import time

import aio_pika
import pika
import pika.exceptions
import pytest


class Channel:
    """A pika connection with one queue of `count` messages and consumers recording deliveries."""

    def __init__(self, url: str, queue: str, count: int) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self.conn.channel()
        self.probe = self.conn.channel()
        self.queue = queue
        self.ch.queue_declare(queue, exclusive=True)
        for i in range(count):
            self.ch.basic_publish("", queue, b"%d" % i)
        self.got: dict[str, list[int]] = {}

    def consume(self, tag: str) -> None:
        self.got[tag] = []
        self.ch.basic_consume(
            self.queue,
            lambda c, m, p, b: self.got[m.consumer_tag].append(m.delivery_tag),
            consumer_tag=tag,
        )

    def ready(self) -> int:
        return self.probe.queue_declare(self.queue, passive=True).method.message_count

    def counts(self) -> dict[str, int]:
        return {tag: len(tags) for tag, tags in self.got.items()}

    def settles_at(self, ready: int, timeout: float = 5.0, **held: int) -> None:
        """Wait until each consumer holds `held[tag]` deliveries (or all of them together hold
        `held["total"]`) and `ready` messages are left in the queue; then every message is
        accounted for, so the limit really stopped deliveries."""

        def holding() -> dict[str, int]:
            counts = self.counts()
            return {"total": sum(counts.values())} if "total" in held else counts

        deadline = time.monotonic() + timeout
        while True:
            self.conn.process_data_events(time_limit=0.02)
            if holding() == held and self.ready() == ready:
                break
            assert time.monotonic() < deadline, f"held {self.counts()}, ready {self.ready()}"
        self.conn.process_data_events(time_limit=0.05)
        assert holding() == held

    def close(self) -> None:
        if self.conn.is_open:
            self.conn.close()


@pytest.fixture
def channel(amqp_url, uid):
    made: list[Channel] = []

    def make(count: int) -> Channel:
        made.append(Channel(amqp_url, uid, count))
        return made[-1]

    yield make
    for c in made:
        c.close()


def test_per_consumer_prefetch_stops_and_resumes_on_ack(channel):
    c = channel(5)
    c.ch.basic_qos(prefetch_count=2)
    c.consume("a")
    c.settles_at(ready=3, a=2)
    c.ch.basic_ack(delivery_tag=1)
    c.settles_at(ready=2, a=3)
    c.ch.basic_nack(delivery_tag=3, multiple=True, requeue=False)
    c.settles_at(ready=0, a=5)


def test_per_consumer_prefetch_applies_to_each_consumer(channel):
    c = channel(6)
    c.ch.basic_qos(prefetch_count=1)
    c.consume("a")
    c.consume("b")
    c.settles_at(ready=4, a=1, b=1)
    c.ch.basic_ack(delivery_tag=c.got["b"][0])
    c.settles_at(ready=3, a=1, b=2)


def test_global_prefetch_is_shared_by_the_channel_consumers(channel):
    c = channel(6)
    c.ch.basic_qos(prefetch_count=3, global_qos=True)
    c.consume("a")
    c.consume("b")
    c.settles_at(ready=3, a=3, b=0)
    c.ch.basic_ack(delivery_tag=2, multiple=True)
    c.settles_at(ready=1, total=5)


def test_global_and_per_consumer_limits_together(channel):
    c = channel(8)
    c.ch.basic_qos(prefetch_count=2)  # per consumer
    c.ch.basic_qos(prefetch_count=3, global_qos=True)  # per channel
    c.consume("a")
    c.consume("b")
    c.settles_at(ready=5, a=2, b=1)
    c.ch.basic_ack(delivery_tag=c.got["b"][0])  # channel credit back: b may take one more
    c.settles_at(ready=4, a=2, b=2)
    c.ch.basic_ack(delivery_tag=c.got["a"][0])
    c.settles_at(ready=3, a=3, b=2)


def test_per_consumer_qos_after_global_drops_the_channel_limit(channel):
    # RabbitMQ's basic.qos(global=false) resets the channel-wide limit.
    c = channel(8)
    c.ch.basic_qos(prefetch_count=1, global_qos=True)
    c.ch.basic_qos(prefetch_count=2)
    c.consume("a")
    c.consume("b")
    c.settles_at(ready=4, a=2, b=2)


def test_raising_the_global_limit_takes_effect_at_once(channel):
    c = channel(6)
    c.ch.basic_qos(prefetch_count=1, global_qos=True)
    c.consume("a")
    c.settles_at(ready=5, a=1)
    c.ch.basic_qos(prefetch_count=3, global_qos=True)
    c.settles_at(ready=3, a=3)
    c.ch.basic_qos(prefetch_count=0, global_qos=True)  # 0 = no limit
    c.settles_at(ready=0, a=6)


def test_per_consumer_change_applies_to_new_consumers_only(channel):
    c = channel(8)
    c.ch.basic_qos(prefetch_count=1)
    c.consume("a")
    c.settles_at(ready=7, a=1)
    c.ch.basic_qos(prefetch_count=3)
    c.consume("b")
    c.settles_at(ready=4, a=1, b=3)


def test_basic_get_does_not_count_against_the_global_limit(channel):
    c = channel(4)
    c.ch.basic_qos(prefetch_count=1, global_qos=True)
    method, _props, _body = c.ch.basic_get(c.queue)
    assert method.delivery_tag == 1
    c.consume("a")
    c.settles_at(ready=2, a=1)


def test_no_ack_consumers_ignore_prefetch(channel):
    c = channel(5)
    c.ch.basic_qos(prefetch_count=1, global_qos=True)
    c.got["a"] = []
    c.ch.basic_consume(
        c.queue, lambda ch, m, p, b: c.got["a"].append(m.delivery_tag), auto_ack=True
    )
    c.settles_at(ready=0, a=5)


def test_prefetch_size_is_not_implemented_540(amqp_url):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        conn.channel().basic_qos(prefetch_size=1000, prefetch_count=1)
    assert info.value.reply_code == 540
    assert info.value.reply_text == "NOT_IMPLEMENTED - prefetch_size!=0 (1000)"


async def test_aio_pika_prefetch_window(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        await ch.set_qos(prefetch_count=3)
        queue = await ch.declare_queue(uid, exclusive=True)
        for i in range(10):
            await ch.default_exchange.publish(aio_pika.Message(b"%d" % i), routing_key=uid)
        held: list[aio_pika.abc.AbstractIncomingMessage] = []

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            held.append(message)

        await queue.consume(on_message)

        async def settles_at(count: int, ready: int) -> None:
            deadline = time.monotonic() + 5
            while True:
                declared = await ch.declare_queue(uid, passive=True)
                if len(held) == count and declared.declaration_result.message_count == ready:
                    return
                assert time.monotonic() < deadline, (len(held), ready)
                await asyncio.sleep(0.01)

        await settles_at(3, 7)
        await held[0].ack()
        await held[1].ack()
        await settles_at(5, 5)
        assert [m.body for m in held] == [b"0", b"1", b"2", b"3", b"4"]


def test_queues_blocked_on_the_global_limit_resume_in_turn(broker_url, uid):
    """When acks free channel credit, the blocked queues take turns: the first consumer's queue
    does not always win. (RabbitMQ resumes them in random order, so rabbitish only.)"""
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        ch = conn.channel()
        got: list[tuple[str, int]] = []
        for name in ("a", "b"):
            ch.queue_declare(f"{uid}-{name}", exclusive=True)
            for i in range(5):
                ch.basic_publish("", f"{uid}-{name}", b"%d" % i)
        ch.basic_qos(prefetch_count=2, global_qos=True)
        for name in ("a", "b"):
            ch.basic_consume(
                f"{uid}-{name}",
                lambda c, m, p, b, name=name: got.append((name, m.delivery_tag)),
                consumer_tag=name,
            )

        def wait_for(count: int) -> None:
            deadline = time.monotonic() + 5
            while len(got) < count and time.monotonic() < deadline:
                conn.process_data_events(0.05)
            assert len(got) == count

        wait_for(2)
        assert [name for name, _ in got] == ["a", "a"]
        for tag in range(1, 9):
            ch.basic_ack(tag)
            wait_for(tag + 2)
        after_acks = "".join(name for name, _ in got[2:])
        assert after_acks == "abababbb"
    finally:
        conn.close()
