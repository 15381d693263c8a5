"""Field tables and arrays nested thousands of levels deep, built bottom-up as bytes (a
recursive encoder such as pamqp's cannot make them), and the frames that carry them: start-ok
client properties, queue.declare arguments, a content header's headers."""

from __future__ import annotations

import struct

_u32 = struct.Struct(">I")


def nested_value(depth: int, kind: str = "F", leaf: bytes = b"S\x00\x00\x00\x02hi") -> bytes:
    """A typed field value: `depth` tables (kind "F", each one entry keyed "k") or arrays (kind
    "A", each one element) around `leaf`."""
    value = leaf
    for _ in range(depth):
        body = b"\x01k" + value if kind == "F" else value
        value = kind.encode() + _u32.pack(len(body)) + body
    return value


def table(entries: dict[str, bytes]) -> bytes:
    """An encoded field table (with its length) of already-typed values."""
    body = b"".join(bytes([len(k.encode())]) + k.encode() + v for k, v in entries.items())
    return _u32.pack(len(body)) + body


def _shortstr(text: str) -> bytes:
    data = text.encode()
    return bytes([len(data)]) + data


def _longstr(data: bytes) -> bytes:
    return _u32.pack(len(data)) + data


def start_ok_payload(
    client_properties: bytes, user: str = "guest", password: str = "guest"
) -> bytes:
    """connection.start-ok with an encoded client-properties table."""
    return (
        struct.pack(">HH", 10, 11)
        + client_properties
        + _shortstr("PLAIN")
        + _longstr(f"\0{user}\0{password}".encode())
        + _shortstr("en_US")
    )


def queue_declare_payload(
    queue: str, arguments: bytes, exclusive: bool = False, durable: bool = False
) -> bytes:
    """queue.declare (not passive, no-wait off) with an encoded arguments table."""
    bits = (0x04 if exclusive else 0) | (0x02 if durable else 0)
    return struct.pack(">HHH", 50, 10, 0) + _shortstr(queue) + bytes([bits]) + arguments


def content_header_payload(body_size: int, headers: bytes) -> bytes:
    """A basic content header whose only property is `headers` (an encoded table)."""
    return struct.pack(">HHQH", 60, 0, body_size, 0x2000) + headers
