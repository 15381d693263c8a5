"""A raw AMQP 1.0 client socket for tests of what no client library sends: frames out, decoded
frames in."""

from __future__ import annotations

import socket

from rabbitish.bridge.codec import (
    AMQP_HEADER,
    FRAME_SASL,
    SASL_HEADER,
    FrameReader,
    Symbol,
    encode_frame,
)
from rabbitish.bridge.codec.definitions import Open, SaslInit, SaslMechanisms, SaslOutcome

from tests.support.raw_amqp import host_port


class Raw:
    """A raw AMQP 1.0 client socket: frames out, decoded frames in."""

    def __init__(self, url: str) -> None:
        self.sock = socket.create_connection(host_port(url), timeout=5)
        self.reader = FrameReader(1 << 20)
        self.pending: list = []
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def header(self) -> bytes:
        while len(self.buffer) < 8:
            self._read()
        header, self.buffer = self.buffer[:8], self.buffer[8:]
        return header

    def frame(self):
        while not self.pending:
            data, self.buffer = self.buffer, b""
            self.pending.extend(self.reader.feed(data))
            if not self.pending:
                self._read()
        return self.pending.pop(0)

    def closed(self) -> bool:
        """True once the broker closed the socket (reads until then)."""
        try:
            while self.sock.recv(4096):
                pass
        except ConnectionResetError:
            pass
        return True

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("socket closed")
        self.buffer += chunk

    def sasl_plain(self, user: str = "guest", password: str = "guest") -> SaslOutcome:
        self.send(SASL_HEADER)
        assert self.header() == SASL_HEADER
        mechanisms = self.frame().body
        assert isinstance(mechanisms, SaslMechanisms)
        response = b"\x00" + user.encode() + b"\x00" + password.encode()
        init = SaslInit(mechanism=Symbol("PLAIN"), initial_response=response)
        self.send(encode_frame(0, init, frame_type=FRAME_SASL))
        return self.frame().body

    def open(self, **fields) -> Open:
        self.send(AMQP_HEADER)
        assert self.header() == AMQP_HEADER
        self.send(encode_frame(0, Open(container_id="raw", **fields)))
        opened = self.frame().body
        assert isinstance(opened, Open)
        return opened

    def close(self) -> None:
        self.sock.close()


def proton_url(amqp_url: str) -> str:
    """The broker's 1.0 URL for qpid-proton (same port, guest, no vhost path)."""
    host, port = host_port(amqp_url)
    return f"amqp://guest:guest@{host}:{port}"
