"""What every front end's asyncio protocol does the same way: hold the sans-IO connection,
write its output once per loop turn, pass back-pressure both ways (the transport's pause/resume,
consumers held back while output piles up), keep named timers, and release everything when the
socket goes. Subclasses add their protocol's handshake and heartbeat rules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rabbitish.config import Config
from rabbitish.engine.node import Node


class SocketProtocol(asyncio.Protocol):
    def __init__(self, node: Node, config: Config, registry: set[Any]) -> None:
        self.node = node
        self.config = config
        self.registry = registry
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.conn: Any = None  # the front end's sans-IO connection
        self._flush_scheduled = False
        self._reads = 0  # data_received calls so far, for the idle checks
        self._writes = 0  # transport writes so far, for the heartbeat send check
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._closed = False

    def _adopt(
        self,
        transport: asyncio.Transport,
        make_conn: Callable[..., Any],
        deadline: float,
        on_handshake_timeout: Callable[[], None],
    ) -> Any:
        """Take the socket the listener hands over: build the sans-IO connection on it and
        start the handshake clock (`deadline`, loop time, counts from the accept)."""
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.conn = make_conn(self.node, self.config, peer=str(peer), wake=self._schedule_flush)
        self.registry.add(self)
        self._later("handshake", max(0.0, deadline - self.loop.time()), on_handshake_timeout)
        return self.conn

    # ------------------------------------------------------------------ asyncio callbacks
    def eof_received(self) -> bool | None:
        return None  # close our side too

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
        raise NotImplementedError

    def _write_output(self, conn: Any, transport: asyncio.Transport) -> None:
        """Write what the connection produced since the last flush, in one transport call."""
        self._flush_scheduled = False
        parts = conn.take_parts()
        if parts and not transport.is_closing():
            if len(parts) == 1:
                transport.write(parts[0])
            else:
                transport.writelines(parts)
            self._writes += 1

    def _resume_starved(self, conn: Any) -> None:
        """Consumers were held back while output piled up: now it went out, let them go on."""
        if conn.consumers_starved and not conn.output_blocked:
            conn.output_drained()
            if conn.out_size:
                self._schedule_flush()

    def _close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # ------------------------------------------------------------------ timers
    def _later(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        if not self._closed:
            self._timers[name] = self.loop.call_later(delay, callback)
