"""Moves bytes between a socket and a sans-IO AMQP 1.0 connection (rabbitish.bridge): reads feed
it, its output is written once per loop turn, and the idle time-outs are kept both ways: an
empty frame goes out whenever we were silent for half the peer's idle-time-out, and a peer
silent for our whole idle-time-out is closed with amqp:resource-limit-exceeded."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rabbitish.bridge.connection import Connection10, State
from rabbitish.config import Config
from rabbitish.engine.node import Node

log = logging.getLogger("rabbitish.amqp10")


class Amqp10ServerProtocol(asyncio.Protocol):
    def __init__(self, node: Node, config: Config, registry: set) -> None:
        self.node = node
        self.config = config
        self.registry = registry
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.conn: Connection10 | None = None
        self._flush_scheduled = False
        self._closed = False
        self._reads = self._writes = 0
        self._read_at_check = self._sent_at_check = -1
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._opened = False

    def take_over(
        self, transport: asyncio.Transport, header: bytes, rest: bytes, deadline: float
    ) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.conn = conn = Connection10(
            self.node, self.config, peer=str(peer), wake=self._schedule_flush
        )
        self.registry.add(self)
        self._later("handshake", max(0.0, deadline - self.loop.time()), self._handshake_timeout)
        conn.start(header, rest)
        self._after_input(conn)

    def data_received(self, data: bytes) -> None:
        self._reads += 1
        conn = self.conn
        assert conn is not None
        conn.receive(data)
        self._after_input(conn)

    def _after_input(self, conn: Connection10) -> None:
        self._flush()
        if not self._opened and conn.state is State.OPENED:
            self._opened = True
            timer = self._timers.pop("handshake", None)
            if timer is not None:
                timer.cancel()
            if conn.remote_idle_timeout_ms:
                self._later("send", conn.remote_idle_timeout_ms / 2000, self._send_heartbeat)
            if conn.idle_timeout_ms:
                self._later("recv", conn.idle_timeout_ms / 1000, self._check_input)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.registry.discard(self)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
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
        if data and not transport.is_closing():
            transport.write(data)
            self._writes += 1
        if conn.should_close and not transport.is_closing():
            transport.close()
            return
        if conn.links_starved and not conn.output_blocked:
            conn.output_drained()
            if conn.out_size:
                self._schedule_flush()

    # ------------------------------------------------------------------ timers
    def _later(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        if not self._closed:
            self._timers[name] = self.loop.call_later(delay, callback)

    def _handshake_timeout(self) -> None:
        self._timers.pop("handshake", None)
        if self.transport is not None and not self._opened:
            log.info("closing %s: handshake timeout", self.conn.peer if self.conn else "")
            self.transport.close()

    def _send_heartbeat(self) -> None:
        conn = self.conn
        if conn is None or self._closed:
            return
        if self._sent_at_check == self._writes and not conn.should_close:
            conn.heartbeat_frame()
            self._flush()
        self._sent_at_check = self._writes
        self._later("send", conn.remote_idle_timeout_ms / 2000, self._send_heartbeat)

    def _check_input(self) -> None:
        conn = self.conn
        if conn is None or self._closed:
            return
        if self._reads == self._read_at_check:
            log.warning("AMQP 1.0 client %s idle for %s ms", conn.peer, conn.idle_timeout_ms)
            conn._error("amqp:resource-limit-exceeded", "local-idle-timeout expired")
            self._flush()
            return
        self._read_at_check = self._reads
        self._later("recv", conn.idle_timeout_ms / 1000, self._check_input)

    def force_close(self, reply_code: int, text: str) -> None:
        conn = self.conn
        if conn is None or self._closed:
            return
        conn.server_close(reply_code, text)
        self._flush()
