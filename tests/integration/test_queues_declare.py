"""queue.declare: server-named, reserved and passive declares, redeclare equivalence (pika and
aiormq), the empty-name shortcut, long error texts and the direct reply-to pseudo queue. Every
test runs against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import aiormq
import aiormq.exceptions
import pytest

from tests.support.clients import channel_error
from tests.support.clients import pika_channel as channel
from tests.support.clients import pika_connection as connection
from tests.support.queues import LOCKED, short


# ---------------------------------------------------------------------- names
def test_server_named_queue(amqp_url, uid):
    with channel(amqp_url) as ch:
        name = ch.queue_declare("", exclusive=True).method.queue
        assert name.startswith("amq.gen-") and len(name) == 30
        assert all(c.isalnum() or c in "-_" for c in name[8:])
        ch.queue_declare(name, passive=True)
        assert channel_error(lambda: ch.queue_declare(name, exclusive=True)) == (
            403,
            f"ACCESS_REFUSED - queue name '{name}' contains reserved prefix 'amq.*'",
        )


async def test_server_named_queues_are_distinct_with_aiormq(amqp_url):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        names = {(await ch.queue_declare("", exclusive=True)).queue for _ in range(5)}
        assert len(names) == 5
        assert all(n.startswith("amq.gen-") and len(n) == 30 for n in names)
    finally:
        await conn.close()


def test_reserved_prefix(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare("amq." + uid)) == (
            403,
            f"ACCESS_REFUSED - queue name 'amq.{uid}' contains reserved prefix 'amq.*'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare("amq." + uid, passive=True)) == (
            404,
            f"NOT_FOUND - no queue 'amq.{uid}' in vhost '/'",
        )


def test_passive_declare(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.queue_declare(uid, passive=True)) == (
            404,
            f"NOT_FOUND - no queue '{uid}' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 3})
        # flags and arguments of a passive declare are ignored
        ok = ch.queue_declare(uid, passive=True, durable=True, arguments={"x-max-length": 9})
        assert (ok.method.queue, ok.method.message_count, ok.method.consumer_count) == (uid, 0, 0)
        ch.queue_delete(uid)


# ---------------------------------------------------------------------- equivalence
@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {},
            {"durable": True},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"durable": True},
            {},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"auto_delete": True},
            {},
            "inequivalent arg 'auto_delete' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {},
            {"durable": True, "arguments": {"x-message-ttl": 5}},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"arguments": {"x-message-ttl": 2000}},
            {"arguments": {"x-message-ttl": 1000}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received '1000' but current is '2000'",
        ),
        (
            {"arguments": {"x-message-ttl": 2000}},
            {"arguments": {"x-message-ttl": "2000"}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received '2000' but current is '2000'",
        ),
        (
            {"arguments": {"x-max-length": 1}},
            {"arguments": {"x-max-length": True}},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received 'true' but current is '1'",
        ),
        (
            {},
            {"arguments": {"x-message-ttl": 2000}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received the value '2000' of type 'signedint' but current is none",
        ),
        (
            {"arguments": {"x-max-length": 2**40}},
            {},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received none but current is the value '1099511627776' of type 'long'",
        ),
        (
            {"arguments": {"x-dead-letter-exchange": "a"}},
            {"arguments": {"x-dead-letter-exchange": "b"}},
            "inequivalent arg 'x-dead-letter-exchange' for queue '{q}' in vhost '/': "
            "received 'b' but current is 'a'",
        ),
        (
            {"arguments": {"x-queue-mode": "lazy"}},
            {},
            "inequivalent arg 'x-queue-mode' for queue '{q}' in vhost '/': "
            "received none but current is the value 'lazy' of type 'longstr'",
        ),
        (
            {"arguments": {"x-single-active-consumer": True}},
            {"arguments": {"x-single-active-consumer": False}},
            "inequivalent arg 'x-single-active-consumer' for queue '{q}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"arguments": {"x-queue-version": 1}},
            {"arguments": {"x-queue-version": 2}},
            "inequivalent arg 'x-queue-version' for queue '{q}' in vhost '/': "
            "received '2' but current is '1'",
        ),
        (
            {},
            {"arguments": {"x-queue-type": "quorum"}},
            "inequivalent arg 'x-queue-type' for queue '{q}' in vhost '/': "
            "received the value 'quorum' of type 'longstr' but current is none",
        ),
        ({"arguments": {"x-queue-type": "classic"}}, {}, None),
        ({}, {"arguments": {"x-queue-type": "classic"}}, None),
        ({"arguments": {"x-custom": 1}}, {"arguments": {"x-custom": "other"}}, None),
        ({"arguments": {"x-message-ttl": 2000}}, {"arguments": {"x-message-ttl": 2**40}}, 406),
    ],
)
def test_redeclare_equivalence_pika(amqp_url, uid, first, second, detail):
    with connection(amqp_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, **first)
        try:
            if detail is None:
                ch.queue_declare(uid, **second)
            elif detail == 406:
                assert channel_error(lambda: ch.queue_declare(uid, **second))[0] == 406
            else:
                assert channel_error(lambda: ch.queue_declare(uid, **second)) == (
                    406,
                    "PRECONDITION_FAILED - " + detail.format(q=uid),
                )
        finally:
            conn.channel().queue_delete(uid)


@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {},
            {"x-message-ttl": 2000},
            "received the value '2000' of type 'short' but current is none",
        ),
        ({}, {"x-message-ttl": 20}, "received the value '20' of type 'byte' but current is none"),
        (
            {},
            {"x-message-ttl": 100000},
            "received the value '100000' of type 'signedint' but current is none",
        ),
        (
            {"x-message-ttl": 2000},
            {},
            "received none but current is the value '2000' of type 'short'",
        ),
        (
            {"x-message-ttl": 2000},
            {"x-message-ttl": 2000.0},
            "received '2.0e3' but current is '2000'",
        ),
        ({"x-message-ttl": 2000}, {"x-message-ttl": 1.5}, "received '1.5' but current is '2000'"),
    ],
)
async def test_redeclare_equivalence_aiormq(amqp_url, uid, first, second, detail):
    """aiormq encodes integers in the smallest type, and RabbitMQ's texts name that type."""
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, auto_delete=True, arguments=first)
        await ch.queue_declare(uid, auto_delete=True, arguments=dict(first))  # same: fine
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
            await ch.queue_declare(uid, auto_delete=True, arguments=second)
        assert info.value.args[0] == (
            f"PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue '{uid}' in "
            f"vhost '/': {detail}"
        )
        ch = await conn.channel()
        await ch.queue_delete(uid)
    finally:
        await conn.close()


