"""Every row of docs/amqp10.md's message mapping table, crossed both ways over real TCP: sent by
an AMQP 1.0 client (qpid-proton) and read by a 0-9-1 one, and the other way round. Rows where
RabbitMQ 3.10's 1.0 plugin maps the same take `amqp_url` and also run against it; the rest
(creation-time, typed application-properties, user-id's type) are rabbitish's improvements.
0-9-1 header types are written and read with a raw 0-9-1 client where it matters: pika writes
only some field types and reads floats as integers."""

from __future__ import annotations

import datetime
import decimal
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from pamqp import commands

from tests.support.clients import pika_channel
from tests.support.raw_amqp import RawClient, method_frame, raw_frame

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Data, Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

from tests.bridge.test_amqp10_links import proton_url  # noqa: E402

HEADERS_FLAG = 0x2000


@pytest.fixture
def open10() -> Iterator[Any]:
    """Opens 1.0 connections to a given broker; closes them after the test."""
    made: list[BlockingConnection] = []

    def connect(url: str) -> BlockingConnection:
        made.append(BlockingConnection(proton_url(url), timeout=5))
        return made[-1]

    yield connect
    for conn in made:
        conn.close()


def send10(open10, url: str, address: str, message: Message) -> None:
    open10(url).create_sender(address).send(message)


def receive10(open10, url: str, queue: str) -> Message:
    receiver = open10(url).create_receiver(f"/amq/queue/{queue}", credit=1)
    message = receiver.receive(timeout=5)
    receiver.accept()
    # copies: proton hands out binary values as views into a buffer it reuses
    message.properties = {k: plain(v) for k, v in (message.properties or {}).items()}
    message.correlation_id = plain(message.correlation_id)
    return message


def get091(url: str, queue: str) -> tuple[Any, bytes]:
    with pika_channel(url) as ch:
        method, props, body = ch.basic_get(queue, auto_ack=True)
    assert method is not None, "no message"
    return props, body


def publish091(open10, url: str, queue: str, body: bytes, **props: Any) -> None:
    """A pika publish to a queue a 1.0 link declared (RabbitMQ declares it with the terminus's
    durability, rabbitish durable)."""
    open10(url).create_sender(f"/queue/{queue}")
    with pika_channel(url) as ch:
        ch.basic_publish("", queue, body, pika.BasicProperties(**props))


def section(descriptor: int, value: Any) -> bytes:
    """One encoded 1.0 body section, built by proton."""
    data = Data()
    data.put_described()
    data.enter()
    data.put_ulong(descriptor)
    data.put_object(value)
    data.exit()
    return bytes(data.encode())


def decode_sections(payload: bytes) -> list[Any]:
    data = Data()
    values = []
    while payload:
        used = data.decode(payload)
        payload = payload[used:]
        data.rewind()
        data.next()
        values.append(data.get_object())
        data.clear()
    return values


# ------------------------------------------------------------------ header and properties rows
# (row, proton Message keywords, check of pika's properties)
TO_091 = [
    ("durable", {"durable": True}, lambda p: p.delivery_mode == 2),
    ("not durable", {"durable": False}, lambda p: p.delivery_mode in (None, 1)),
    ("priority", {"priority": 7}, lambda p: p.priority == 7),
    ("ttl", {"ttl": 60}, lambda p: p.expiration == "60000"),
    ("message-id", {"id": "m-1"}, lambda p: p.message_id == "m-1"),
    ("correlation-id", {"correlation_id": "c-1"}, lambda p: p.correlation_id == "c-1"),
    ("content-type", {"content_type": "text/plain"}, lambda p: p.content_type == "text/plain"),
    ("content-encoding", {"content_encoding": "gzip"}, lambda p: p.content_encoding == "gzip"),
    ("reply-to", {"reply_to": "/queue/replies"}, lambda p: p.reply_to == "replies"),
    ("user-id", {"user_id": b"guest"}, lambda p: p.user_id == "guest"),
]
# (row, pika BasicProperties keywords, check of proton's Message)
FROM_091 = [
    ("durable", {"delivery_mode": 2}, lambda m: m.durable),
    ("not durable", {"delivery_mode": 1}, lambda m: not m.durable),
    ("priority", {"priority": 7}, lambda m: m.priority == 7),
    ("ttl", {"expiration": "60000"}, lambda m: m.ttl == 60),
    ("message-id", {"message_id": "m-1"}, lambda m: m.id == "m-1"),
    ("correlation-id", {"correlation_id": "c-1"}, lambda m: m.correlation_id == "c-1"),
    ("content-type", {"content_type": "text/plain"}, lambda m: m.content_type == "text/plain"),
    ("content-encoding", {"content_encoding": "gzip"}, lambda m: m.content_encoding == "gzip"),
    ("reply-to", {"reply_to": "replies"}, lambda m: m.reply_to == "/queue/replies"),
]


