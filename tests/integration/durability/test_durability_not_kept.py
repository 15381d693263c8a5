"""What a restart must not keep or must change: transient things are gone, :memory: mode writes
nothing, delivered messages come back redelivered, purged, deleted and unbound stay so, and new
messages get new ids; dead-lettered persistent messages survive. Restarts are in-process brokers
stopped and started again on the same data dir (open transactions and crashes of a real process:
test_group_commit.py)."""

from __future__ import annotations

import asyncio
import os

import aio_pika
import pika
import pika.exceptions

import rabbitish
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel as channel
from tests.support.durability import PERSISTENT, TRANSIENT, bodies, drain, refused


# ---------------------------------------------------------------------- what does not survive
def test_transient_things_are_gone(data, uid):
    durable, transient_q, transient_x = f"{uid}-d", f"{uid}-tq", f"{uid}-tx"
    exclusive = f"{uid}-excl"
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.queue_declare(exclusive, durable=True, exclusive=True)
        ch.basic_publish("", exclusive, b"on an exclusive queue", PERSISTENT)
        ch.queue_declare(durable, durable=True)
        ch.queue_declare(transient_q, durable=False)
        ch.exchange_declare(transient_x, "fanout", durable=False)
        ch.queue_bind(durable, transient_x)  # a binding to a transient exchange
        ch.exchange_bind(transient_x, "amq.fanout")
        ch.basic_publish("", durable, b"p1", PERSISTENT)
        ch.basic_publish("", durable, b"t1", TRANSIENT)
        ch.basic_publish("", durable, b"no-mode", pika.BasicProperties())
        ch.basic_publish("", durable, b"p2", PERSISTENT)
        ch.basic_publish("", transient_q, b"persistent-on-transient", PERSISTENT)

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        assert (broker.recovery.queues, broker.recovery.messages) == (1, 2)
        assert broker.recovery.exchanges == broker.recovery.bindings == 0
        assert bodies(ch, durable) == [b"p1", b"p2"]
        for action in (
            lambda c: c.queue_declare(transient_q, passive=True),
            lambda c: c.exchange_declare(transient_x, passive=True),
            lambda c: c.queue_declare(exclusive, passive=True),
        ):
            assert refused(broker.url, action)[0] == 404
        ch.basic_publish("amq.fanout", "", b"x", PERSISTENT)
        assert bodies(ch, durable) == []


def test_memory_mode_keeps_nothing_and_writes_nothing(tmp_path, monkeypatch, uid):
    monkeypatch.chdir(tmp_path)
    with running_broker(data_dir=":memory:") as broker, channel(broker.url) as ch:
        assert broker.journal is None
        ch.exchange_declare(uid, "fanout", durable=True)
        ch.queue_declare(uid, durable=True)
        ch.queue_bind(uid, uid)
        ch.basic_publish(uid, "", b"gone", PERSISTENT)
    with running_broker(data_dir=":memory:") as broker:
        assert refused(broker.url, lambda c: c.queue_declare(uid, passive=True))[0] == 404
        assert refused(broker.url, lambda c: c.exchange_declare(uid, passive=True))[0] == 404
    assert os.listdir(tmp_path) == []


def test_unacked_come_back_redelivered_in_order_acked_do_not(data, uid):
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.queue_declare(uid, durable=True)
        for i in range(1, 7):
            ch.basic_publish("", uid, f"m{i}".encode(), PERSISTENT)
        tags = [ch.basic_get(uid)[0].delivery_tag for _ in range(4)]  # m1..m4, not acked
        ch.basic_ack(tags[1])  # m2 is done
        ch.basic_nack(tags[2], requeue=True)  # m3 back in place, already delivered once
        ch.queue_declare(uid, durable=True)  # a round trip: the ack and nack were handled
        # The broker stops with m1, m4 unacked on this open channel.

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        got = [(body, redelivered) for body, redelivered, _ in drain(ch, uid)]
        assert got == [
            (b"m1", True),
            (b"m3", True),
            (b"m4", True),
            (b"m5", False),
            (b"m6", False),
        ]