def test_integer_widths_are_equivalent(amqp_url, uid):
    """A short from aiormq and a signedint from pika with the same value are the same."""
    import asyncio

    async def declare() -> None:
        conn = await aiormq.connect(amqp_url)
        ch = await conn.channel()
        await ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 300})
        await conn.close()

    asyncio.run(declare())
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, auto_delete=True, arguments={"x-max-length": 300})
        ch.queue_delete(uid)


# ---------------------------------------------------------------------- the empty name
def test_empty_name_means_the_last_declared_queue(amqp_url, uid):
    with channel(amqp_url) as ch:
        name = ch.queue_declare(uid, exclusive=True).method.queue
        ch.queue_bind("", "amq.direct", uid + "-key")
        ch.queue_bind("", "amq.direct")  # empty key too: the key is the queue name
        ch.basic_publish("amq.direct", uid + "-key", b"1")
        ch.basic_publish("amq.direct", name, b"2")
        ch.basic_publish("amq.direct", "", b"not-routed")
        assert ch.basic_get("", auto_ack=True)[2] == b"1"
        assert ch.queue_purge("").method.message_count == 1
        ch.queue_unbind("", "amq.direct", uid + "-key")
        ch.basic_publish("amq.direct", uid + "-key", b"3")
        assert ch.basic_get("", auto_ack=True)[0] is None
        tag = ch.basic_consume("", lambda *a: None)
        ch.basic_cancel(tag)
        ch.queue_delete("")
        assert channel_error(lambda: ch.queue_declare(name, passive=True))[0] == 404


@pytest.mark.parametrize(
    "operation",
    [
        lambda ch: ch.queue_bind("", "amq.direct", "k"),
        lambda ch: ch.queue_unbind("", "amq.direct", "k"),
        lambda ch: ch.queue_purge(""),
        lambda ch: ch.queue_delete(""),
        lambda ch: ch.basic_get(""),
        lambda ch: ch.basic_consume("", lambda *a: None),
    ],
    ids=["bind", "unbind", "purge", "delete", "get", "consume"],
)
def test_empty_name_without_a_declared_queue_404(amqp_url, operation):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: operation(ch)) == (
            404,
            "NOT_FOUND - no previously declared queue",
        )


def test_passive_declare_of_the_empty_name_is_not_a_shortcut(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True)
        assert channel_error(lambda: ch.queue_declare("", passive=True)) == (
            404,
            "NOT_FOUND - no queue '' in vhost '/'",
        )


def test_long_error_texts_are_cut_like_rabbitmq(amqp_url, uid):
    """A reply text over 255 bytes ends in '...' within the limit."""
    name = short(uid) + "q" * 150
    with channel(amqp_url) as owner:
        owner.queue_declare(name, exclusive=True)
        with channel(amqp_url) as other:
            code, text = channel_error(lambda: other.queue_declare(name, passive=True))
    full = LOCKED.format(q=name)
    assert (code, text) == (405, full.encode()[:252].decode() + "...")


@pytest.mark.parametrize("passive", [True, False])
def test_declaring_the_direct_reply_to_pseudo_queue(amqp_url, passive):
    with channel(amqp_url) as ch:
        ok = ch.queue_declare("amq.rabbitmq.reply-to", passive=passive, durable=True).method
        assert (ok.queue, ok.message_count, ok.consumer_count) == ("amq.rabbitmq.reply-to", 0, 1)
        assert channel_error(
            lambda: ch.queue_declare("amq.rabbitmq.reply-to.x", passive=passive)
        ) == (
            404,
            "NOT_FOUND - no queue 'amq.rabbitmq.reply-to.x' in vhost '/'",
        )