@pytest.mark.rabbitmq
@pytest.mark.parametrize(("row", "given", "check"), TO_091, ids=[r[0] for r in TO_091])
def test_1_0_to_0_9_1(open10, amqp_url, uid, row, given, check):
    send10(open10, amqp_url, f"/queue/{uid}", Message(body=b"x", inferred=True, **given))
    props, body = get091(amqp_url, uid)
    assert body == b"x" and check(props), (row, props)


@pytest.mark.rabbitmq
@pytest.mark.parametrize(("row", "given", "check"), FROM_091, ids=[r[0] for r in FROM_091])
def test_0_9_1_to_1_0(open10, amqp_url, uid, row, given, check):
    publish091(open10, amqp_url, uid, b"x", **given)
    message = receive10(open10, amqp_url, uid)
    assert bytes(message.body) == b"x" and check(message), (row, message)


def test_0_9_1_user_id_is_1_0_binary(open10, broker_url, uid):
    """RabbitMQ 3.10 sends it as a string; the spec types user-id binary."""
    publish091(open10, broker_url, uid, b"x", user_id="guest")
    assert receive10(open10, broker_url, uid).user_id == b"guest"


def test_creation_time_ms_is_timestamp_s(open10, broker_url, uid):
    """RabbitMQ 3.10 copies the number across unscaled (ms into 0-9-1's seconds)."""
    send10(open10, broker_url, f"/queue/{uid}", Message(body=b"x", creation_time=1_700_000_000.5))
    props, _body = get091(broker_url, uid)
    assert props.timestamp == 1_700_000_000
    publish091(open10, broker_url, uid, b"x", timestamp=1_700_000_001)
    assert receive10(open10, broker_url, uid).creation_time == 1_700_000_001


@pytest.mark.rabbitmq
def test_subject_is_the_routing_key(open10, amqp_url, uid):
    open10(amqp_url).create_sender(f"/queue/{uid}")  # declares the queue
    with pika_channel(amqp_url) as ch:
        ch.queue_bind(uid, "amq.direct", f"{uid}-key")
        send10(
            open10,
            amqp_url,
            "/exchange/amq.direct",
            Message(body=b"x", subject=f"{uid}-key", inferred=True),
        )
        method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert (method.routing_key, body) == (f"{uid}-key", b"x")
        ch.basic_publish("amq.direct", f"{uid}-key", b"y")
    message = receive10(open10, amqp_url, uid)
    assert (message.subject, bytes(message.body)) == (f"{uid}-key", b"y")


# ------------------------------------------------------------------ bodies
@pytest.mark.rabbitmq
def test_one_data_section_is_the_body_byte_for_byte(open10, amqp_url, uid):
    payload = bytes(range(256)) * 3
    send10(open10, amqp_url, f"/queue/{uid}", Message(body=payload, inferred=True))
    assert get091(amqp_url, uid)[1] == payload
    publish091(open10, amqp_url, uid, payload)
    assert bytes(receive10(open10, amqp_url, uid).body) == payload


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("body", "descriptor"),
    [({"a": 1, "b": [1, 2]}, 0x77), ([1, "two", 3.0], 0x76)],
    ids=["amqp-value", "amqp-sequence"],
)
def test_other_bodies_travel_as_their_sections(open10, amqp_url, uid, body, descriptor):
    """0-9-1 sees the encoded body sections, type "amqp-1.0"; a 0-9-1 publisher can send 1.0
    sections the same way."""
    send10(open10, amqp_url, f"/queue/{uid}", Message(body=body, inferred=True))
    props, raw = get091(amqp_url, uid)
    assert props.type == "amqp-1.0"
    assert decode_sections(raw) == decode_sections(section(descriptor, body))
    publish091(open10, amqp_url, uid, section(descriptor, body), type="amqp-1.0")
    assert receive10(open10, amqp_url, uid).body == body


# ------------------------------------------------------------------ application-properties
def plain(value: Any) -> Any:
    """Proton hands binary values out as memoryviews."""
    return bytes(value) if isinstance(value, memoryview) else value


def raw_get(url: str, queue: str) -> dict[str, tuple[str, bytes]]:
    """The headers of the next message exactly as on the wire: key -> (tag, value bytes)."""
    with RawClient(url) as raw:
        raw.open()
        raw.open_channel()
        raw.send_method(1, commands.Basic.Get(queue=queue, no_ack=True))
        raw.expect("Basic.GetOk")
        _type, _channel, payload = raw.read_raw_frame()
    flags, pos = struct.unpack_from(">H", payload, 12)[0], 14
    for bit in (0x8000, 0x4000):  # content-type, content-encoding come first
        if flags & bit:
            pos += 1 + payload[pos]
    assert flags & HEADERS_FLAG
    end = pos + 4 + struct.unpack_from(">I", payload, pos)[0]
    pos += 4
    table = {}
    while pos < end:
        key = payload[pos + 1 : pos + 1 + payload[pos]].decode()
        pos += 1 + payload[pos]
        tag = chr(payload[pos])
        size = _FIXED.get(tag)
        if size is None:
            size = 4 + struct.unpack_from(">I", payload, pos + 1)[0]
        table[key] = (tag, payload[pos + 1 : pos + 1 + size])
        pos += 1 + size
    return table


