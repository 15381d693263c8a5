"""The management ports accept from the start, before the API is loaded. The broker opens these
ports at once, serves AMQP, and only then loads the API and its HTTP server: a connection
accepted meanwhile waits, holding what it sent, and is handed to the HTTP server's connection
handler once it is there (as `HeaderSniffer` hands a socket to a front end). A script that sees
the AMQP port open may call the API at once: its request is answered, a moment later, instead
of refused."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import cast

HandlerFactory = Callable[[], asyncio.Protocol]


class EarlyListener:
    """One port (`open()` binds it and accepts at once); `serve(factory)` gives it the HTTP
    handler factory, hands it the connections accepted so far, and every later connection
    goes straight to it."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._factory: HandlerFactory | None = None
        self._waiting: set[WaitingConnection] = set()

    async def open(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Listen on host:port (0: any free port); raises OSError when it cannot be bound."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._accept, host or None, port, reuse_address=True, ssl=ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def waiting(self) -> int:
        """Connections accepted and waiting for the handler."""
        return len(self._waiting)

    def serve(self, factory: HandlerFactory) -> None:
        self._factory = factory
        waiting, self._waiting = self._waiting, set()
        for connection in waiting:
            connection.hand_over(factory())

    def stop_accepting(self) -> None:
        """No new connections; those waiting for a handler that never came are closed."""
        if self._server is not None:
            self._server.close()
        waiting, self._waiting = self._waiting, set()
        for connection in waiting:
            connection.close()

    async def close(self) -> None:
        self.stop_accepting()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def _accept(self) -> asyncio.Protocol:
        if self._factory is not None:
            return self._factory()
        return WaitingConnection(self._waiting)


class WaitingConnection(asyncio.Protocol):
    """A connection accepted before the handler was loaded: keeps its bytes (and an end of
    input) for the handler it is handed to."""

    def __init__(self, waiting: set[WaitingConnection]) -> None:
        self._waiting = waiting
        self._transport: asyncio.Transport | None = None
        self._received: list[bytes] = []
        self._eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio's
        self._waiting.add(self)

    def data_received(self, data: bytes) -> None:
        self._received.append(data)

    def eof_received(self) -> bool:
        self._eof = True
        return True  # keep our side open: the request that came before it gets its answer

    def connection_lost(self, exc: Exception | None) -> None:
        self._waiting.discard(self)
        self._transport = None

    def hand_over(self, handler: asyncio.Protocol) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.set_protocol(handler)
        handler.connection_made(transport)
        for data in self._received:
            handler.data_received(data)
        self._received.clear()
        if self._eof:
            handler.eof_received()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
