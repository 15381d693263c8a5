"""RabbitMQ 4.0's x-local-random exchange over 0-9-1 (rabbitish serves it on both protocols;
the 1.0 side is in tests/bridge/test_rabbitmq4_client.py): one bound queue per message, the
routing key ignored, RabbitMQ 4's binding refusals. RabbitMQ 3.10 does not know the type."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from tests.support.clients import channel_error, pika_connection


def test_each_message_reaches_exactly_one_bound_queue(broker_url, uid):
    queues = [f"{uid}-{n}" for n in range(3)]
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(uid, "x-local-random", auto_delete=True)
        for queue in queues:
            ch.queue_declare(queue, exclusive=True)
            ch.queue_bind(queue, uid, routing_key="")
        for n in range(60):
            ch.basic_publish(uid, f"key-{n}", f"m{n}".encode(), mandatory=True)
        counts = [ch.queue_declare(q, passive=True).method.message_count for q in queues]
        assert sum(counts) == 60
        # Each queue is chosen at least once (each misses all 60 with probability (2/3)**60).
        assert all(counts)


@pytest.mark.parametrize(
    ("queue_arguments", "key", "text"),
    [
        ({}, "k", "PRECONDITION_FAILED - Non empty binding 'k' key not permitted"),
        (
            {"x-queue-type": "quorum"},
            "",
            "PRECONDITION_FAILED - Queue type rabbit_quorum_queue not valid for this exchange type",
        ),
    ],
)
def test_bindings_rabbitmq_4_refuses(broker_url, uid, queue_arguments, key, text):
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.exchange_declare(uid, "x-local-random", auto_delete=True)
        ch.queue_declare(uid, durable=True, arguments=queue_arguments)
        assert channel_error(lambda: ch.queue_bind(uid, uid, key)) == (406, text)
        ch = conn.channel()
        ch.queue_delete(uid)
        ch.exchange_delete(uid)


def test_an_exchange_is_no_destination(broker_url, uid):
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.exchange_declare(uid, "x-local-random", auto_delete=True)
        ch.exchange_declare(f"{uid}-dst", "fanout", auto_delete=True)
        assert channel_error(lambda: ch.exchange_bind(f"{uid}-dst", uid, "")) == (
            406,
            "PRECONDITION_FAILED - Destination not found",
        )


@pytest.mark.rabbitmq
def test_rabbitmq_3_10_does_not_know_the_type(rabbitmq_url, uid):
    """Why the differential tests of unknown exchange types use other names."""
    with (
        pika_connection(rabbitmq_url) as conn,
        pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info,
    ):
        conn.channel().exchange_declare(uid, "x-local-random")
    assert (info.value.reply_code, info.value.reply_text) == (
        503,
        "COMMAND_INVALID - unknown exchange type 'x-local-random'",
    )
