"""kombu over the pyamqp transport (py-amqp), as Celery uses it: Connection, Exchange, Queue,
Producer, Consumer and SimpleQueue. Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import socket

import kombu
import pytest
from kombu import Consumer, Exchange, Producer, Queue


def _connection(url: str) -> kombu.Connection:
    # amqp://... selects the py-amqp transport; say so explicitly
    return kombu.Connection(url.replace("amqp://", "pyamqp://", 1), connect_timeout=5)


def test_producer_and_consumer_through_a_direct_exchange(amqp_url, uid):
    exchange = Exchange(f"{uid}-x", type="direct", auto_delete=True)
    queue = Queue(f"{uid}-q", exchange, routing_key="tasks", auto_delete=True)
    received: list[tuple[object, dict]] = []
    with _connection(amqp_url) as conn, Consumer(conn, queues=[queue], accept=["json"]) as consumer:

        def on_message(body, message) -> None:
            received.append((body, dict(message.headers)))
            message.ack()

        consumer.register_callback(on_message)
        producer = Producer(conn)
        for i in range(5):
            producer.publish(
                {"task": "add", "args": [i, i]},
                exchange=exchange,
                routing_key="tasks",
                serializer="json",
                headers={"attempt": i},
                declare=[queue],
            )
        while len(received) < 5:
            conn.drain_events(timeout=5)
    assert [body for body, _h in received] == [{"task": "add", "args": [i, i]} for i in range(5)]
    assert [h["attempt"] for _b, h in received] == list(range(5))


def test_simple_queue_put_get_and_requeue(amqp_url, uid):
    with _connection(amqp_url) as conn:
        queue = conn.SimpleQueue(uid, queue_opts={"auto_delete": True})
        try:
            queue.put({"n": 1})
            queue.put("two", serializer="json")
            first = queue.get(block=True, timeout=5)
            assert first.payload == {"n": 1}
            first.requeue()
            # "two" was already delivered to the client's buffer; the requeued one comes next
            second = queue.get(block=True, timeout=5)
            assert second.payload == "two"
            assert second.delivery_info["redelivered"] is False
            second.ack()
            again = queue.get(block=True, timeout=5)
            assert again.payload == {"n": 1}
            assert again.delivery_info["redelivered"] is True
            again.ack()
            with pytest.raises(queue.Empty):
                queue.get(block=True, timeout=0.1)
        finally:
            queue.close()


def test_binary_payload_and_properties(amqp_url, uid):
    body = bytes(range(256)) * 1024  # larger than one frame
    with _connection(amqp_url) as conn:
        queue = conn.SimpleQueue(uid, queue_opts={"auto_delete": True})
        try:
            queue.put(
                body,
                serializer=None,
                content_type="application/octet-stream",
                content_encoding="binary",
                priority=3,
                correlation_id="corr-1",
            )
            message = queue.get(block=True, timeout=5)
            assert message.body == body
            assert message.content_type == "application/octet-stream"
            assert message.properties["priority"] == 3
            assert message.properties["correlation_id"] == "corr-1"
            message.ack()
        finally:
            queue.close()


def test_consumer_prefetch_and_cancel(amqp_url, uid):
    queue = Queue(uid, auto_delete=False, durable=False)
    with _connection(amqp_url) as conn:
        channel = conn.channel()
        try:
            bound = queue(channel)
            bound.declare()
            producer = Producer(channel)
            for i in range(4):
                producer.publish(i, routing_key=uid, serializer="json")
            held = []
            consumer = Consumer(channel, queues=[queue], prefetch_count=2, accept=["json"])
            consumer.register_callback(lambda body, message: held.append(message))
            with consumer:
                while len(held) < 2:
                    conn.drain_events(timeout=5)
                with pytest.raises(socket.timeout):
                    conn.drain_events(timeout=0.1)  # the prefetch window is full
                assert len(held) == 2
                held[0].ack()
                while len(held) < 3:
                    conn.drain_events(timeout=5)
            # leaving the block cancelled the consumer: 0 was acked, 1 and 2 are still held
            assert [m.payload for m in held] == [0, 1, 2]
        finally:
            channel.close()
        with _connection(amqp_url) as other:
            ch = other.channel()
            _name, ready, _consumers = ch.queue_declare(uid, passive=True)
            assert ready == 3  # 1 and 2 requeued when the channel closed, plus 3
            ch.queue_delete(uid)
