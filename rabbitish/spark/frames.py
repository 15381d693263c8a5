"""Publishing many messages at frame level on a pika channel. A write task sends thousands of
messages whose method (exchange, routing key) and properties repeat: each distinct method frame
and property list is encoded once, by pika, and per message only the sizes and the body are
packed. Frames go to pika's output buffer in runs of about FLUSH_BYTES, and the socket is
drained between runs; pika's blocking basic_publish encodes every frame anew and waits for the
socket after every single message, which costs more than the message itself.

The frames are the ones pika would send (tests/unit/spark/test_frames.py compares them byte
for byte), so everything else on the connection (tx.commit, errors the broker reports by
closing the channel) goes through pika as usual."""

from __future__ import annotations

import struct
from typing import Any

import pika
from pika import frame, spec
from pika.adapters.blocking_connection import BlockingChannel

FLUSH_BYTES = 1 << 20  # frames buffered before they are handed to the socket
FRAME_END = bytes((spec.FRAME_END,))
# type 2 (header), channel, payload size; class, weight, body size
_HEADER = struct.Struct(">BHIHHQ")
_BODY = struct.Struct(">BHI")  # type 3 (body), channel, payload size
_HEADER_FIXED = 12  # class, weight and body size ahead of the property list


def encoded_properties(properties: pika.BasicProperties) -> bytes:
    """A content header's property flags and list, as pika encodes them."""
    return b"".join(properties.encode())


class FramePublisher:
    """basic.publish on one open channel, frames built here and written through pika's
    connection. `flush()` after the last message (before tx.commit)."""

    def __init__(self, channel: BlockingChannel) -> None:
        impl = channel._impl
        self._channel = channel
        self._number: int = impl.channel_number
        self._connection = impl.connection
        self._body_max: int = self._connection._body_max_length
        self._methods: dict[tuple[str, str], bytes] = {}
        self._frames: list[bytes] = []
        self._buffered = 0

    def publish(self, exchange: str, routing_key: str, properties: bytes, body: bytes) -> None:
        """One message; `properties` from `encoded_properties`."""
        method = self._methods.get((exchange, routing_key))
        if method is None:
            publish = spec.Basic.Publish(exchange=exchange, routing_key=routing_key)
            method = frame.Method(self._number, publish).marshal()
            self._methods[(exchange, routing_key)] = method
        size = len(body)
        number = self._number
        frames = self._frames
        frames.append(method)
        frames.append(_HEADER.pack(2, number, _HEADER_FIXED + len(properties), 60, 0, size))
        frames.append(properties)
        frames.append(FRAME_END)
        if size <= self._body_max:
            if size:
                frames.append(_BODY.pack(3, number, size))
                frames.append(body)
                frames.append(FRAME_END)
        else:
            view = memoryview(body)
            for start in range(0, size, self._body_max):
                chunk = view[start : start + self._body_max]
                frames.append(_BODY.pack(3, number, len(chunk)))
                frames.append(bytes(chunk))
                frames.append(FRAME_END)
        self._buffered += size + len(method) + len(properties) + 22
        if self._buffered >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand what is buffered to the socket and wait until it is written; raises what
        pika raises for a channel the broker closed or a connection that was lost."""
        if self._frames:
            if self._channel.is_closed:
                self._channel._flush_output()  # raises: the channel or connection is gone
            self._connection._output_marshaled_frames([b"".join(self._frames)])
            self._frames.clear()
            self._buffered = 0
        self._channel._flush_output()


# A delivery as DeliveryReader hands it over: delivery tag, redelivered, exchange, routing
# key, the content header's property flags and list (still encoded), body.
RawDelivery = tuple[int, bool, str, str, bytes, bytes]
_FRAME = struct.Struct(">BHI")  # type, channel, payload size
_FRAME_END_BYTE = spec.FRAME_END
_DELIVER = struct.pack(">HH", 60, 60)  # basic.deliver's class and method
_BODY_SIZE = struct.Struct(">Q")  # in a content header, after class and weight


class DeliveryReader:
    """Takes the basic.deliver frames of one channel (and their content) off a pika
    connection's input before pika parses them: the stream reader receives every message of
    a queue, and pika turns each into a method object, a properties object, a frame
    assembler's state and two dispatches before the consumer sees it. Every other frame,
    of this channel or another, goes to pika whole, in the order it came.

    Install it before basic.consume on the channel; deliveries then collect in `arrived`
    while pika reads the socket (any pika call that waits on the connection), until taken."""

    def __init__(self, connection: pika.BlockingConnection, channel_number: int) -> None:
        impl = connection._impl
        self._impl = impl
        self._pika_frames = impl._on_data_available
        self._channel = channel_number
        self._buffer = bytearray()
        self._message: list[Any] | None = None  # the delivery whose content is coming
        self._remaining = 0  # its body bytes still to come
        self.arrived: list[RawDelivery] = []
        impl._on_data_available = self._on_data

    def take(self) -> list[RawDelivery]:
        """What has arrived since the last call, in order."""
        arrived, self.arrived = self.arrived, []
        return arrived

    def _on_data(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        end = len(buffer)
        position = taken = 0
        channel = self._channel
        unpack = _FRAME.unpack_from
        while end - position >= 8:
            kind, number, size = unpack(buffer, position)
            after = position + 8 + size
            if after > end:
                break
            payload = position + 7
            message = self._message
            if number != channel or buffer[after - 1] != _FRAME_END_BYTE:
                self._pika_frames(bytes(buffer[position:after]))
            elif kind == 1 and message is None and buffer[payload : payload + 4] == _DELIVER:
                self._message = _deliver(buffer, payload)
                taken += after - position
            elif kind == 2 and message is not None:
                body_size = _BODY_SIZE.unpack_from(buffer, payload + 4)[0]
                message.append(bytes(buffer[payload + 12 : payload + size]))
                if body_size:
                    message.append([])
                    self._remaining = body_size
                else:
                    self._arrive(message, b"")
                taken += after - position
            elif kind == 3 and message is not None:
                parts = message[5]
                parts.append(bytes(buffer[payload : payload + size]))
                self._remaining -= size
                if self._remaining <= 0:
                    self._arrive(message, parts[0] if len(parts) == 1 else b"".join(parts))
                taken += after - position
            else:  # another method of the channel: pika's
                self._pika_frames(bytes(buffer[position:after]))
            position = after
        if position:
            del buffer[:position]
            self._impl.bytes_received += taken

    def _arrive(self, message: list[Any], body: bytes) -> None:
        """A delivery's last frame is in: AMQP sends a message's frames on its channel without
        other frames of that channel between them."""
        tag, redelivered, exchange, routing_key, properties = message[:5]
        self.arrived.append((tag, redelivered, exchange, routing_key, properties, body))
        self._message = None


def _deliver(buffer: bytearray, start: int) -> list[Any]:
    """basic.deliver's fields after class and method: consumer tag (skipped), delivery tag,
    redelivered, exchange, routing key."""
    at = start + 4
    at += 1 + buffer[at]  # consumer tag
    (tag,) = struct.unpack_from(">Q", buffer, at)
    redelivered = bool(buffer[at + 8] & 1)
    at += 9
    length = buffer[at]
    exchange = buffer[at + 1 : at + 1 + length].decode()
    at += 1 + length
    length = buffer[at]
    routing_key = buffer[at + 1 : at + 1 + length].decode()
    return [tag, redelivered, exchange, routing_key]