def test_purged_deleted_and_unbound_stay_so(data, uid):
    purged, deleted, kept, x, gone_x = (
        f"{uid}-{name}" for name in ("purged", "deleted", "kept", "x", "gone-x")
    )
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.exchange_declare(x, "fanout", durable=True)
        ch.exchange_declare(gone_x, "fanout", durable=True)
        for queue in (purged, deleted, kept):
            ch.queue_declare(queue, durable=True)
            ch.queue_bind(queue, x)
        ch.queue_bind(kept, gone_x)
        ch.exchange_bind(x, gone_x, "k")
        for i in range(3):
            ch.basic_publish(x, "", f"m{i}".encode(), PERSISTENT)
        assert ch.queue_purge(purged).method.message_count == 3
        ch.queue_delete(deleted)
        ch.exchange_delete(gone_x)
        ch.basic_publish(x, "", b"after", PERSISTENT)

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        assert (broker.recovery.exchanges, broker.recovery.queues) == (1, 2)
        assert broker.recovery.bindings == 2
        assert bodies(ch, purged) == [b"after"]
        assert bodies(ch, kept) == [b"m0", b"m1", b"m2", b"after"]
        assert refused(broker.url, lambda c: c.queue_declare(deleted, passive=True))[0] == 404
        assert refused(broker.url, lambda c: c.exchange_declare(gone_x, passive=True))[0] == 404
        ch.queue_declare(deleted, durable=True)  # a new, empty queue, bound to nothing
        ch.basic_publish(x, "", b"new", PERSISTENT)
        assert bodies(ch, deleted) == []


async def _count(queue: aio_pika.abc.AbstractQueue, wanted: int) -> int:
    """Poll a queue's message count until it is `wanted` (or 5 s pass)."""
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        count = (await queue.declare()).message_count
        if count == wanted or asyncio.get_running_loop().time() > deadline:
            return count
        await asyncio.sleep(0.01)


async def test_dead_lettered_persistent_messages_survive(data, uid):
    source, dlq = f"{uid}-src", f"{uid}-dlq"
    args = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}

    def message(i: int, expiration: float | None = None) -> aio_pika.Message:
        return aio_pika.Message(
            f"d{i}".encode(),
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            headers={"n": i},
            expiration=expiration,
        )

    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        dead = await ch.declare_queue(dlq, durable=True)
        queue = await ch.declare_queue(source, durable=True, arguments=args)
        await ch.default_exchange.publish(message(0, expiration=0.05), source)
        assert await _count(dead, 1) == 1  # expired at the head after 50 ms
        for i in (1, 2):
            await ch.default_exchange.publish(message(i), source)
        for _ in range(2):
            await (await queue.get(timeout=5)).reject(requeue=False)
        assert await _count(dead, 3) == 3
        await conn.close()

    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        dead = await ch.declare_queue(dlq, durable=True)
        got = []
        while (msg := await dead.get(no_ack=True, fail=False)) is not None:
            death = msg.headers["x-death"][0]
            got.append((msg.body, msg.headers["n"], death["reason"], death["queue"]))
            assert msg.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
            assert msg.expiration is None  # removed by dead-lettering, as RabbitMQ does
        assert got == [
            (b"d0", 0, "expired", source),
            (b"d1", 1, "rejected", source),
            (b"d2", 2, "rejected", source),
        ]
        queue = await ch.declare_queue(source, durable=True, arguments=args)
        assert (await queue.declare()).message_count == 0
        await conn.close()


def test_new_messages_after_restarts_get_new_ids(data, uid):
    """Publish, restart, publish, restart: message ids of new messages must not collide with
    recovered ones (a collision would swap bodies or lose a message shared by two queues)."""
    fan, first, second = f"{uid}-fan", f"{uid}-1", f"{uid}-2"
    expected: dict[str, list[bytes]] = {first: [], second: []}
    for run in range(3):
        with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
            ch.exchange_declare(fan, "fanout", durable=True)
            for queue in (first, second):
                ch.queue_declare(queue, durable=True)
                ch.queue_bind(queue, fan)
            assert broker.recovery.messages == sum(len(v) for v in expected.values())
            if run == 1:  # ack the oldest copy in one queue: the other copy must stay
                method, _, body = ch.basic_get(first)
                assert body == b"r0-0"
                ch.basic_ack(method.delivery_tag)
                expected[first].pop(0)
            for i in range(5):
                body = f"r{run}-{i}".encode()
                ch.basic_publish(fan, "", body, PERSISTENT)
                ch.basic_publish("", second, body + b"-only", PERSISTENT)
                expected[first].append(body)
                expected[second] += [body, body + b"-only"]
            ch.queue_declare(first, durable=True)  # round trip: every publish was handled
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        assert bodies(ch, first) == expected[first]
        assert bodies(ch, second) == expected[second]
