"""The management port accepts before the API is loaded: what a connection sends meanwhile
reaches the handler it is handed to, and later connections go straight to the handler."""

from __future__ import annotations

import asyncio

from rabbitish.management.listener import EarlyListener
from tests.support.waiting import wait_until_async


class Echo(asyncio.Protocol):
    """Answers every chunk with itself, upper-cased; notes an end of input."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data.upper())

    def eof_received(self) -> None:
        assert self.transport is not None
        self.transport.write(b"<eof>")
        self.transport.close()


async def test_a_connection_accepted_early_is_handed_over_with_what_it_sent():
    listener = EarlyListener()
    port = await listener.open("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"get /api/overview")
        writer.write_eof()
        await writer.drain()
        await wait_until_async(lambda: listener.waiting == 1, timeout=5)
        listener.serve(Echo)
        assert await asyncio.wait_for(reader.read(), 5) == b"GET /API/OVERVIEW<eof>"
        writer.close()
        # a later connection goes straight to the handler
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"again")
        assert await asyncio.wait_for(reader.readexactly(5), 5) == b"AGAIN"
        writer.close()
    finally:
        await listener.close()


async def test_closing_before_a_handler_came_closes_the_waiting_connections():
    listener = EarlyListener()
    port = await listener.open("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"waiting")
    await writer.drain()
    await wait_until_async(lambda: listener.waiting == 1, timeout=5)
    await listener.close()
    try:  # closed with what it sent unread or read: an RST or an end of input
        answer = await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        answer = b""
    assert answer == b""
    writer.close()
