"""Moves bytes between a socket and a sans-IO AMQP 1.0 connection (rabbitish.bridge): reads feed
it, its output is written once per loop turn, and the idle time-outs are kept both ways: an
empty frame goes out whenever we were silent for half the peer's idle-time-out, and a peer
silent for our whole idle-time-out is closed with amqp:resource-limit-exceeded. Under a resource
alarm a connection that sent a transfer is read no more until the alarms clear
(socket_protocol.py), as 0-9-1 publishers are."""

from __future__ import annotations

import asyncio
import logging

from rabbitish.bridge.connection import Connection10, State
from rabbitish.config import Config
from rabbitish.engine.node import Node
from rabbitish.server.socket_protocol import ClientSocket, SocketProtocol

log = logging.getLogger("rabbitish.amqp10")


class Amqp10ServerProtocol(SocketProtocol):
    """One per AMQP 1.0 connection, from the listener's hand-over on (`take_over`)."""

    conn: Connection10 | None

    def __init__(self, node: Node, config: Config, registry: set[ClientSocket]) -> None:
        super().__init__(node, config, registry)
        self._read_at_check = self._sent_at_check = -1
        self._opened = False

    def take_over(
        self, transport: asyncio.Transport, header: bytes, rest: bytes, deadline: float
    ) -> None:
        conn = self._adopt(transport, Connection10, deadline, self._handshake_timeout)
        conn.start(header, rest)
        self._after_input(conn)

    def data_received(self, data: bytes) -> None:
        stats = self.stats
        stats.recv_cnt += 1
        stats.recv_oct += len(data)
        conn = self.conn
        assert conn is not None
        self._receive(conn, data)
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

    def _flush(self) -> None:
        conn, transport = self.conn, self.transport
        if conn is None or transport is None or self._closed:
            self._flush_scheduled = False
            return
        self._write_output(conn, transport)
        if conn.should_close:
            self._close_transport()
            return
        self._resume_starved(conn)

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
        if self._reads == self._read_at_check and not self._blocked:  # blocked: we stopped reading
            log.warning("AMQP 1.0 client %s idle for %s ms", conn.peer, conn.idle_timeout_ms)
            conn.idle_timed_out()
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
