"""Messages as raw frames, for tests that compare content headers byte for byte: a field table of
every AMQP 0-9-1 field type, a content header with every basic property, and publish / get that
send and read those frames untouched."""

from __future__ import annotations

import struct
from typing import Any

from pamqp import commands

from tests.support.raw_amqp import RawClient, raw_frame


def shortstr(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def longstr(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


def table(items: list[tuple[str, bytes]]) -> bytes:
    return longstr(b"".join(shortstr(name) + value for name, value in items))


HEADER_TABLE = table(
    [
        ("str", b"S" + longstr("héllo wörld".encode())),
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
        ("blob", b"x" + longstr(b"\x00\xff\x10")),
        ("list", b"A" + longstr(b"I" + struct.pack(">i", 7) + b"S" + longstr(b"seven"))),
        ("nested", b"F" + table([("inner", b"S" + longstr(b"deep")), ("n", b"b\x01")])),
    ]
)


def wide_table(innermost: bytes) -> bytes:
    """HEADER_TABLE nested in a table with the unsigned types (u8, u16, u32), a table inside an
    array inside a table (whose byte array holds `innermost`), and arrays in arrays."""
    innermost_table = table([("x", b"x" + longstr(innermost))])
    return table(
        [
            ("all", b"F" + HEADER_TABLE),
            ("u8", b"B" + struct.pack(">B", 200)),
            ("u16", b"u" + struct.pack(">H", 60000)),
            ("u32", b"i" + struct.pack(">I", 4_000_000_000)),
            (
                "deep",
                b"F" + table([("a", b"A" + longstr(b"F" + innermost_table))]),
            ),
            (
                "arrays",
                b"A" + longstr(b"A" + longstr(b"D\x03" + struct.pack(">i", -1)) + b"T" + bytes(8)),
            ),
        ]
    )


def content_header(body_size: int, headers: bytes = HEADER_TABLE) -> bytes:
    """Every basic property set (bits 15..3), in wire order."""
    props = (
        shortstr("application/x-test")
        + shortstr("identity")
        + headers
        + b"\x02"  # delivery-mode: persistent
        + b"\x07"  # priority
        + shortstr("corr-1")
        + shortstr("replies")
        + shortstr("600000")
        + shortstr("mid-1")
        + struct.pack(">Q", 1_700_000_001)
        + shortstr("kind")
        + shortstr("guest")
        + shortstr("raw-test")
    )
    return struct.pack(">HHQH", 60, 0, body_size, 0xFFF8) + props


def raw_publish(client: RawClient, exchange: str, key: str, header: bytes, body: bytes) -> None:
    client.send_method(1, commands.Basic.Publish(exchange=exchange, routing_key=key))
    client.send(raw_frame(2, 1, header))
    step = client.tune.frame_max - 8
    for start in range(0, len(body), step):
        client.send(raw_frame(3, 1, body[start : start + step]))
    client.expect("Basic.Ack")


def raw_get(client: RawClient, queue: str) -> tuple[Any, bytes, bytes]:
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
