"""Persistent messages on durable queues survive a restart byte-exact (every property, sent as
raw frames) and in order, also when shared between queues. Restarts are in-process brokers
stopped and started again on the same data dir (open transactions and crashes of a real process:
test_group_commit.py)."""

from __future__ import annotations

import random
import struct
from typing import Any

import aio_pika
from pamqp import commands

import rabbitish
from rabbitish.testing import running_broker
from tests.support.clients import pika_channel as channel
from tests.support.raw_amqp import RawClient, raw_frame


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
