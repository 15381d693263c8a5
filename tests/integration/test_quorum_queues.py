"""Queue types over 0-9-1: which arguments a quorum queue or a stream accepts and refuses (with
RabbitMQ's texts), what a quorum queue must be (durable, not exclusive, not auto-delete, named
by the client), redeclare equivalence over its type's arguments, and the delivery limit (a
message returned more than x-delivery-limit times is dead-lettered with reason delivery_limit,
or dropped without a dead-letter exchange; deliveries carry x-delivery-count). Every test runs
against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.support.clients import channel_error, pika_wait
from tests.support.waiting import wait_until

QUORUM = {"x-queue-type": "quorum"}


@contextmanager
def channel(url: str, *cleanup: str) -> Iterator[Any]:
    """A confirming channel; the queues named in `cleanup` (durable on RabbitMQ) are deleted
    on exit, on a fresh channel."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        yield ch
    finally:
        if conn.is_open:
            conn.close()
        if cleanup:
            with pika.BlockingConnection(pika.URLParameters(url)) as again:
                tidy = again.channel()
                for name in cleanup:
                    tidy.queue_delete(name)


def ready(ch: Any, queue: str) -> int:
    return ch.queue_declare(queue, passive=True).method.message_count


def text(uid: str, template: str) -> str:
    return "PRECONDITION_FAILED - " + template.replace("{q}", f"queue '{uid}' in vhost '/'")


