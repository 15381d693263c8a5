"""Many raw 0-9-1 connections on one asyncio loop, for benchmarks that need hundreds of clients
at once (benchmarks/scaling.py): each connection's handshake is `RawClient.open()`'s, then its
socket moves to the loop, where frames go out pre-encoded and replies are counted undecoded.
The client's own cost per message stays a few microseconds, so the broker is what grows."""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from collections.abc import Callable

from pamqp import commands
from pamqp.base import Frame as Method

from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame

_HEADER = struct.Struct(">BHI")
_TAG = struct.Struct(">Q")
_ACK_PAYLOAD = struct.Struct(">HHQB")
FRAME_END = b"\xce"
CONNECTION_CLOSE = struct.pack(">I", commands.Connection.Close.index)
CHANNEL_CLOSE = struct.pack(">I", commands.Channel.Close.index)
DELIVER = struct.pack(">I", commands.Basic.Deliver.index)
CONFIRM_ACK = struct.pack(">I", commands.Basic.Ack.index)
CONFIRM_NACK = struct.pack(">I", commands.Basic.Nack.index)


def reply(method: type[Method]) -> bytes:
    """The first four payload bytes (class and method id) that name a method's frames."""
    return struct.pack(">I", method.index)


def publish_frame(channel: int, exchange: str, routing_key: str) -> bytes:
    """basic.publish without flags, encoded by hand: routing keys differ per message in some
    scenarios, and pamqp's encoder would cost more than the broker's work on them."""
    ex, key = exchange.encode(), routing_key.encode()
    payload = b"".join(
        (reply(commands.Basic.Publish), b"\x00\x00", bytes([len(ex)]), ex, bytes([len(key)]), key)
    )
    payload += b"\x00"
    return _HEADER.pack(1, channel, len(payload)) + payload + FRAME_END


def content(channel: int, size: int, frame_max: int, delivery_mode: int = 1) -> bytes:
    """Content header and body frames of one `size`-byte body, split to fit `frame_max`."""
    body = b"x" * size
    step = frame_max - 8
    frames = [content_header_frame(channel, size, delivery_mode=delivery_mode)]
    frames += [raw_frame(3, channel, body[i : i + step]) for i in range(0, size, step)]
    return b"".join(frames)


def ack_frame(channel: int, tag: int, multiple: bool = False) -> bytes:
    payload = _ACK_PAYLOAD.pack(60, 80, tag, int(multiple))
    return _HEADER.pack(1, channel, len(payload)) + payload + FRAME_END


class BrokerClosed(RuntimeError):
    """The broker closed a connection or channel: a benchmark setup the broker refused."""


class Progress:
    """Wakes whoever waits on any of the connections that share it (one event for a fleet)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not done():
            self.event.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"no {what} within {timeout:g} s")
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except TimeoutError:
                continue


class Peer(asyncio.Protocol):
    """One open connection on the loop. It counts what comes back: replies by method, confirms
    (the highest tag), deliveries; and, when `acking`, acks every delivery of a read in one
    write, one ack frame per delivery."""

    def __init__(self, progress: Progress, frame_max: int) -> None:
        self.progress = progress
        self.frame_max = frame_max
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.replies: Counter[bytes] = Counter()
        self.confirmed = 0
        self.delivered = 0
        self.acking = False
        self.closed: str | None = None

    # ------------------------------------------------------------------ opening and closing
    @classmethod
    async def open(cls, url: str, progress: Progress | None = None) -> Peer:
        """Handshake (blocking, as RawClient does it), then hand the socket to the loop."""
        client = RawClient(url, timeout=60).open()
        assert client.tune is not None and not client.pending
        peer = cls(progress or Progress(), client.tune.frame_max or 131072)
        client.sock.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.create_connection(lambda: peer, sock=client.sock)
        if client.buffer:
            peer.data_received(client.buffer)
        return peer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.closed is None:
            self.closed = f"connection lost: {exc}"
        self.progress.event.set()

    async def close(self, timeout: float = 30.0) -> None:
        """connection.close and its close-ok (the broker has then let go of what it held)."""
        if self.transport is None or self.transport.is_closing():
            return
        self.send(method_frame(0, commands.Connection.Close(reply_code=200, reply_text="bye")))
        closed_ok = reply(commands.Connection.CloseOk)
        try:
            await self.progress.until(
                lambda: self.replies[closed_ok] > 0 or self.closed is not None,
                timeout,
                "connection.close-ok",
            )
        finally:
            self.transport.close()

    # ------------------------------------------------------------------ sending
    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def call(self, channel: int, method: Method, timeout: float = 60.0) -> None:
        """One synchronous method and its -ok (whichever reply its class and id name)."""
        await self.pipelined([method_frame(channel, method)], _ok_of(method), timeout)

    async def pipelined(self, frames: list[bytes], ok: bytes, timeout: float = 120.0) -> None:
        """Send `frames` in one write and wait for as many `ok` replies as there are frames."""
        wanted = self.replies[ok] + len(frames)
        self.send(b"".join(frames))
        await self.wait_replies(ok, wanted, timeout)

    async def wait_replies(self, ok: bytes, count: int, timeout: float = 120.0) -> None:
        await self.progress.until(
            lambda: self._check() and self.replies[ok] >= count, timeout, "reply"
        )

    def _check(self) -> bool:
        if self.closed is not None:
            raise BrokerClosed(self.closed)
        return True

    async def publish_confirmed(self, messages: list[bytes], window: int, timeout: float) -> None:
        """Publish in confirm mode (the channel must be in it), at most `window` unconfirmed;
        return once the last one is confirmed. Confirm tags count from this connection's first
        confirmed publish, so `confirmed` is carried across calls."""
        base = self.confirmed
        sent = 0
        total = len(messages)
        while self._check() and self.confirmed - base < total:
            room = min(total - sent, window - (sent - (self.confirmed - base)))
            if room > 0:
                self.send(b"".join(messages[sent : sent + room]))
                sent += room
            # on when half the window is free again (or when the last one is confirmed)
            target = base + (total if sent == total else sent - window // 2)
            await self.progress.until(
                lambda target=target: self._check() and self.confirmed >= target,
                timeout,
                "publisher confirm",
            )

    # ------------------------------------------------------------------ receiving
    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        offset = 0
        acks: list[bytes] = []
        size_of = len(buf)
        while size_of - offset >= 7:
            ftype, channel, size = _HEADER.unpack_from(buf, offset)
            if size_of - offset < size + 8:
                break
            if ftype == 1:
                key = bytes(buf[offset + 7 : offset + 11])
                if key == DELIVER:
                    self.delivered += 1
                    if self.acking:
                        start = offset + 7 + 4
                        tag = _TAG.unpack_from(buf, start + 1 + buf[start])[0]
                        acks.append(ack_frame(channel, tag))
                elif key == CONFIRM_ACK:
                    tag = _TAG.unpack_from(buf, offset + 11)[0]
                    self.confirmed = max(self.confirmed, tag)
                elif key == CONFIRM_NACK:
                    self.closed = "the broker nacked a publish"
                elif key in (CONNECTION_CLOSE, CHANNEL_CLOSE):
                    text_size = buf[offset + 13]
                    text = bytes(buf[offset + 14 : offset + 14 + text_size]).decode(
                        errors="replace"
                    )
                    self.closed = f"closed by the broker: {text}"
                else:
                    self.replies[key] += 1
            offset += size + 8
        del buf[:offset]
        if acks and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(acks))
        self.progress.event.set()


def _ok_of(method: Method) -> bytes:
    """The reply key of a synchronous method's -ok: the same class, the next method id."""
    return struct.pack(">I", method.index + 1)
