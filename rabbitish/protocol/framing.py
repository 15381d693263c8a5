"""Frame reader and writer. The reader checks the declared size against frame_max before it
buffers the payload, so a peer cannot make us hold an oversized frame in memory."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pamqp import commands
from pamqp.base import Frame as Method

from rabbitish.engine.errors import frame_error

FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"
FRAME_OVERHEAD = 8  # 7-byte header + frame-end octet

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"

_frame_header = struct.Struct(">BHI")
_method_index = struct.Struct(">I")
_content_header = struct.Struct(">HHQ")


@dataclass(slots=True)
class RawFrame:
    """One whole frame as read off the wire; payload excludes the header and the frame-end byte."""

    type: int
    channel: int
    payload: bytes


class FrameReader:
    """Splits a byte stream into frames. Feed any slicing of the stream (one byte at a time works);
    frames come out whole and in order."""

    __slots__ = ("_buffer", "frame_max")

    def __init__(self, frame_max: int) -> None:
        self._buffer = bytearray()
        self.frame_max = frame_max

    def feed(self, data: bytes) -> list[RawFrame]:
        """Append bytes and return every frame now complete. Raises a 501 connection error on an
        oversized frame or a missing frame-end byte."""
        buf = self._buffer
        buf += data
        frames: list[RawFrame] = []
        offset = 0
        end = len(buf)
        frame_max = self.frame_max
        while end - offset >= 7:
            ftype, channel, size = _frame_header.unpack_from(buf, offset)
            if size + FRAME_OVERHEAD > frame_max:
                raise frame_error(
                    f"type {ftype}, all octets = <<>>: {{frame_too_large,{size},"
                    f"{frame_max - FRAME_OVERHEAD}}}"
                )
            total = size + FRAME_OVERHEAD
            if end - offset < total:
                break
            if buf[offset + total - 1] != FRAME_END:
                raise frame_error(f"type {ftype}, invalid frame end marker")
            frames.append(RawFrame(ftype, channel, bytes(buf[offset + 7 : offset + 7 + size])))
            offset += total
        if offset:
            del buf[:offset]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buffer)


def decode_method(payload: bytes) -> Method:
    """Decode a method frame payload with pamqp. Raises KeyError for an unknown method index and
    ValueError / struct.error for a malformed argument list."""
    (index,) = _method_index.unpack_from(payload, 0)
    method = commands.INDEX_MAPPING[index]()
    method.unmarshal(payload[4:])
    return method


def method_ids(payload: bytes) -> tuple[int, int]:
    """Class and method id of a method frame payload, without decoding the arguments."""
    if len(payload) < 4:
        return 0, 0
    return int.from_bytes(payload[0:2], "big"), int.from_bytes(payload[2:4], "big")


def decode_content_header(payload: bytes) -> tuple[int, int, bytes]:
    """Return (class_id, body_size, raw property bytes). Properties stay raw: they are forwarded
    byte-exact and decoded only when the broker needs a field."""
    if len(payload) < 14:
        raise ValueError("content header too short")
    class_id, _weight, body_size = _content_header.unpack_from(payload, 0)
    return class_id, body_size, payload[12:]


def encode_frame(ftype: int, channel: int, payload: bytes) -> bytes:
    return _frame_header.pack(ftype, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_method(channel: int, method: Method) -> bytes:
    payload = _method_index.pack(method.index) + method.marshal()
    return _frame_header.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_method_payload(channel: int, payload: bytes) -> bytes:
    """Frame an already-marshalled method payload (index + arguments)."""
    return _frame_header.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_content(
    channel: int, raw_properties: bytes, body: bytes, frame_max: int, out: list[bytes]
) -> None:
    """Append the content header frame and body frames (split at frame_max - 8) to `out`."""
    header = _content_header.pack(60, 0, len(body)) + raw_properties
    out.append(_frame_header.pack(FRAME_HEADER, channel, len(header)))
    out.append(header)
    out.append(FRAME_END_BYTE)
    chunk = frame_max - FRAME_OVERHEAD
    size = len(body)
    if size <= chunk:
        if size:
            out.append(_frame_header.pack(FRAME_BODY, channel, size))
            out.append(body)
            out.append(FRAME_END_BYTE)
        return
    view = memoryview(body)
    for start in range(0, size, chunk):
        part = view[start : start + chunk]
        out.append(_frame_header.pack(FRAME_BODY, channel, len(part)))
        out.append(bytes(part))
        out.append(FRAME_END_BYTE)
