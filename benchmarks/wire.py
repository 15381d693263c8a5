"""Raw-socket helpers, so the broker and not a client library is what a scenario measures:
messages encoded once and pipelined, replies read as undecoded frames."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from pamqp import commands

from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame

_HEADER = struct.Struct(">BHI")
_TAG = struct.Struct(">Q")
DELIVER = b"\x00\x3c\x00\x3c"
CONFIRM_ACK = b"\x00\x3c\x00\x50"
CONFIRM_NACK = b"\x00\x3c\x00\x78"
CHUNK = 1000  # messages per sendall


def frames(client: RawClient, until: Callable[[int, bytes], bool]) -> None:
    """Read raw frames, calling `until(type, payload)` until it returns True."""
    buf = client.buffer
    client.buffer = b""
    while True:
        offset = 0
        while len(buf) - offset >= 7:
            ftype, _channel, size = _HEADER.unpack_from(buf, offset)
            if len(buf) - offset < size + 8:
                break
            if until(ftype, buf[offset + 7 : offset + 7 + size]):
                client.buffer = buf[offset + size + 8 :]
                return
            offset += size + 8
        buf = buf[offset:] + client.recv_bytes(30)


def message(queue: str, body_size: int, delivery_mode: int = 1, channel: int = 1) -> bytes:
    """One publish to the default exchange: method, content header and body frames."""
    return (
        method_frame(channel, commands.Basic.Publish(exchange="", routing_key=queue))
        + content_header_frame(channel, body_size, delivery_mode=delivery_mode)
        + raw_frame(3, channel, b"x" * body_size)
    )


def pipeline(client: RawClient, one: bytes, messages: int) -> None:
    """Send `messages` copies of `one` without waiting for anything."""
    for offset in range(0, messages, CHUNK):
        client.send(one * min(CHUNK, messages - offset))


def confirmed(client: RawClient, queue: str, messages: int, body_size: int, mode: int) -> float:
    """Publish in confirm mode (the channel must be in it) and wait for the last confirm; the
    seconds it took. A nack fails the run rather than counting as done."""
    start = time.perf_counter()
    pipeline(client, message(queue, body_size, mode), messages)

    def last_confirm(ftype: int, payload: bytes) -> bool:
        if ftype == 1 and payload[:4] == CONFIRM_NACK:
            raise RuntimeError("the broker nacked a publish")
        return (
            ftype == 1
            and payload[:4] == CONFIRM_ACK
            and _TAG.unpack_from(payload, 4)[0] == messages
        )

    frames(client, last_confirm)
    return time.perf_counter() - start


def delivery_tag(payload: bytes) -> int:
    """The delivery tag of a basic.deliver payload (after the consumer tag)."""
    return _TAG.unpack_from(payload, 5 + payload[4])[0]


def open_channel(client: RawClient, confirm: bool = False) -> None:
    """Channel 1, in confirm mode if asked."""
    client.open_channel(1)
    if confirm:
        client.send_method(1, commands.Confirm.Select())
        client.expect("Confirm.SelectOk")
