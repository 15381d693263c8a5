"""Ports for servers the tests start, without the race of "find a free port, close it, hope
nobody takes it before the server binds it".

A ReservedPort is a socket bound to port 0 with SO_REUSEADDR and never listening, kept open.
While it is held, Linux gives that port to no one who asks for a free one (binding port 0 or
connecting out), yet a server that sets SO_REUSEADDR itself can bind and listen on it: asyncio
servers (rabbitish's AMQP listener and management API) and RabbitMQ's listeners and Erlang
distribution all do. Hold the reservation until the server is ready, or for the server's whole
life when it restarts on the same port; nothing listening on it means connections are refused.
A server that can pick its own port (`rabbitish serve --port 0`) needs no reservation."""

from __future__ import annotations

import socket
from types import TracebackType

LOCALHOST = "127.0.0.1"


class ReservedPort:
    """A reserved TCP port on `host`; `release()` (or leaving the `with` block) frees it."""

    def __init__(self, host: str = LOCALHOST) -> None:
        self._sock: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind((host, 0))
        except OSError:
            self._sock.close()
            raise
        self.host = host
        self.port: int = self._sock.getsockname()[1]

    def release(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> ReservedPort:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self._sock is not None else "released"
        return f"ReservedPort({self.host}:{self.port}, {state})"
