"""Hand-rolled encoders for the frames on the hot path (deliver, get-ok, ack, nack, return), and
decoders for the hot incoming ones (publish, ack). pamqp builds objects and validates on every
call, which costs more than the broker's own work per message."""

from __future__ import annotations

import functools
import struct

from rabbitish.protocol.framing import FRAME_END_BYTE, FRAME_METHOD

_method_frame = struct.Struct(">BHI")
_DELIVER = struct.pack(">HH", 60, 60)
_GET_OK = struct.pack(">HH", 60, 71)
_RETURN = struct.pack(">HH", 60, 50)
_ACK = struct.pack(">HH", 60, 80)
_NACK = struct.pack(">HH", 60, 120)
_CANCEL = struct.pack(">HH", 60, 30)
_q = struct.Struct(">Q")
_tag_bit = struct.Struct(">Q?")
_I = struct.Struct(">I")
_H = struct.Struct(">H")


def _shortstr(value: str) -> bytes:
    data = value.encode()
    return bytes((len(data),)) + data


def _method(channel: int, payload: bytes) -> bytes:
    return _method_frame.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


@functools.cache
def commit_ok(channel: int) -> bytes:
    """tx.commit-ok: no arguments, so one frame per channel number serves every commit."""
    return _method(channel, struct.pack(">HH", 90, 21))


def deliver(
    channel: int, consumer_tag: bytes, delivery_tag: int, redelivered: bool, names: bytes
) -> bytes:
    """consumer_tag comes pre-encoded as a shortstr, `names` as exchange and routing key
    shortstrs (`names()`); the frame is built in one join."""
    size = 13 + len(consumer_tag) + len(names)  # class, method, tag, redelivered
    return b"".join(
        (
            _method_frame.pack(FRAME_METHOD, channel, size),
            _DELIVER,
            consumer_tag,
            _tag_bit.pack(delivery_tag, redelivered),
            names,
            FRAME_END_BYTE,
        )
    )


@functools.lru_cache(maxsize=4096)
def names(exchange: str, routing_key: str) -> bytes:
    """Exchange and routing key as two shortstrs. A few pairs recur for message after message,
    so each is encoded once rather than on every delivery."""
    return _shortstr(exchange) + _shortstr(routing_key)


def get_ok(
    channel: int,
    delivery_tag: int,
    redelivered: bool,
    exchange: str,
    routing_key: str,
    message_count: int,
) -> bytes:
    payload = b"".join(
        (
            _GET_OK,
            _q.pack(delivery_tag),
            b"\x01" if redelivered else b"\x00",
            _shortstr(exchange),
            _shortstr(routing_key),
            _I.pack(message_count),
        )
    )
    return _method(channel, payload)


def basic_return(
    channel: int, reply_code: int, reply_text: str, exchange: str, routing_key: str
) -> bytes:
    payload = b"".join(
        (
            _RETURN,
            _H.pack(reply_code),
            _shortstr(reply_text),
            _shortstr(exchange),
            _shortstr(routing_key),
        )
    )
    return _method(channel, payload)


def ack(channel: int, delivery_tag: int, multiple: bool) -> bytes:
    return _method(channel, _ACK + _q.pack(delivery_tag) + (b"\x01" if multiple else b"\x00"))


def nack(channel: int, delivery_tag: int, multiple: bool) -> bytes:
    """A publisher-confirm nack. RabbitMQ sets the requeue bit (its record default)."""
    return _method(channel, _NACK + _q.pack(delivery_tag) + (b"\x03" if multiple else b"\x02"))


def cancel(channel: int, consumer_tag: bytes) -> bytes:
    """A broker-sent basic.cancel (nowait set); consumer_tag comes pre-encoded."""
    return _method(channel, _CANCEL + consumer_tag + b"\x01")


def shortstr(value: str) -> bytes:
    return _shortstr(value)


def decode_publish(payload: bytes) -> tuple[str, str, bool, bool]:
    """basic.publish arguments: (exchange, routing_key, mandatory, immediate)."""
    pos = 6  # class, method, reserved-1
    elen = payload[pos]
    exchange = payload[pos + 1 : pos + 1 + elen].decode()
    pos += 1 + elen
    rlen = payload[pos]
    routing_key = payload[pos + 1 : pos + 1 + rlen].decode()
    pos += 1 + rlen
    bits = payload[pos]
    if pos + 1 != len(payload):
        raise ValueError("basic.publish arguments do not fill the frame exactly")
    return exchange, routing_key, bool(bits & 1), bool(bits & 2)


def decode_ack(payload: bytes) -> tuple[int, bool]:
    """basic.ack arguments: (delivery_tag, multiple)."""
    if len(payload) != 13:
        raise ValueError("basic.ack arguments do not fill the frame exactly")
    return _q.unpack_from(payload, 4)[0], bool(payload[12] & 1)
