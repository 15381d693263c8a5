"""The tx class beyond RabbitMQ's case list: aio-pika usage, ordering across requeue paths,
connection loss, and the atomic visibility of a commit across queues (a rabbitish guarantee)."""

from __future__ import annotations

import threading
import time

import aio_pika
import pika


async def test_aio_pika_transaction_commit_and_rollback(amqp_url, uid):
    connection = await aio_pika.connect(amqp_url)
    async with connection:
        channel = await connection.channel(publisher_confirms=False)
        queue = await channel.declare_queue(uid, auto_delete=True)
        async with channel.transaction():
            await channel.default_exchange.publish(aio_pika.Message(b"kept"), uid)
            assert (
                await channel.declare_queue(uid, passive=True)
            ).declaration_result.message_count == 0
        tx = channel.transaction()
        await tx.select()
        await channel.default_exchange.publish(aio_pika.Message(b"dropped"), uid)
        await tx.rollback()
        message = await queue.get(no_ack=True)
        assert message.body == b"kept"
        assert await queue.get(fail=False) is None


def test_order_kept_across_tx_requeue_recover_and_close(amqp_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.queue_declare(uid, auto_delete=False)
        for i in range(8):
            ch.basic_publish("", uid, str(i).encode())
        ch.tx_select()
        tags = [ch.basic_get(uid)[0].delivery_tag for _ in range(8)]
        ch.basic_nack(tags[5], requeue=True)  # staged
        ch.basic_reject(tags[1], requeue=True)  # staged
        ch.basic_ack(tags[0])  # staged
        ch.tx_commit()
        ch.basic_recover(requeue=True)  # 2,3,4,6,7 back, with 1 and 5 already there
        ch.close()
        ch = conn.channel()
        bodies = []
        while (got := ch.basic_get(uid, auto_ack=True))[0] is not None:
            bodies.append(got[2])
        assert bodies == [str(i).encode() for i in range(1, 8)]
        ch.queue_delete(uid)
    finally:
        conn.close()


def test_connection_loss_during_tx(amqp_url, uid):
    with pika.BlockingConnection(pika.URLParameters(amqp_url)) as setup:
        ch = setup.channel()
        ch.queue_declare(uid, auto_delete=False)
        for i in range(3):
            ch.basic_publish("", uid, str(i).encode())
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    ch.tx_select()
    first = ch.basic_get(uid)[0].delivery_tag
    ch.basic_get(uid)
    ch.basic_ack(first)  # acked but not committed
    ch.basic_publish("", uid, b"staged")
    conn.close()  # connection gone mid-transaction
    with pika.BlockingConnection(pika.URLParameters(amqp_url)) as check:
        ch = check.channel()
        bodies = []
        while (got := ch.basic_get(uid, auto_ack=True))[0] is not None:
            bodies.append((got[2], got[0].redelivered))
        ch.queue_delete(uid)
    assert bodies == [(b"0", True), (b"1", True), (b"2", False)]


def test_commit_is_atomic_across_queues(broker_url, uid):
    """A consumer of several queues never sees part of a commit: each commit's messages reach it
    together, before anything from a later commit. RabbitMQ does not promise this."""
    queues = [f"{uid}-{i}" for i in range(3)]
    commits, per_queue = 150, 2
    received: list[int] = []
    done = threading.Event()

    setup = pika.BlockingConnection(pika.URLParameters(broker_url))
    sch = setup.channel()
    for q in queues:
        sch.queue_declare(q, auto_delete=False)

    def consume() -> None:
        conn = pika.BlockingConnection(pika.URLParameters(broker_url))
        ch = conn.channel()

        def on_message(channel, method, props, body):
            received.append(int(body.split(b":")[0]))
            channel.basic_ack(method.delivery_tag)
            if len(received) == commits * per_queue * len(queues):
                channel.stop_consuming()

        for q in queues:
            ch.basic_consume(q, on_message)
        ready.set()
        ch.start_consuming()
        conn.close()
        done.set()

    ready = threading.Event()
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    assert ready.wait(10)
    pch = setup.channel()
    pch.tx_select()
    for c in range(commits):
        for q in queues:
            for k in range(per_queue):
                pch.basic_publish("", q, f"{c}:{q}:{k}".encode())
        pch.tx_commit()
    assert done.wait(30), f"only {len(received)} deliveries arrived"
    size = per_queue * len(queues)
    groups = [received[i : i + size] for i in range(0, len(received), size)]
    assert all(len(set(g)) == 1 for g in groups), "a commit's messages were interleaved"
    assert [g[0] for g in groups] == list(range(commits))
    for q in queues:
        sch.queue_delete(q)
    setup.close()


def test_staged_acks_hold_prefetch_credit_until_commit(amqp_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.queue_declare(uid, auto_delete=True)
        for i in range(3):
            ch.basic_publish("", uid, str(i).encode())
        ch.basic_qos(prefetch_count=1)
        ch.tx_select()
        deliveries = []
        ch.basic_consume(uid, lambda c, m, p, b: deliveries.append(m.delivery_tag))
        deadline = time.monotonic() + 5
        while not deliveries and time.monotonic() < deadline:
            conn.process_data_events(0.05)
        assert len(deliveries) == 1
        ch.basic_ack(deliveries[0])
        conn.process_data_events(0.2)
        assert len(deliveries) == 1  # the staged ack has not freed the credit yet
        ch.tx_commit()
        deadline = time.monotonic() + 5
        while len(deliveries) < 2 and time.monotonic() < deadline:
            conn.process_data_events(0.05)
        assert len(deliveries) == 2
    finally:
        conn.close()