# ---------------------------------------------------------------------- declare
@pytest.mark.parametrize(
    "arguments",
    [
        {"x-quorum-initial-group-size": 5},
        {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"},
        {"x-dead-letter-strategy": "at-most-once", "x-dead-letter-exchange": "dlx"},
        {"x-overflow": "reject-publish-dlx"},  # accepted; a quorum queue drops the head
        {"x-queue-leader-locator": "balanced", "x-max-in-memory-length": 10},
        {"x-quorum-target-group-size": 5, "x-deliver-limit": 3},  # known to no queue type
        {"x-delivery-limit": "five"},  # any type: only an integer limits
        {"x-single-active-consumer": True, "x-expires": 60000, "x-message-ttl": 1000},
    ],
)
def test_quorum_queue_accepts_its_arguments(amqp_url, uid, arguments):
    with channel(amqp_url, uid) as ch:
        ch.queue_declare(uid, durable=True, arguments={**QUORUM, **arguments})
        ch.queue_declare(uid, durable=True, arguments={**QUORUM, **arguments})  # equivalent


@pytest.mark.parametrize(
    ("arguments", "template"),
    [
        (
            {**QUORUM, "x-max-priority": 5},
            "invalid arg 'x-max-priority' for {q} of queue type rabbit_quorum_queue",
        ),
        (
            {**QUORUM, "x-queue-mode": "lazy"},
            "invalid arg 'x-queue-mode' for {q} of queue type rabbit_quorum_queue",
        ),
        (
            {**QUORUM, "x-queue-version": 2},
            "invalid arg 'x-queue-version' for {q} of queue type rabbit_quorum_queue",
        ),
        (
            {**QUORUM, "x-max-age": "1D"},
            "invalid arg 'x-max-age' for {q} of queue type rabbit_quorum_queue",
        ),
        (
            {**QUORUM, "x-dead-letter-strategy": "bogus"},
            "invalid arg 'x-dead-letter-strategy' for {q}: invalid_dlx_strategy",
        ),
        (
            {**QUORUM, "x-dead-letter-strategy": 5},
            "invalid arg 'x-dead-letter-strategy' for {q}: {unacceptable_type,signedint}",
        ),
        (
            {**QUORUM, "x-quorum-initial-group-size": 0},
            "invalid arg 'x-quorum-initial-group-size' for {q}: {value_zero,0}",
        ),
        (
            {**QUORUM, "x-quorum-initial-group-size": "x"},
            "invalid arg 'x-quorum-initial-group-size' for {q}: \"expected integer, got longstr\"",
        ),
        (
            {**QUORUM, "x-queue-leader-locator": "bogus"},
            "invalid arg 'x-queue-leader-locator' for {q}: invalid_queue_locator_arg",
        ),
        (
            {**QUORUM, "x-max-in-memory-length": -1},
            "invalid arg 'x-max-in-memory-length' for {q}: {value_negative,-1}",
        ),
        (
            {**QUORUM, "x-single-active-consumer": "yes"},
            "invalid arg 'x-single-active-consumer' for {q}: {unacceptable_type,longstr}",
        ),
        (  # the argument checks come before the unsupported names
            {**QUORUM, "x-max-priority": 5, "x-message-ttl": "x"},
            "invalid arg 'x-message-ttl' for {q}: \"expected integer, got longstr\"",
        ),
        (  # the type is checked first
            {"x-message-ttl": "x", "x-queue-type": "bogus"},
            "invalid arg 'x-queue-type' for {q}: \"unsupported queue type 'bogus'\"",
        ),
        (
            {"x-queue-type": "stream", "x-message-ttl": 1000},
            "invalid arg 'x-message-ttl' for {q} of queue type rabbit_stream_queue",
        ),
        (
            {"x-queue-type": "stream", "x-max-age": "1X"},
            "invalid arg 'x-max-age' for {q}: invalid_max_age",
        ),
        (
            {"x-queue-leader-locator": "balanced"},
            "invalid arg 'x-queue-leader-locator' for {q} of queue type rabbit_classic_queue",
        ),
    ],
)
def test_arguments_refused_by_queue_type(amqp_url, uid, arguments, template):
    with channel(amqp_url, uid) as ch:
        code, reply = channel_error(
            lambda: ch.queue_declare(uid, durable=True, arguments=arguments)
        )
    assert (code, reply) == (406, text(uid, template))


@pytest.mark.parametrize(
    ("flags", "template"),
    [
        ({"durable": False}, "invalid property 'non-durable' for {q}"),
        ({"durable": True, "exclusive": True}, "invalid property 'exclusive-owner' for {q}"),
        ({"durable": True, "auto_delete": True}, "invalid property 'auto-delete' for {q}"),
        (
            {"durable": False, "exclusive": True, "auto_delete": True},
            "invalid property 'auto-delete' for {q}",
        ),
    ],
)
def test_quorum_queue_must_be_durable_shared_and_kept(amqp_url, uid, flags, template):
    with channel(amqp_url, uid) as ch:
        code, reply = channel_error(lambda: ch.queue_declare(uid, arguments=QUORUM, **flags))
    assert (code, reply) == (406, text(uid, template))


def test_quorum_queue_cannot_be_server_named(amqp_url):
    with channel(amqp_url) as ch:
        code, reply = channel_error(lambda: ch.queue_declare("", durable=True, arguments=QUORUM))
    assert (code, reply) == (
        406,
        "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_quorum_queue",
    )


@pytest.mark.parametrize(
    ("arguments", "template"),
    [
        (
            {**QUORUM, "x-delivery-limit": 4},
            "inequivalent arg 'x-delivery-limit' for {q}: received '4' but current is '3'",
        ),
        (
            {**QUORUM, "x-delivery-limit": 3, "x-dead-letter-strategy": "at-most-once"},
            "inequivalent arg 'x-dead-letter-strategy' for {q}: received the value "
            "'at-most-once' of type 'longstr' but current is none",
        ),
        (
            {"x-delivery-limit": 3},
            "inequivalent arg 'x-queue-type' for {q}: received none but current is the value "
            "'quorum' of type 'longstr'",
        ),
        (
            {"x-queue-type": "classic", "x-delivery-limit": 3},
            "inequivalent arg 'x-queue-type' for {q}: received 'classic' but current is 'quorum'",
        ),
        (
            {**QUORUM, "x-delivery-limit": 3, "x-queue-leader-locator": "balanced"},
            "inequivalent arg 'x-queue-leader-locator' for {q}: received the value 'balanced' "
            "of type 'longstr' but current is none",
        ),
    ],
)
def test_redeclare_compares_the_quorum_arguments(amqp_url, uid, arguments, template):
    with channel(amqp_url, uid) as ch:
        ch.queue_declare(uid, durable=True, arguments={**QUORUM, "x-delivery-limit": 3})
        code, reply = channel_error(
            lambda: ch.queue_declare(uid, durable=True, arguments=arguments)
        )
    assert (code, reply) == (406, text(uid, template))


# ---------------------------------------------------------------------- delivery limit
def test_delivery_limit_dead_letters_after_the_last_return(amqp_url, uid):
    """Limit 2: delivered three times (x-delivery-count 0, 1, 2 on basic.get), the third
    return dead-letters it with reason delivery_limit and no x-delivery-count."""
    dead, dlx = f"{uid}-dead", f"{uid}-dlx"
    with channel(amqp_url, uid, dead) as ch:
        ch.exchange_declare(dlx, "fanout", auto_delete=True)
        ch.queue_declare(dead, durable=True)
        ch.queue_bind(dead, dlx)
        ch.queue_declare(
            uid,
            durable=True,
            arguments={**QUORUM, "x-delivery-limit": 2, "x-dead-letter-exchange": dlx},
        )
        ch.basic_publish("", uid, b"m", pika.BasicProperties(headers={"h": 1}))
        seen = []
        for _ in range(3):
            method, props, _body = wait_until(lambda: _got(ch.basic_get(uid)))
            seen.append((method.redelivered, props.headers))
            ch.basic_nack(method.delivery_tag, requeue=True)
        assert seen == [
            (False, {"h": 1, "x-delivery-count": 0}),
            (True, {"h": 1, "x-delivery-count": 1}),
            (True, {"h": 1, "x-delivery-count": 2}),
        ]
        method, props, _body = wait_until(lambda: _got(ch.basic_get(dead, auto_ack=True)))
        assert ready(ch, uid) == 0
        headers = props.headers
        (death,) = headers.pop("x-death")
        assert headers == {
            "h": 1,
            "x-first-death-exchange": "",
            "x-first-death-queue": uid,
            "x-first-death-reason": "delivery_limit",
        }
        assert (death["reason"], death["queue"], death["count"]) == ("delivery_limit", uid, 1)
        assert method.routing_key == uid
        ch.exchange_delete(dlx)


def test_consumer_redeliveries_count_and_a_limit_without_dlx_drops(amqp_url, uid):
    """A consumer's first delivery has no x-delivery-count, redeliveries do; past the limit
    with no dead-letter exchange the message is gone."""
    with channel(amqp_url, uid) as ch:
        ch.queue_declare(uid, durable=True, arguments={**QUORUM, "x-delivery-limit": 1})
        ch.basic_publish("", uid, b"m")
        seen: list[tuple[bool, Any]] = []

        def reject(channel: Any, method: Any, props: Any, _body: bytes) -> None:
            seen.append((method.redelivered, props.headers))
            channel.basic_reject(method.delivery_tag, requeue=True)

        ch.basic_consume(uid, reject)
        pika_wait(lambda: len(seen) == 2, ch.connection)
        wait_until(lambda: ready(ch, uid) == 0 and len(seen) == 2)
        assert seen == [(False, None), (True, {"x-delivery-count": 1})]


def test_delivery_limit_zero_drops_on_the_first_return(amqp_url, uid):
    with channel(amqp_url, uid) as ch:
        ch.queue_declare(uid, durable=True, arguments={**QUORUM, "x-delivery-limit": 0})
        ch.basic_publish("", uid, b"m")
        method, props, _body = wait_until(lambda: _got(ch.basic_get(uid)))
        assert props.headers == {"x-delivery-count": 0}
        ch.basic_nack(method.delivery_tag, requeue=True)
        wait_until(lambda: ready(ch, uid) == 0)
        assert ch.basic_get(uid)[0] is None


def _got(reply: tuple[Any, Any, Any]) -> tuple[Any, Any, Any] | None:
    return reply if reply[0] is not None else None
