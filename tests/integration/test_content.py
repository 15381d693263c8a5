"""Message content: bodies larger than frame_max split and reassembled byte-exact in both
directions, empty bodies, every basic property and header field type passed through unchanged,
down to the raw content-header bytes. Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import os
import struct
import time

import aio_pika
import pika
from pamqp import commands, decode, encode
from pamqp import frame as pframe
from pamqp.base import Frame as Method

from tests.support.clients import blocking_connection as _pika
from tests.support.raw_amqp import RawClient, method_frame, raw_frame
from tests.support.raw_messages import longstr, shortstr, table

BIG = os.urandom(5 * 1024 * 1024 + 17)


# ---------------------------------------------------------------------- raw frames
class Frames:
    """A raw connection that reads frames as (type, channel, payload) bytes, undecoded."""

    def __init__(self, url: str, frame_max: int | None = None) -> None:
        self.raw = RawClient(url)
        self.raw.open(frame_max=frame_max)
        self.raw.open_channel(1)
        self.buffer = b""

    def send_content(self, routing_key: str, raw_properties: bytes, body: bytes, chunk: int):
        publish = commands.Basic.Publish(exchange="", routing_key=routing_key)
        header = struct.pack(">HHQ", 60, 0, len(body)) + raw_properties
        parts = [method_frame(1, publish), raw_frame(2, 1, header)]
        parts += [raw_frame(3, 1, body[i : i + chunk]) for i in range(0, len(body), chunk)]
        self.raw.send(b"".join(parts))

    def frame(self, timeout: float = 5.0) -> tuple[int, int, bytes]:
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buffer) >= 7:
                ftype, channel, size = struct.unpack_from(">BHI", self.buffer)
                if len(self.buffer) >= size + 8:
                    payload = self.buffer[7 : 7 + size]
                    assert self.buffer[7 + size] == 0xCE
                    self.buffer = self.buffer[size + 8 :]
                    return ftype, channel, payload
            assert time.monotonic() < deadline, "no frame in time"
            chunk = self.raw.recv_bytes(max(0.01, deadline - time.monotonic()))
            assert chunk, "socket closed"
            self.buffer += chunk

    def content(self) -> tuple[bytes, bytes, bytes, list[int]]:
        """The next method with content: (method payload, raw properties, body, body frame
        sizes)."""
        while True:
            ftype, _ch, payload = self.frame()
            if ftype == 1 and payload[:4] in (b"\x00<\x00<", b"\x00<\x00G", b"\x00<\x002"):
                break
        ftype, _ch, header = self.frame()
        assert ftype == 2
        _cls, _weight, size = struct.unpack_from(">HHQ", header)
        body, sizes = b"", []
        while len(body) < size:
            ftype, _ch, part = self.frame()
            assert ftype == 3
            body += part
            sizes.append(len(part))
        return payload, header[12:], body, sizes

    def call(self, method: Method, expect: str) -> None:
        self.raw.send_method(1, method)
        while True:
            ftype, _ch, payload = self.frame()
            if ftype == 1 and decode_method_name(payload) == expect:
                return

    def close(self) -> None:
        self.raw.close()


def decode_method_name(payload: bytes) -> str:
    frame = struct.pack(">BHI", 1, 1, len(payload)) + payload + b"\xce"
    return pframe.unmarshal(frame)[2].name


# Every field type RabbitMQ knows, encoded the way pamqp would not encode it again (e.g. 'b',
# 'u', 'i', 'f', 'l' for small numbers, 'x' bytes, 'V' void, nested tables and arrays).
HEADER_TABLE = table(
    [
        ("bool", b"t\x01"),
        ("i8", b"b\xfe"),
        ("u8", b"B\xfe"),
        ("i16", b"s\xff\xfe"),
        ("u16", b"u\xff\xfe"),
        ("i32", b"I\xff\xff\xff\xfe"),
        ("u32", b"i\xff\xff\xff\xfe"),
        ("i64", b"l" + struct.pack(">q", 5)),
        ("f32", b"f" + struct.pack(">f", 1.5)),
        ("f64", b"d" + struct.pack(">d", 2.25)),
        ("dec", b"D\x02" + struct.pack(">i", 12345)),
        ("str", b"S" + longstr("h\u00e9llo".encode())),
        ("bin", b"x" + longstr(b"\x00\xff")),
        ("ts", b"T" + struct.pack(">Q", 1_700_000_000)),
        ("void", b"V"),
        ("arr", b"A" + longstr(b"I\x00\x00\x00\x01" + b"S" + longstr(b"x") + b"V")),
        ("tbl", b"F" + table([("n", b"F" + table([("d", b"D\x01\x00\x00\x00\x05")]))])),
    ]
)
# content-type, headers, delivery-mode, timestamp, app-id
RAW_PROPERTIES = (
    struct.pack(">H", 0x8000 | 0x2000 | 0x1000 | 0x0040 | 0x0008)
    + shortstr("application/x-test")
    + HEADER_TABLE
    + b"\x02"
    + struct.pack(">Q", 42)
    + shortstr("raw")
)


def test_pamqp_would_reencode_the_header_table_differently():
    """Guard for the raw test below: it is only meaningful if a decode/encode round trip (what a
    broker that re-encodes would do) changes the bytes."""
    _size, value = decode.field_table(HEADER_TABLE)
    assert encode.field_table(value) != HEADER_TABLE


def test_raw_properties_pass_through_byte_exact(amqp_url, uid):
    frames = Frames(amqp_url)
    try:
        frames.call(commands.Queue.Declare(queue=uid, exclusive=True), "Queue.DeclareOk")
        frames.send_content(uid, RAW_PROPERTIES, b"first", chunk=3)
        frames.send_content(uid, RAW_PROPERTIES, b"second", chunk=100)
        frames.raw.send_method(1, commands.Basic.Get(queue=uid, no_ack=True))
        _method, props, body, _sizes = frames.content()
        assert (props, body) == (RAW_PROPERTIES, b"first")
        frames.raw.send_method(1, commands.Basic.Consume(queue=uid, no_ack=True))
        _method, props, body, _sizes = frames.content()
        assert (props, body) == (RAW_PROPERTIES, b"second")
    finally:
        frames.close()


def test_returned_content_is_byte_exact(amqp_url, uid):
    frames = Frames(amqp_url)
    try:
        publish = commands.Basic.Publish(exchange="", routing_key=f"{uid}-nobody", mandatory=True)
        header = struct.pack(">HHQ", 60, 0, 4) + RAW_PROPERTIES
        frames.raw.send(
            method_frame(1, publish) + raw_frame(2, 1, header) + raw_frame(3, 1, b"back")
        )
        method, props, body, _sizes = frames.content()
        assert method[:4] == b"\x00<\x002"  # basic.return
        assert (props, body) == (RAW_PROPERTIES, b"back")
    finally:
        frames.close()


def test_big_body_published_in_small_frames_and_delivered_in_small_frames(amqp_url, uid):
    body = BIG[: 300 * 1024 + 5]
    publisher = Frames(amqp_url, frame_max=4096)
    consumer = Frames(amqp_url, frame_max=4096)
    try:
        publisher.call(commands.Queue.Declare(queue=uid), "Queue.DeclareOk")
        publisher.send_content(uid, b"\x00\x00", body, chunk=4096 - 8)
        consumer.raw.send_method(1, commands.Basic.Consume(queue=uid, no_ack=True))
        _method, props, got, sizes = consumer.content()
        assert props == b"\x00\x00"
        assert got == body
        assert max(sizes) == 4096 - 8  # split at the negotiated frame_max
        publisher.call(commands.Queue.Delete(queue=uid), "Queue.DeleteOk")
    finally:
        publisher.close()
        consumer.close()


def test_five_mib_body_round_trips_with_pika(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, BIG)
        ch.basic_publish("", uid, BIG[::-1])
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert hashlib.sha256(body).digest() == hashlib.sha256(BIG).digest()
        got: list[bytes] = []
        ch.basic_consume(uid, lambda c, m, p, b: got.append(b), auto_ack=True)
        deadline = time.monotonic() + 20
        while not got:
            assert time.monotonic() < deadline
            conn.process_data_events(time_limit=0.05)
        assert got[0] == BIG[::-1]
    finally:
        conn.close()


def test_large_deliveries_to_a_consumer_that_reads_late_arrive_whole_and_in_order(amqp_url, uid):
    """Deliveries pile up for a consumer that reads nothing until every publish is confirmed
    (more than the sockets buffer): all come out whole and in order."""
    bodies = [BIG[i:] + bytes([i]) for i in range(4)]
    consumer = Frames(amqp_url)
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=False, auto_delete=True)
        consumer.call(
            commands.Basic.Consume(queue=uid, consumer_tag="late", no_ack=True), "Basic.ConsumeOk"
        )
        ch.confirm_delivery()
        for body in bodies:
            ch.basic_publish("", uid, body)  # returns once confirmed
        got = [consumer.content()[2] for _ in bodies]
        assert [hashlib.sha256(b).digest() for b in got] == [
            hashlib.sha256(b).digest() for b in bodies
        ]
        consumer.call(commands.Basic.Cancel(consumer_tag="late"), "Basic.CancelOk")
    finally:
        conn.close()
        consumer.close()


async def test_five_mib_body_round_trips_with_aio_pika(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid, exclusive=True)
        await ch.default_exchange.publish(aio_pika.Message(BIG), routing_key=uid)
        async with queue.iterator(no_ack=True) as messages:
            async for message in messages:
                assert message.body == BIG
                break


def test_empty_body(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"", pika.BasicProperties(content_type="text/plain"))
        _method, props, body = ch.basic_get(uid, auto_ack=True)
        assert (body, props.content_type) == (b"", "text/plain")
    finally:
        conn.close()
    frames = Frames(amqp_url)
    try:
        frames.call(commands.Queue.Declare(queue=uid, exclusive=True), "Queue.DeclareOk")
        frames.send_content(uid, b"\x00\x00", b"", chunk=1)
        frames.raw.send_method(1, commands.Basic.Get(queue=uid, no_ack=True))
        _method, props, body, sizes = frames.content()
        assert (props, body, sizes) == (b"\x00\x00", b"", [])  # no body frame at all
    finally:
        frames.close()


def test_every_basic_property_passes_through(amqp_url, uid):
    headers = {
        "str": "value",
        "int": -7,
        "big": 2**40,
        "bool": False,
        "none": None,
        "bytes": b"\x00\x01",
        "list": [1, "a", [decimal.Decimal("2.5"), {"k": "v"}]],
        "table": {"inner": {"deep": decimal.Decimal("3.14")}},
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    }
    props = pika.BasicProperties(
        content_type="application/json",
        content_encoding="gzip",
        headers=headers,
        delivery_mode=2,
        priority=7,
        correlation_id="corr",
        reply_to="somewhere",
        expiration="600000",
        message_id="mid",
        timestamp=1_700_000_000,
        type="kind",
        user_id="guest",
        app_id="app",
        cluster_id="cluster",
    )
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"body", props)
        _method, got, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"body"
        for name in (
            "content_type",
            "content_encoding",
            "delivery_mode",
            "priority",
            "correlation_id",
            "reply_to",
            "expiration",
            "message_id",
            "timestamp",
            "type",
            "user_id",
            "app_id",
            "cluster_id",
        ):
            assert getattr(got, name) == getattr(props, name), name
        assert got.headers == headers
    finally:
        conn.close()


async def test_nested_header_values_with_aio_pika(amqp_url, uid):
    headers = {
        "nested": {
            "list": [1, 2, {"x": decimal.Decimal("1.25")}],
            "ts": datetime.datetime(2020, 5, 17, 1, 2, 3, tzinfo=datetime.UTC),
        },
        "array": [[1, 2], [], ["a"]],
        "dec": decimal.Decimal("-0.001"),
    }
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid, exclusive=True)
        await ch.default_exchange.publish(
            aio_pika.Message(b"x", headers=headers, message_id="m1"), routing_key=uid
        )
        message = await queue.get(no_ack=True, timeout=5)
        assert message.headers["dec"] == decimal.Decimal("-0.001")
        assert message.headers["array"] == [[1, 2], [], ["a"]]
        nested = message.headers["nested"]
        assert nested["list"] == [1, 2, {"x": decimal.Decimal("1.25")}]
        assert nested["ts"].replace(tzinfo=datetime.UTC) == headers["nested"]["ts"]
