"""A raw AMQP 0-9-1 client over a plain socket, for tests that must send what no client library
would: malformed frames, wrong frame types, oversized frames. Frames are built with pamqp."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from pamqp import commands, frame, header, heartbeat
from pamqp.base import Frame as Method

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_END = b"\xce"


@dataclass
class Closed:
    """How the peer ended things: the close method it sent (if any) and on which channel."""

    channel: int
    reply_code: int
    reply_text: str
    class_id: int
    method_id: int

    @property
    def scope(self) -> str:
        return "connection" if self.channel == 0 else "channel"


def host_port(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or 5672


def raw_frame(ftype: int, channel: int, payload: bytes, end: bytes = FRAME_END) -> bytes:
    """Any frame, including ones pamqp would refuse to build."""
    return struct.pack(">BHI", ftype, channel, len(payload)) + payload + end


def method_frame(channel: int, method: Method) -> bytes:
    return frame.marshal(method, channel)


def content_header_frame(channel: int, body_size: int, **props: Any) -> bytes:
    from pamqp.commands import Basic

    return frame.marshal(header.ContentHeader(0, body_size, Basic.Properties(**props)), channel)


def heartbeat_frame(channel: int = 0) -> bytes:
    if channel == 0:
        return frame.marshal(heartbeat.Heartbeat(), 0)
    return raw_frame(8, channel, b"")


@dataclass
class CloseMethod:
    """connection.close / channel.close decoded by hand: the reply text may hold bytes that are
    not UTF-8 (RabbitMQ prints binaries byte by byte), which pamqp refuses to decode. Undecodable
    bytes are kept as surrogate escapes so comparisons stay byte-exact."""

    name: str
    reply_code: int
    reply_text: str
    class_id: int
    method_id: int


_CLOSE_NAMES = {(10, 50): "Connection.Close", (20, 40): "Channel.Close"}


def _unmarshal(raw: bytes) -> tuple[int, Any]:
    ftype, channel = raw[0], struct.unpack_from(">H", raw, 1)[0]
    if ftype == 1 and len(raw) >= 14:
        ids = struct.unpack_from(">HH", raw, 7)
        if ids in _CLOSE_NAMES:
            (code,) = struct.unpack_from(">H", raw, 11)
            size = raw[13]
            text = raw[14 : 14 + size].decode("utf-8", "surrogateescape")
            class_id, method_id = struct.unpack_from(">HH", raw, 14 + size)
            return channel, CloseMethod(_CLOSE_NAMES[ids], code, text, class_id, method_id)
    _, channel, value = frame.unmarshal(raw)
    return channel, value


class RawClient:
    """A socket speaking just enough AMQP to get to an open connection, then anything."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url
        self.sock = socket.create_connection(host_port(url), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.pending: list[tuple[int, Any]] = []
        self.tune: commands.Connection.Tune | None = None
        self.start: commands.Connection.Start | None = None

    # ------------------------------------------------------------------ io
    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_method(self, channel: int, method: Method) -> None:
        self.send(method_frame(channel, method))

    def recv_bytes(self, timeout: float = 5.0) -> bytes:
        """Whatever arrives next (b"" when the peer closed)."""
        self.sock.settimeout(timeout)
        return self.sock.recv(65536)

    def read_raw_frame(self, timeout: float = 5.0) -> tuple[int, int, bytes] | None:
        """The next frame undecoded: (type, channel, payload), or None once the peer closed."""
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buffer) >= 7:
                ftype, channel, size = struct.unpack_from(">BHI", self.buffer)
                if len(self.buffer) >= size + 8:
                    payload = self.buffer[7 : 7 + size]
                    self.buffer = self.buffer[size + 8 :]
                    return ftype, channel, payload
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame within timeout")
            try:
                chunk = self.recv_bytes(remaining)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            self.buffer += chunk

    def read_frame(self, timeout: float = 5.0) -> tuple[int, Any] | None:
        """The next frame as (channel, pamqp object), or None once the peer closed the socket."""
        if self.pending:
            return self.pending.pop(0)
        raw = self.read_raw_frame(timeout)
        if raw is None:
            return None
        ftype, channel, payload = raw
        return _unmarshal(struct.pack(">BHI", ftype, channel, len(payload)) + payload + FRAME_END)

    def expect(self, name: str, timeout: float = 5.0) -> Any:
        """Read frames until a method named `name` (pamqp name, e.g. 'Channel.OpenOk')."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.read_frame(max(0.01, deadline - time.monotonic()))
            if got is None:
                raise ConnectionError(f"socket closed while waiting for {name}")
            _, value = got
            if getattr(value, "name", "") == name:
                return value

    def wait_closed(self, timeout: float = 5.0, answer: bool = True) -> Closed | None:
        """Read until the broker sends connection.close or channel.close (answering with close-ok
        when `answer`); None when the socket just closed without one."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.read_frame(max(0.01, deadline - time.monotonic()))
            if got is None:
                return None
            channel, value = got
            name = getattr(value, "name", "")
            if name in ("Connection.Close", "Channel.Close"):
                if answer:
                    reply: Method = (
                        commands.Connection.CloseOk()
                        if name == "Connection.Close"
                        else commands.Channel.CloseOk()
                    )
                    try:
                        self.send_method(channel, reply)
                    except OSError:
                        pass
                return Closed(
                    channel, value.reply_code, value.reply_text, value.class_id, value.method_id
                )

    def socket_closed(self, timeout: float = 5.0) -> bool:
        """True once the peer closes the socket (reads drain anything it still sends)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if not self.recv_bytes(max(0.01, deadline - time.monotonic())):
                    return True
            except TimeoutError:
                return False
            except ConnectionResetError:
                return True
        return False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ handshake
    def handshake(
        self,
        *,
        heartbeat: int | None = None,
        frame_max: int | None = None,
        channel_max: int | None = None,
        vhost: str | None = None,
        mechanism: str = "PLAIN",
        response: bytes | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> RawClient:
        """Header, start-ok, tune-ok (echoing the server's values unless told), open."""
        parsed = urlparse(self.url)
        user, password = unquote(parsed.username or "guest"), unquote(parsed.password or "guest")
        self.send(PROTOCOL_HEADER)
        self.start = self.expect("Connection.Start")
        if response is None:
            response = f"\0{user}\0{password}".encode()
        caps = {"authentication_failure_close": True} if capabilities is None else capabilities
        self.send_method(
            0,
            commands.Connection.StartOk(
                client_properties={"product": "raw-test", "capabilities": caps},
                mechanism=mechanism,
                response=response.decode("latin-1"),
                locale="en_US",
            ),
        )
        got = self.read_frame()
        if got is None:
            return self  # closed on us: the caller sees it on the next read
        if getattr(got[1], "name", "") != "Connection.Tune":
            self.pending.append(got)
            return self  # e.g. connection.close for bad credentials: the caller inspects
        self.tune = got[1]
        self.send_method(
            0,
            commands.Connection.TuneOk(
                channel_max=self.tune.channel_max if channel_max is None else channel_max,
                frame_max=self.tune.frame_max if frame_max is None else frame_max,
                heartbeat=0 if heartbeat is None else heartbeat,
            ),
        )
        target = unquote(parsed.path[1:]) if parsed.path and parsed.path != "/" else "/"
        self.send_method(
            0, commands.Connection.Open(virtual_host=target if vhost is None else vhost)
        )
        return self

    def open(self, **kwargs: Any) -> RawClient:
        """Handshake and wait for open-ok."""
        self.handshake(**kwargs)
        self.expect("Connection.OpenOk")
        return self

    def open_channel(self, channel: int = 1) -> None:
        self.send_method(channel, commands.Channel.Open())
        self.expect("Channel.OpenOk")
