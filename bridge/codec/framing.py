"""AMQP 1.0 frames: the 8-byte header (size, data offset, type, channel), an extended header we
skip, the performative and, for a transfer, the message bytes after it. Sans-IO: the reader
takes whatever slices of the stream arrive and hands back whole frames.

The reader checks a frame's size against the negotiated maximum as soon as the four size bytes
are in, so a peer cannot make us buffer a frame we would refuse anyway."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, NamedTuple

from .decoder import decode
from .definitions import DEFINITIONS, PERFORMATIVES, SASL_FRAMES, Transfer
from .encoder import encode, encode_into
from .values import DecodeError

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
FRAME_AMQP = 0
FRAME_SASL = 1
MIN_MAX_FRAME_SIZE: int = DEFINITIONS["MIN_MAX_FRAME_SIZE"]
HEADER_SIZE = 8

_HEADER = struct.Struct(">IBBH")
_SIZE = struct.Struct(">I").unpack_from
_BODY_TYPES = {FRAME_AMQP: frozenset(PERFORMATIVES), FRAME_SASL: frozenset(SASL_FRAMES)}


class FramingError(Exception):
    """The stream is not a sequence of well-formed frames (a size or data offset that cannot
    be, a frame over the maximum size, an unknown frame type): the connection closes with
    amqp:connection:framing-error. `frames` holds the good frames read before it in the same
    feed."""

    def __init__(self, message: str, frames: list[Frame] | None = None) -> None:
        super().__init__(message)
        self.frames: list[Frame] = frames or []


class FrameDecodeError(DecodeError):
    """A frame whose body is not a performative of its frame type, or does not decode: the
    connection closes with amqp:decode-error. `frames` as for FramingError; the stream stays in
    step (the bad frame is consumed)."""

    def __init__(self, message: str, frames: list[Frame] | None = None) -> None:
        super().__init__(message)
        self.frames: list[Frame] = frames or []


class Frame(NamedTuple):
    """One frame: `body` is the performative (None for an empty frame, a heartbeat) and
    `payload` the bytes after it (a transfer's share of the message). A tuple: one is made
    for every frame read."""

    type: int
    channel: int
    body: Any | None
    payload: bytes


class FrameReader:
    """Splits a byte stream (after the protocol header) into frames. Any slicing of the stream
    works, one byte at a time included. `max_frame_size` may be changed at any time (once the
    open exchange has settled it)."""

    __slots__ = ("_buffer", "max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        self._buffer = bytearray()
        self.max_frame_size = max_frame_size

    @property
    def buffered(self) -> int:
        """Bytes held towards a frame not yet complete."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Take more of the stream; return the frames it completes. Raises FramingError or
        FrameDecodeError at the first bad frame.

        Frames are decoded where they lie in the bytes read (only an incomplete last frame is
        kept back, and joined to what comes next), so a frame's bytes are not copied first."""
        buf = self._buffer
        stream: bytes
        if buf:
            buf += data
            if len(buf) >= 4:
                size = _SIZE(buf, 0)[0]
                if HEADER_SIZE <= size <= self.max_frame_size and len(buf) < size:
                    return []  # a large frame coming in pieces grows in place until whole
            stream = bytes(buf)
            buf.clear()
        else:
            stream = data if type(data) is bytes else bytes(data)
        frames: list[Frame] = []
        offset = 0
        end = len(stream)
        try:
            while end - offset >= 4:
                size = _SIZE(stream, offset)[0]
                if size > self.max_frame_size:
                    raise FramingError(
                        f"frame of {size} bytes exceeds the maximum frame size "
                        f"{self.max_frame_size}"
                    )
                if size < HEADER_SIZE:
                    raise FramingError(f"frame size {size} is smaller than a frame header")
                if end - offset < size:
                    break
                start = offset
                offset += size
                frames.append(_frame_at(stream, start, offset))
        except (FramingError, FrameDecodeError) as exc:
            exc.frames = frames
            raise
        finally:
            if offset < end:
                buf += memoryview(stream)[offset:]
        return frames


def parse_frame(frame: bytes) -> Frame:
    """One whole frame (its size already checked against the buffer) as a Frame."""
    return _frame_at(frame, 0, len(frame))


def _frame_at(data: bytes, start: int, stop: int) -> Frame:
    """The whole frame at data[start:stop] (its size already checked), decoded in place. A
    body that does not decode within the frame is decoded again from the frame's own bytes,
    so the error is the one the frame alone gives, whatever follows it."""
    size, doff, frame_type, channel = _HEADER.unpack_from(data, start)
    if doff < 2:
        raise FramingError(f"data offset {doff} is below the minimum of 2")
    body_start = doff * 4
    if body_start > size:
        raise FramingError(f"data offset {doff} ({body_start} bytes) exceeds the frame size {size}")
    allowed = _BODY_TYPES.get(frame_type)
    if allowed is None:
        raise FramingError(f"unknown frame type 0x{frame_type:02x}")
    if body_start == size:
        if frame_type == FRAME_SASL:
            raise FramingError("empty SASL frame")
        return Frame(frame_type, channel, None, b"")
    whole = start == 0 and stop == len(data)
    try:
        body, end = decode(data, start + body_start)
    except DecodeError as exc:
        if not whole:
            return _frame_at(data[start:stop], 0, size)
        raise FrameDecodeError(f"frame body on channel {channel}: {exc}") from exc
    if end > stop:  # ran on past the frame: the frame alone is truncated
        return _frame_at(data[start:stop], 0, size)
    if type(body) not in allowed:
        kind = "performative" if frame_type == FRAME_AMQP else "SASL frame body"
        raise FrameDecodeError(f"frame body {type(body).__name__} is not a {kind}")
    return Frame(frame_type, channel, body, data[end:stop])


def encode_frame(
    channel: int, body: Any | None, payload: bytes = b"", frame_type: int = FRAME_AMQP
) -> bytes:
    """One frame; body None makes an empty frame (a heartbeat)."""
    out = bytearray(HEADER_SIZE)
    if body is not None:
        encode_into(body, out)
    out += payload
    _HEADER.pack_into(out, 0, len(out), 2, frame_type, channel)
    return bytes(out)


HEARTBEAT = encode_frame(0, None)


def _transfer_frame(channel: int, performative: bytes, chunk: memoryview) -> bytes:
    size = HEADER_SIZE + len(performative) + len(chunk)
    return b"".join((_HEADER.pack(size, 2, FRAME_AMQP, channel), performative, chunk))


def encode_transfers(
    channel: int, transfer: Transfer, payload: bytes, max_frame_size: int
) -> list[bytes]:
    """The transfer frames for one message: as many as it takes for none to exceed
    max_frame_size, all but the last with more=True (the last keeps the transfer's own `more`).
    Every frame repeats the transfer's fields, which the spec allows."""
    if not isinstance(transfer, Transfer):
        raise TypeError(f"encode_transfers takes a Transfer, not {type(transfer).__name__}")
    view = memoryview(payload).cast("B")
    last = encode(transfer)
    if HEADER_SIZE + len(last) + len(view) <= max_frame_size:
        return [_transfer_frame(channel, last, view)]
    middle = encode(dataclasses.replace(transfer, more=True))
    room = max_frame_size - HEADER_SIZE - len(middle)
    if room <= 0:
        raise ValueError(f"a transfer frame cannot carry any payload in {max_frame_size} bytes")
    frames = []
    pos = 0
    while HEADER_SIZE + len(last) + len(view) - pos > max_frame_size:
        frames.append(_transfer_frame(channel, middle, view[pos : pos + room]))
        pos += room
    frames.append(_transfer_frame(channel, last, view[pos:]))
    return frames
