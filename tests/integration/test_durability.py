"""What survives a restart on the same data dir, and what must not: durable wiring with its
arguments (still acting), persistent messages on durable queues byte-exact and in order, the
delivered ones redelivered; transient things and :memory: mode leave nothing. Restarts are
in-process brokers stopped and started again on the same data dir (open transactions and crashes
of a real process: test_group_commit.py)."""

from __future__ import annotations

import asyncio
import os
import random
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest
from pamqp import commands

import rabbitish
from rabbitish.testing import running_broker
from tests.support.raw_amqp import RawClient, raw_frame

PERSISTENT = pika.BasicProperties(delivery_mode=2)
TRANSIENT = pika.BasicProperties(delivery_mode=1)


# ---------------------------------------------------------------------- helpers
@contextmanager
def channel(url: str) -> Iterator[Any]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn.channel()
    finally:
        if conn.is_open:
            conn.close()


def drain(ch: Any, queue: str) -> list[tuple[bytes, bool, Any]]:
    """Take every message (auto-ack): body, redelivered flag, properties."""
    got = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, method.redelivered, props))


def bodies(ch: Any, queue: str) -> list[bytes]:
    return [body for body, _, _ in drain(ch, queue)]


def refused(url: str, action: Any) -> tuple[int, str]:
    """Run `action(channel)` on a fresh channel; it must close the channel: (code, text)."""
    with channel(url) as ch, pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        action(ch)
    return info.value.reply_code, info.value.reply_text


def poll(condition: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.01)


@pytest.fixture
def data(tmp_path: Path) -> str:
    return str(tmp_path / "data")


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
    while time.monotonic() < published + 0.2:  # let the 150 ms expiration pass while down
        time.sleep(0.01)

    with running_broker(data_dir=data) as broker, channel(broker.url) as ch:
        for name, args in declared.items():
            ch.queue_declare(name, durable=True, arguments=args)  # equivalent: fine
        # The same refusal, word for word (argument types survived too).
        assert refused(broker.url, lambda c: c.queue_declare(maxlen, durable=True)) == before
        # Expired while the broker was down: dead-lettered as soon as it is back.
        got = poll(lambda: drain(ch, dlq))
        assert [(body, props.headers["x-death"][0]["reason"]) for body, _, props in got] == [
            (b"expires-while-down", "expired")
        ]
        assert bodies(ch, expiring) == [b"kept"]
        ch.basic_publish("", ttl, b"short-lived", PERSISTENT)  # TTL 100 ms, then DLX
        got = poll(lambda: drain(ch, dlq))
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
        got = poll(lambda: drain(ch, dlq))
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


# ---------------------------------------------------------------------- messages
def _shortstr(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def _longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def _table(items: list[tuple[str, bytes]]) -> bytes:
    return _longstr(b"".join(_shortstr(name) + value for name, value in items))


HEADER_TABLE = _table(
    [
        ("str", b"S" + _longstr("héllo wörld".encode())),
        ("i8", b"b" + struct.pack(">b", -5)),
        ("i16", b"s" + struct.pack(">h", -300)),
        ("i32", b"I" + struct.pack(">i", -70000)),
        ("i64", b"l" + struct.pack(">q", 2**40 + 3)),
        ("yes", b"t\x01"),
        ("no", b"t\x00"),
        ("f32", b"f" + struct.pack(">f", 1.5)),
        ("f64", b"d" + struct.pack(">d", -2.25)),
        ("dec", b"D\x02" + struct.pack(">i", 12345)),
        ("when", b"T" + struct.pack(">Q", 1_700_000_000)),
        ("nothing", b"V"),
        ("blob", b"x" + _longstr(b"\x00\xff\x10")),
        ("list", b"A" + _longstr(b"I" + struct.pack(">i", 7) + b"S" + _longstr(b"seven"))),
        ("nested", b"F" + _table([("inner", b"S" + _longstr(b"deep")), ("n", b"b\x01")])),
    ]
)


def _content_header(body_size: int) -> bytes:
    """Every basic property set (bits 15..3), in wire order."""
    props = (
        _shortstr("application/x-test")
        + _shortstr("identity")
        + HEADER_TABLE
        + b"\x02"  # delivery-mode: persistent
        + b"\x07"  # priority
        + _shortstr("corr-1")
        + _shortstr("replies")
        + _shortstr("600000")
        + _shortstr("mid-1")
        + struct.pack(">Q", 1_700_000_001)
        + _shortstr("kind")
        + _shortstr("guest")
        + _shortstr("raw-test")
    )
    return struct.pack(">HHQH", 60, 0, body_size, 0xFFF8) + props


def _raw_publish(client: RawClient, exchange: str, key: str, header: bytes, body: bytes) -> None:
    client.send_method(1, commands.Basic.Publish(exchange=exchange, routing_key=key))
    client.send(raw_frame(2, 1, header))
    step = client.tune.frame_max - 8
    for start in range(0, len(body), step):
        client.send(raw_frame(3, 1, body[start : start + step]))
    client.expect("Basic.Ack")


def _raw_get(client: RawClient, queue: str) -> tuple[Any, bytes, bytes]:
    """basic.get: the decoded get-ok, the raw content header payload, the whole body."""
    client.send_method(1, commands.Basic.Get(queue=queue, no_ack=True))
    method = client.expect("Basic.GetOk")
    ftype, _, header = client.read_raw_frame()
    assert ftype == 2, "expected a content header after basic.get-ok"
    size = struct.unpack_from(">Q", header, 4)[0]
    body = b""
    while len(body) < size:
        ftype, _, chunk = client.read_raw_frame()
        assert ftype == 3
        body += chunk
    return method, header, body


def test_persistent_message_bytes_survive_exactly(data, uid):
    """The content header (all properties, a table of many field types) and a multi-frame body
    come back byte for byte, from a direct publish and from one message routed to two queues."""
    fan, single, copies = f"{uid}-fan", f"{uid}-single", (f"{uid}-c1", f"{uid}-c2")
    body = random.Random(3).randbytes(300_000)
    header = _content_header(len(body))
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
            _raw_publish(client, "", single, header, body)
            _raw_publish(client, fan, "any", header, body)

    with running_broker(data_dir=data) as broker, RawClient(broker.url).open() as client:
        assert broker.recovery.messages == 3
        client.open_channel(1)
        for queue, exchange, key in ((single, "", single), *((q, fan, "any") for q in copies)):
            method, got_header, got_body = _raw_get(client, queue)
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