_FIXED = {"t": 1, "b": 1, "B": 1, "s": 2, "u": 2, "I": 4, "i": 4, "l": 8, "f": 4, "d": 8}
_FIXED.update({"D": 5, "T": 8, "V": 0})


def raw_publish(url: str, queue: str, entries: dict[str, bytes]) -> None:
    """A message whose headers are the given encoded field values, tags and all."""
    body = b"".join(bytes([len(k)]) + k.encode() + v for k, v in entries.items())
    header = struct.pack(">HHQHI", 60, 0, 1, HEADERS_FLAG, len(body)) + body
    with RawClient(url) as raw:
        raw.open()
        raw.open_channel()
        raw.send_method(1, commands.Queue.Declare(queue=queue, durable=True))
        raw.expect("Queue.DeclareOk")
        raw.send(method_frame(1, commands.Basic.Publish(exchange="", routing_key=queue)))
        raw.send(raw_frame(2, 1, header) + raw_frame(3, 1, b"x"))
        raw.send_method(1, commands.Queue.Declare(queue=queue, passive=True))
        raw.expect("Queue.DeclareOk")  # the publish before it was handled


def _long(n: int) -> bytes:
    return struct.pack(">q", n)


def _longstr(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


DECIMAL_1_5 = (397 << 53) | 15  # IEEE decimal64, binary integer encoding: 15 x 10^-1
UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")
# (1.0 value sent, 0-9-1 tag, value bytes, kept exactly only through the x-amqp-1.0 header)
TYPES = [
    ("boolean", True, "t", b"\x01", False),
    ("byte", proton.byte(-5), "b", b"\xfb", False),
    ("ubyte", proton.ubyte(200), "B", b"\xc8", False),
    ("short", proton.short(-300), "s", struct.pack(">h", -300), False),
    ("ushort", proton.ushort(60000), "u", struct.pack(">H", 60000), False),
    ("int", proton.int32(-70000), "I", struct.pack(">i", -70000), False),
    ("uint", proton.uint(4_000_000_000), "i", struct.pack(">I", 4_000_000_000), False),
    ("long", -(2**40), "l", _long(-(2**40)), False),
    ("ulong", proton.ulong(7), "l", _long(7), True),
    ("big ulong", proton.ulong(2**64 - 1), "S", _longstr(b"18446744073709551615"), True),
    ("float", proton.float32(1.5), "f", struct.pack(">f", 1.5), False),
    ("double", 2.25, "d", struct.pack(">d", 2.25), False),
    ("decimal64", proton.decimal64(DECIMAL_1_5), "D", b"\x01" + struct.pack(">i", 15), False),
    (
        "timestamp",
        proton.timestamp(1_700_000_000_000),
        "T",
        struct.pack(">Q", 1_700_000_000),
        False,
    ),
    (
        "timestamp ms",
        proton.timestamp(1_700_000_000_123),
        "T",
        struct.pack(">Q", 1_700_000_000),
        True,
    ),
    ("string", "text", "S", _longstr(b"text"), False),
    ("symbol", proton.symbol("sym"), "S", _longstr(b"sym"), True),
    ("char", proton.char("c"), "S", _longstr(b"c"), True),
    ("binary", b"\x00\xff", "x", _longstr(b"\x00\xff"), False),
    ("uuid", UUID, "S", _longstr(str(UUID).encode()), True),
    ("null", None, "V", b"", False),
]
TYPE_IDS = [t[0] for t in TYPES]


@pytest.mark.parametrize(("name", "value", "tag", "data", "kept"), TYPES, ids=TYPE_IDS)
def test_application_property_to_header_type(open10, broker_url, uid, name, value, tag, data, kept):
    """Each 1.0 type becomes the closest 0-9-1 field type (RabbitMQ 3.10 sets no plain
    headers: it keeps the section encoded in x-amqp-1.0-app-properties)."""
    send10(open10, broker_url, f"/queue/{uid}", Message(body=b"x", properties={"k": value}))
    headers = raw_get(broker_url, uid)
    assert headers["k"] == (tag, data)
    assert ("x-amqp-1.0-app-properties" in headers) == kept


# (0-9-1 tag, value bytes, the 1.0 type proton reports, the value)
HEADER_TYPES = [
    ("t", b"\x00", bool, False),
    ("b", b"\xfb", proton.byte, -5),
    ("B", b"\xc8", proton.ubyte, 200),
    ("s", struct.pack(">h", -300), proton.short, -300),
    ("u", struct.pack(">H", 60000), proton.ushort, 60000),
    ("I", struct.pack(">i", -70000), proton.int32, -70000),
    ("i", struct.pack(">I", 4_000_000_000), proton.uint, 4_000_000_000),
    ("l", _long(-(2**40)), int, -(2**40)),
    ("f", struct.pack(">f", 1.5), proton.float32, 1.5),
    ("d", struct.pack(">d", 2.25), float, 2.25),
    ("D", b"\x01" + struct.pack(">i", 15), proton.decimal64, DECIMAL_1_5),
    ("T", struct.pack(">Q", 1_700_000_000), proton.timestamp, 1_700_000_000_000),
    ("S", _longstr("tëxt".encode()), str, "tëxt"),
    ("S", _longstr(b"\xff\xfe"), bytes, b"\xff\xfe"),
    ("x", _longstr(b"\x00\xff"), bytes, b"\x00\xff"),
    ("V", b"", type(None), None),
    ("F", _longstr(b"\x01nu\x00\x02"), dict, {"n": 2}),
    ("A", _longstr(b"b\x01b\x02"), list, [1, 2]),
]


@pytest.mark.parametrize(("tag", "data", "kind", "value"), HEADER_TYPES)
def test_header_type_to_application_property(open10, broker_url, uid, tag, data, kind, value):
    """Each 0-9-1 field type arrives as the 1.0 type of the same width and sign (RabbitMQ
    3.10 drops 0-9-1 headers on the way to a 1.0 client)."""
    raw_publish(broker_url, uid, {"k": tag.encode() + data})
    got = plain(receive10(open10, broker_url, uid).properties["k"])
    assert type(got) is kind and got == value


def test_pika_headers_reach_1_0_as_application_properties(open10, broker_url, uid):
    stamp = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    headers = {"s": "v", "n": 3, "big": 2**40, "yes": True, "none": None, "bin": b"\x01"}
    publish091(
        open10, broker_url, uid, b"x", headers={**headers, "at": stamp, "d": decimal.Decimal("1.5")}
    )
    got = receive10(open10, broker_url, uid).properties
    assert {k: got[k] for k in headers} == headers
    assert type(got["n"]) is proton.int32  # pika writes small integers as 0-9-1 'I'
    assert got["at"] == proton.timestamp(int(stamp.timestamp()) * 1000)
    assert got["d"] == proton.decimal64(DECIMAL_1_5)


def test_application_properties_between_1_0_clients_keep_every_type(open10, broker_url, uid):
    sent = {name: value for name, value, *_ in TYPES}
    send10(open10, broker_url, f"/queue/{uid}", Message(body=b"x", properties=sent))
    got = {k: plain(v) for k, v in receive10(open10, broker_url, uid).properties.items()}
    assert {k: (type(v), v) for k, v in got.items()} == {k: (type(v), v) for k, v in sent.items()}


def test_a_header_edited_by_a_0_9_1_client_takes_its_0_9_1_type(open10, broker_url, uid):
    """The kept 1.0 section speaks for a header only while the header is what it mapped to."""
    send10(
        open10,
        broker_url,
        f"/queue/{uid}",
        Message(body=b"x", properties={"a": proton.symbol("s"), "b": proton.symbol("t")}),
    )
    props, body = get091(broker_url, uid)
    assert props.headers["a"] == "s" and "x-amqp-1.0-app-properties" in props.headers
    props.headers["b"] = "edited"
    publish091(open10, broker_url, uid, body, headers=props.headers)
    got = receive10(open10, broker_url, uid).properties
    assert type(got["a"]) is proton.symbol and got["a"] == "s"
    assert type(got["b"]) is str and got["b"] == "edited"
    assert "x-amqp-1.0-app-properties" not in got


def test_1_0_properties_between_1_0_clients_keep_their_types(open10, broker_url, uid):
    """A ulong message-id, a binary correlation-id, a millisecond, `to` and group fields have
    no 0-9-1 home: the section is kept whole for a 1.0 receiver."""
    sent = Message(
        body=b"x",
        id=proton.ulong(42),
        correlation_id=b"\x01\x02",
        creation_time=1_700_000_000.123,
        address="/queue/elsewhere",
        group_id="g",
        subject="subj",
    )
    send10(open10, broker_url, f"/queue/{uid}", sent)
    got = receive10(open10, broker_url, uid)
    assert (type(got.id), got.id) == (int, 42)  # proton reports a ulong id as an int
    assert plain(got.correlation_id) == b"\x01\x02" and got.creation_time == 1_700_000_000.123
    assert (got.address, got.group_id, got.subject) == ("/queue/elsewhere", "g", "subj")
