"""Moves bytes between a socket and a sans-IO 0-9-1 protocol Connection: reads feed it, its
output is written in one batch per loop turn, heartbeats are sent and missed ones close the
socket. It takes a connection over from the listener once the protocol header chose 0-9-1.

Timers follow RabbitMQ: once tuned, a heartbeat goes out every heartbeat/2 seconds in which
nothing else was sent, and a peer silent for two consecutive heartbeat periods is dropped. After
our connection.close the peer gets heartbeat seconds (at most 30) to answer close-ok; after we
answered its connection.close, as long to hang up. After a frame error or a silent refusal
nothing more is read, and the peer gets 3 s to hang up on its own before the socket closes: the
socket is never closed under a client still sending (that would reset the connection and
could destroy the close method before the client read it).

Under a resource alarm a connection that publishes is blocked (socket_protocol.py); if the client
announced the `connection.blocked` capability it gets connection.blocked with the reason, and
connection.unblocked when the last alarm clears. Missed heartbeats do not count while
blocked (RabbitMQ pauses its heartbeat monitor the same way)."""

from __future__ import annotations

import asyncio
import logging

from pamqp import commands

from rabbitish.config import Config
from rabbitish.engine.node import Node
from rabbitish.protocol.connection import Connection
from rabbitish.protocol.handshake import SILENT_CLOSE_DELAY
from rabbitish.protocol.states import TUNED_STATES, ConnectionState
from rabbitish.server.socket_protocol import ClientSocket, SocketProtocol

log = logging.getLogger("rabbitish.connection")

CLOSING_TIMEOUT = 30.0  # longest wait for close-ok (RabbitMQ's ?CLOSING_TIMEOUT)
LINGER = SILENT_CLOSE_DELAY  # after a frame error or a silent refusal
_OPEN = ConnectionState.OPEN
_WAITING_FOR_PEER = frozenset({ConnectionState.CLOSING, ConnectionState.ANSWERED})


# Where a connection's reads go unless a large body frame takes them (protocol/framing.py):
# one buffer for the process, since each read is taken out of it before the next is made.
READ_SIZE = 256 * 1024
_read_scratch = memoryview(bytearray(READ_SIZE))


class AmqpServerProtocol(SocketProtocol, asyncio.BufferedProtocol):
    """One per 0-9-1 connection, from the listener's hand-over on (`take_over`).

    It reads into buffers it hands the transport (asyncio's BufferedProtocol), so a large
    body frame's bytes go from the socket straight into the frame's own buffer, not first into
    bytes the event loop makes of every read."""

    conn: Connection | None
    logger = log

    def __init__(self, node: Node, config: Config, registry: set[ClientSocket]) -> None:
        super().__init__(node, config, registry)
        self._tuned = False
        self._discard_input = False
        self._blocked_sent = False  # ...and the client was told with connection.blocked

    # ------------------------------------------------------------------ asyncio callbacks
    def take_over(
        self, transport: asyncio.Transport, header: bytes, rest: bytes, deadline: float
    ) -> None:
        """The listener read a 0-9-1 (or 0-9) header and handed the socket over: answer
        connection.start, then read what came after the header. `deadline` (loop time) ends
        the handshake, counted from the accept."""
        conn = self._adopt(transport, Connection, deadline)
        conn.start(rest)
        self._after_input(conn)

    def get_buffer(self, sizehint: int) -> memoryview:
        conn = self.conn
        if conn is None or self._discard_input:
            return _read_scratch
        return conn.read_buffer(_read_scratch)

    def buffer_updated(self, nbytes: int) -> None:
        stats = self.stats
        stats.recv_cnt += 1
        stats.recv_oct += nbytes
        if self._discard_input:
            return
        conn = self.conn
        assert conn is not None
        before = self._input_starts(conn)
        conn.received(nbytes)
        self._input_ended(conn, before)
        self._after_input(conn)

    # ------------------------------------------------------------------ alarms
    def _blocked_now(self, conn: Connection) -> None:
        if conn.capabilities.get("connection.blocked") and conn.state is _OPEN:
            conn.send_method(0, commands.Connection.Blocked(self.node.alarms.reason or ""))
            self._blocked_sent = True

    def _unblocked(self, conn: Connection) -> None:
        if self._blocked_sent:
            self._blocked_sent = False
            conn.send_method(0, commands.Connection.Unblocked())
            self._flush()

    def _after_input(self, conn: Connection) -> None:
        self._flush()
        if not self._handshake_done:
            if not self._tuned and conn.state in TUNED_STATES:
                self._tuned_now(conn)
            if conn.state is _OPEN:
                self._handshake_finished()

    # ------------------------------------------------------------------ output
    def _flush(self) -> None:
        conn, transport = self.conn, self.transport
        if conn is None or transport is None or self._closed:
            self._flush_scheduled = False
            return
        self._write_output(conn, transport)
        if conn.should_close:
            self._finish(conn, transport)
            return
        if conn.state in _WAITING_FOR_PEER and "closing" not in self._timers:
            wait = conn.heartbeat if 0 < conn.heartbeat < CLOSING_TIMEOUT else CLOSING_TIMEOUT
            if conn.close_wait is not None:
                wait = conn.close_wait
            self._later("closing", wait, self._close_transport)
        self._resume_starved(conn)

    def _finish(self, conn: Connection, transport: asyncio.Transport) -> None:
        """The protocol is done with the socket: close it, or (`linger`) read and drop what
        still comes for a moment so the peer can read our last words and hang up first."""
        if self._discard_input:
            return  # already lingering
        if not conn.linger:
            self._close_transport()
            return
        self._discard_input = True
        self._later("linger", LINGER, self._abort)

    def _tuned_now(self, conn: Connection) -> None:
        """tune-ok arrived: heartbeats start (RabbitMQ starts them here, before open). As with
        RabbitMQ, the first send tick always sends, and the second heartbeat period in a row
        without input drops the peer."""
        self._tuned = True
        if conn.heartbeat:
            self._start_heartbeats(
                send_every=conn.heartbeat / 2,
                first_tick_sends=True,
                check_every=conn.heartbeat,
                silent_checks=2,
            )

    def _peer_silent(self, conn: Connection) -> None:
        log.warning("missed heartbeats from client %s, timeout: %ss", conn.peer, conn.heartbeat)
        conn.lost()
        self._abort()

    # ------------------------------------------------------------------ shutdown
    def force_close(self, reply_code: int, text: str) -> None:
        """Broker shutdown: connection.close to an open connection (its close-ok ends it);
        a connection still in the handshake or already closing just goes."""
        conn = self.conn
        if conn is None or self._closed:
            return
        if conn.state is _OPEN and not conn.should_close:
            conn.server_close(reply_code, text)
            self._flush()
        elif self.transport is not None:
            self.transport.close()
