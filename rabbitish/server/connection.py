"""Moves bytes between a socket and a sans-IO protocol Connection: reads feed it, its output is
written in one batch per loop turn, heartbeats are sent and missed ones close the socket."""

from __future__ import annotations

import asyncio
import logging

from rabbitish.config import Config
from rabbitish.engine.node import Node
from rabbitish.protocol.connection import Connection, State
from rabbitish.protocol.framing import PROTOCOL_HEADER

log = logging.getLogger("rabbitish.connection")

AMQP10_HEADERS = (b"AMQP\x03\x01\x00\x00", b"AMQP\x00\x01\x00\x00")


class AmqpServerProtocol(asyncio.Protocol):
    """One per TCP connection."""

    def __init__(self, node: Node, config: Config, registry: set[AmqpServerProtocol]) -> None:
        self.node = node
        self.config = config
        self.registry = registry
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.conn: Connection | None = None
        self._flush_scheduled = False
        self._last_read = 0.0
        self._last_write = 0.0
        self._heartbeat_timer: asyncio.TimerHandle | None = None
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._closed = False

    # ------------------------------------------------------------------ asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.conn = Connection(self.node, self.config, peer=str(peer), wake=self._schedule_flush)
        self.registry.add(self)
        self._last_read = self._last_write = self.loop.time()
        self._handshake_timer = self.loop.call_later(
            self.config.handshake_timeout, self._handshake_timeout
        )

    def data_received(self, data: bytes) -> None:
        conn = self.conn
        assert conn is not None
        self._last_read = self.loop.time()
        was_open = conn.state is State.OPEN
        conn.receive(data)
        self._flush()
        if not was_open and conn.state is State.OPEN:
            self._handshake_done()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.registry.discard(self)
        for timer in (self._heartbeat_timer, self._handshake_timer):
            if timer is not None:
                timer.cancel()
        if self.conn is not None:
            self.conn.lost()

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.paused = True

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.conn.paused = False
            self.conn.output_drained()
            self._flush()

    # ------------------------------------------------------------------ output
    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and not self._closed:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        conn, transport = self.conn, self.transport
        if conn is None or transport is None or self._closed:
            return
        data = conn.take_output()
        if data:
            transport.write(data)
            self._last_write = self.loop.time()
        if conn.should_close:
            self._close_transport()
            return
        if conn.consumers_starved and not conn.output_blocked:
            conn.output_drained()
            if conn.out_size:
                self._schedule_flush()

    def _close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # ------------------------------------------------------------------ timers
    def _handshake_timeout(self) -> None:
        self._handshake_timer = None
        if self.conn is not None and self.conn.state is not State.OPEN:
            log.info("closing %s: handshake timeout", self.conn.peer)
            self._close_transport()

    def _handshake_done(self) -> None:
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        assert self.conn is not None
        if self.conn.heartbeat:
            self._heartbeat_timer = self.loop.call_later(self.conn.heartbeat / 2, self._heartbeat)

    def _heartbeat(self) -> None:
        conn = self.conn
        if conn is None or self._closed or not conn.heartbeat:
            return
        now = self.loop.time()
        if now - self._last_read > 2 * conn.heartbeat:
            log.warning("missed heartbeats from client %s, timeout: %ss", conn.peer, conn.heartbeat)
            conn.lost()
            if self.transport is not None:
                self.transport.abort()
            return
        if now - self._last_write >= conn.heartbeat / 2:
            conn.heartbeat_frame()
            self._flush()
        self._heartbeat_timer = self.loop.call_later(conn.heartbeat / 2, self._heartbeat)

    # ------------------------------------------------------------------ shutdown
    def force_close(self, reply_code: int, text: str) -> None:
        """Broker shutdown: connection.close to the client, then drop the socket."""
        if self.conn is not None and not self._closed:
            self.conn.server_close(reply_code, text)
            self._flush()


def is_amqp10(header: bytes) -> bool:
    return header in AMQP10_HEADERS


__all__ = ["PROTOCOL_HEADER", "AmqpServerProtocol"]
