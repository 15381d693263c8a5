"""Durable exchanges, queues and bindings survive a restart with their arguments (still acting),
and unbinds stay unbound. Restarts are in-process brokers stopped and started again on the same
data dir (open transactions and crashes of a real process: test_group_commit.py)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

import rabbitish
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel as channel
from tests.support.durability import PERSISTENT, bodies, drain, refused
from tests.support.waiting import wait_until


# ---------------------------------------------------------------------- wiring
async def test_durable_exchanges_survive_with_their_arguments(data, uid):
    names = {kind: f"{uid}-{kind}" for kind in ("direct", "fanout", "topic", "headers")}
    ae, with_ae, internal, auto = (f"{uid}-ae", f"{uid}-with-ae", f"{uid}-int", f"{uid}-auto")
    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        for kind, name in names.items():
            await ch.declare_exchange(name, kind, durable=True)
        ae_queue = await ch.declare_queue(f"{uid}-ae-q", durable=True)
        await ae_queue.bind(await ch.declare_exchange(ae, "fanout", durable=True))
        args = {"alternate-exchange": ae}
        await ch.declare_exchange(with_ae, "direct", durable=True, arguments=args)
        await ch.declare_exchange(internal, "topic", durable=True, internal=True)
        auto_x = await ch.declare_exchange(auto, "direct", durable=True, auto_delete=True)
        auto_queue = await ch.declare_queue(f"{uid}-auto-q", durable=True)
        await auto_queue.bind(auto_x, "k")
        await ch.declare_exchange(f"{uid}-transient", "direct", durable=False)
        await conn.close()

    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        assert broker.recovery.exchanges == 8
        conn = await aio_pika.connect(broker.url)
        ch = await conn.channel()
        for kind, name in names.items():
            await ch.declare_exchange(name, kind, durable=True)  # equivalent: fine
            other = "fanout" if kind != "fanout" else "direct"
            with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
                await (await conn.channel()).declare_exchange(name, other, durable=True)
            assert f"inequivalent arg 'type' for exchange '{name}'" in info.value.args[0]
        # The alternate exchange still catches what its exchange cannot route.
        ch = await conn.channel()
        with_ae_x = await ch.declare_exchange(with_ae, "direct", durable=True, arguments=args)
        await with_ae_x.publish(aio_pika.Message(b"unroutable"), "nobody")
        ae_queue = await ch.declare_queue(f"{uid}-ae-q", durable=True)
        got = await ae_queue.get(timeout=5)
        assert got.body == b"unroutable"
        await got.ack()
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as info:
            await (await conn.channel()).declare_exchange(with_ae, "direct", durable=True)
        assert "inequivalent arg 'alternate-exchange'" in info.value.args[0]
        # Still internal: clients cannot publish to it.
        internal_x = await (await conn.channel()).get_exchange(internal)
        with pytest.raises(aiormq.exceptions.ChannelAccessRefused) as info:
            await internal_x.publish(aio_pika.Message(b"x"), "a")
        assert info.value.args[0] == (
            f"ACCESS_REFUSED - cannot publish to internal exchange '{internal}' in vhost '/'"
        )
        # Still auto-delete: removing its last binding deletes it.
        ch = await conn.channel()
        with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed):
            await ch.declare_exchange(auto, "direct", durable=True)
        ch = await conn.channel()
        auto_queue = await ch.declare_queue(f"{uid}-auto-q", durable=True)
        await auto_queue.unbind(auto, "k")
        with pytest.raises(aiormq.exceptions.ChannelNotFoundEntity):
            await (await conn.channel()).get_exchange(auto)
        with pytest.raises(aiormq.exceptions.ChannelNotFoundEntity):
            await (await conn.channel()).get_exchange(f"{uid}-transient")
        await conn.close()

    async with rabbitish.Broker(port=0, data_dir=data) as broker:
        assert broker.recovery.exchanges == 7  # the auto-deleted one stays deleted


def test_durable_queue_arguments_still_act_after_restart(data, uid):
    dlx, dlq = f"{uid}-dlx", f"{uid}-dlq"
    ttl, maxlen, rejecting, prio, expiring = (
        f"{uid}-{name}" for name in ("ttl", "maxlen", "rej", "prio", "exp")
    )
    dead = {"x-dead-letter-exchange": dlx}
    declared: dict[str, dict[str, Any]] = {
        ttl: {"x-message-ttl": 100, **dead},
        maxlen: {"x-max-length": 2},
        rejecting: dead,
        prio: {"x-max-priority": 5},
        expiring: {"x-message-ttl": 600000, **dead},
    }
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.exchange_declare(dlx, "fanout", durable=True)
        ch.queue_declare(dlq, durable=True)
        ch.queue_bind(dlq, dlx)
        for name, args in declared.items():
            ch.queue_declare(name, durable=True, arguments=args)
        for body in (b"m1", b"m2"):
            ch.basic_publish("", maxlen, body, PERSISTENT)
        for priority in (1, 5, 3):
            props = pika.BasicProperties(delivery_mode=2, priority=priority)
            ch.basic_publish("", prio, str(priority).encode(), props)
        short = pika.BasicProperties(delivery_mode=2, expiration="150")
        ch.basic_publish("", expiring, b"expires-while-down", short)  # at the head: expires
        ch.basic_publish("", expiring, b"kept", PERSISTENT)
        published = time.monotonic()
        before = refused(broker.url, lambda c: c.queue_declare(maxlen, durable=True))
    assert before[0] == 406
    # Let the 150 ms expiration pass while the broker is down.
    time.sleep(max(0.0, published + 0.2 - time.monotonic()))

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        for name, args in declared.items():
            ch.queue_declare(name, durable=True, arguments=args)  # equivalent: fine
        # The same refusal, word for word (argument types survived too).
        assert refused(broker.url, lambda c: c.queue_declare(maxlen, durable=True)) == before
        # Expired while the broker was down: dead-lettered as soon as it is back.
        got = wait_until(lambda: drain(ch, dlq))
        assert [(body, props.headers["x-death"][0]["reason"]) for body, _, props in got] == [
            (b"expires-while-down", "expired")
        ]
        assert bodies(ch, expiring) == [b"kept"]
        ch.basic_publish("", ttl, b"short-lived", PERSISTENT)  # TTL 100 ms, then DLX
        got = wait_until(lambda: drain(ch, dlq))
        assert [(body, props.headers["x-death"][0]["reason"]) for body, _, props in got] == [
            (b"short-lived", "expired")
        ]
        ch.basic_publish("", maxlen, b"m3", PERSISTENT)  # drops the oldest recovered one
        assert bodies(ch, maxlen) == [b"m2", b"m3"]
        ch.basic_publish("", prio, b"4", pika.BasicProperties(delivery_mode=2, priority=4))
        assert bodies(ch, prio) == [b"5", b"4", b"3", b"1"]
        ch.basic_publish("", rejecting, b"no", PERSISTENT)
        method, _, _ = ch.basic_get(rejecting)
        ch.basic_reject(method.delivery_tag, requeue=False)
        got = wait_until(lambda: drain(ch, dlq))
        assert [(body, props.headers["x-death"][0]["reason"]) for body, _, props in got] == [
            (b"no", "rejected")
        ]


def test_bindings_survive_and_unbinds_stay_unbound(data, uid):
    queue, other = f"{uid}-q", f"{uid}-other"
    direct, topic, headers = f"{uid}-d", f"{uid}-t", f"{uid}-h"
    src, dst = f"{uid}-src", f"{uid}-dst"
    match_all = {"x-match": "all", "k": "v", "n": 1}
    z_binding = {"x-match": "any", "z": Decimal("1.5"), "y": [1, "a"], "w": True}
    z_message = pika.BasicProperties(headers={"z": Decimal("1.5")})
    routes = [  # (exchange, routing key, headers, body): each must reach `queue`
        (direct, "dk", None, b"direct"),
        (topic, "a.x.c", None, b"topic"),
        (headers, "", {"k": "v", "n": 1}, b"headers"),
        ("amq.direct", "ak", None, b"amq.direct"),
        ("amq.topic", "x.y.z", None, b"amq.topic"),
        ("amq.fanout", "", None, b"amq.fanout"),
        ("amq.headers", "", {"h": 1}, b"amq.headers"),
        (src, "e2e", None, b"e2e"),
    ]
    misses = [  # must reach nothing
        (headers, "", {"k": "v"}, b"partial headers"),
        (direct, "gone", None, b"unbound"),
        ("amq.topic", "gone.key", None, b"unbound amq"),
        (src, "gone", None, b"unbound e2e"),
    ]
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        ch.exchange_declare(direct, "direct", durable=True)
        ch.exchange_declare(topic, "topic", durable=True)
        ch.exchange_declare(headers, "headers", durable=True)
        ch.exchange_declare(src, "direct", durable=True)
        ch.exchange_declare(dst, "fanout", durable=True)
        ch.queue_declare(queue, durable=True)
        ch.queue_declare(other, durable=True)
        ch.queue_bind(queue, direct, "dk")
        ch.queue_bind(queue, topic, "a.*.c")
        ch.queue_bind(queue, headers, arguments=match_all)
        ch.queue_bind(queue, "amq.direct", "ak")
        ch.queue_bind(queue, "amq.topic", "x.#")
        ch.queue_bind(queue, "amq.fanout")
        ch.queue_bind(queue, "amq.headers", arguments={"x-match": "any", "h": 1})
        ch.exchange_bind(dst, src, "e2e")
        ch.queue_bind(queue, dst)
        for exchange, key, args in (
            (direct, "gone", None),
            ("amq.topic", "gone.#", None),
            (headers, "", {"x-match": "any", "k": "v"}),
        ):
            ch.queue_bind(queue, exchange, key, arguments=args)
            ch.queue_unbind(queue, exchange, key, arguments=args)
        ch.exchange_bind(dst, src, "gone")
        ch.exchange_unbind(dst, src, "gone")
        # A binding to unbind after the restart, with arguments: they must match as stored.
        ch.queue_bind(other, headers, arguments=z_binding)

    def publish_all(ch: Any) -> None:
        for exchange, key, hdrs, body in routes + misses:
            ch.basic_publish(exchange, key, body, pika.BasicProperties(headers=hdrs))

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        assert broker.recovery.bindings == 10
        publish_all(ch)
        assert bodies(ch, queue) == [body for _, _, _, body in routes]
        ch.basic_publish(headers, "", b"z", z_message)
        assert bodies(ch, other) == [b"z"]
        ch.queue_unbind(other, headers, arguments=z_binding)
        ch.basic_publish(headers, "", b"z", z_message)
        assert bodies(ch, other) == []

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        assert broker.recovery.bindings == 9
        ch.basic_publish(headers, "", b"z", z_message)
        assert bodies(ch, other) == []


def test_a_durable_server_named_queue_survives_a_restart(data):
    """queue_declare('', durable=True) gets an 'amq.gen-' name, which a client may not declare
    itself; the restart must bring the queue back, messages and bindings included."""
    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        name = ch.queue_declare("", durable=True).method.queue
        assert name.startswith("amq.gen-")
        ch.queue_bind(name, "amq.direct", "k")
        ch.basic_publish("amq.direct", "k", b"kept", PERSISTENT)
    with running_broker(data_dir=data) as broker:
        assert broker.recovery.queues == 1
        with channel(broker.url) as ch:
            assert ch.queue_declare(name, passive=True).method.message_count == 1
            ch.basic_publish("amq.direct", "k", b"routed", PERSISTENT)
            assert bodies(ch, name) == [b"kept", b"routed"]
