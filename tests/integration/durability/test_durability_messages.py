"""Persistent messages on durable queues survive a restart byte-exact (every property, sent as
raw frames) and in order, also when shared between queues. Restarts are in-process brokers
stopped and started again on the same data dir (open transactions and crashes of a real process:
test_group_commit.py)."""

from __future__ import annotations

import random

import aio_pika
from pamqp import commands

import rabbitish
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel as channel
from tests.support.raw_amqp import RawClient
from tests.support.raw_messages import content_header, raw_get, raw_publish


def test_persistent_message_bytes_survive_exactly(data, uid):
    """The content header (all properties, a table of many field types) and a multi-frame body
    come back byte for byte, from a direct publish and from one message routed to two queues."""
    fan, single, copies = f"{uid}-fan", f"{uid}-single", (f"{uid}-c1", f"{uid}-c2")
    body = random.Random(3).randbytes(300_000)
    header = content_header(len(body))
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.exchange_declare(fan, "fanout", durable=True)
        for queue in (single, *copies):
            ch.queue_declare(queue, durable=True)
        for queue in copies:
            ch.queue_bind(queue, fan)
        with RawClient(broker.url).open() as client:
            client.open_channel(1)
            client.send_method(1, commands.Confirm.Select())
            client.expect("Confirm.SelectOk")
            raw_publish(client, "", single, header, body)
            raw_publish(client, fan, "any", header, body)

    with running_broker(data_dir=data) as broker, RawClient(broker.url).open() as client:
        assert broker.recovery.messages == 3
        client.open_channel(1)
        for queue, exchange, key in ((single, "", single), *((q, fan, "any") for q in copies)):
            method, got_header, got_body = raw_get(client, queue)
            assert (method.exchange, method.routing_key) == (exchange, key)
            assert method.redelivered is False
            assert got_header == header
            assert got_body == body


async def test_order_across_queues_and_shared_messages(data, uid):
    """Interleaved publishes to three queues and to a fanout over all of them come back in
    order, with their properties, and the shared ones in every queue."""
    queues = [f"{uid}-{i}" for i in range(3)]
    fan = f"{uid}-fan"
    expected: dict[str, list[str]] = {q: [] for q in queues}
    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        fan_x = await ch.declare_exchange(fan, "fanout", durable=True)
        for queue in queues:
            await (await ch.declare_queue(queue, durable=True)).bind(fan_x)
        for i in range(400):
            target = i % 4
            message = aio_pika.Message(
                f"m{i}".encode(),
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                message_id=f"id{i}",
                headers={"i": i, "tag": "x" * (i % 7)},
                content_type="text/plain",
            )
            if target == 3:
                await fan_x.publish(message, "")
                for queue in queues:
                    expected[queue].append(f"m{i}")
            else:
                await ch.default_exchange.publish(message, queues[target])
                expected[queues[target]].append(f"m{i}")
        await conn.close()

    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        assert broker.recovery.messages == sum(len(v) for v in expected.values())
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        for queue in queues:
            got = []
            q = await ch.declare_queue(queue, durable=True)
            while (message := await q.get(no_ack=True, fail=False)) is not None:
                i = int(message.body[1:])
                assert message.message_id == f"id{i}"
                assert message.headers == {"i": i, "tag": "x" * (i % 7)}
                assert message.content_type == "text/plain"
                assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
                assert not message.redelivered
                got.append(message.body.decode())
            assert got == expected[queue]
        await conn.close()
