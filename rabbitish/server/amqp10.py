"""Moves bytes between a socket and a sans-IO AMQP 1.0 connection (rabbitish.bridge): reads feed
it, its output is written once per loop turn, and the idle time-outs are kept both ways: an
empty frame goes out whenever we were silent for half the peer's idle-time-out, and a peer
silent for two of our idle-time-outs is closed with amqp:resource-limit-exceeded (the spec asks
a peer to announce half its real threshold, and clients such as qpid-proton send at about the
announced interval, so closing after one would drop live peers). A silent peer that does not
read either (half-open: gone without a FIN) is aborted rather than left holding the socket.
Under a resource alarm a connection that sent a transfer is read no more until the alarms clear
(socket_protocol.py), as 0-9-1 publishers are."""

from __future__ import annotations

import asyncio
import logging

from rabbitish.bridge.connection import Connection10, State
from rabbitish.server.socket_protocol import SocketProtocol

log = logging.getLogger("rabbitish.amqp10")


class Amqp10ServerProtocol(SocketProtocol, asyncio.Protocol):
    """One per AMQP 1.0 connection, from the listener's hand-over on (`take_over`)."""

    conn: Connection10 | None
    logger = log

    def take_over(
        self, transport: asyncio.Transport, header: bytes, rest: bytes, deadline: float
    ) -> None:
        conn = self._adopt(transport, Connection10, deadline)
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
        if not self._handshake_done and conn.state is State.OPENED:
            self._handshake_finished()
            self._start_heartbeats(
                send_every=conn.remote_idle_timeout_ms / 2000,
                first_tick_sends=False,
                check_every=conn.idle_timeout_ms / 1000,
                silent_checks=2,
            )

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

    def _peer_silent(self, conn: Connection10) -> None:
        log.warning("AMQP 1.0 client %s idle for %s ms", conn.peer, conn.idle_timeout_ms)
        conn.idle_timed_out()
        self._flush()
        transport = self.transport
        if transport is not None and transport.get_write_buffer_size():
            self._abort()  # it reads nothing either: the close would never be taken

    def force_close(self, reply_code: int, text: str) -> None:
        conn = self.conn
        if conn is None or self._closed:
            return
        conn.server_close(reply_code, text)
        self._flush()
