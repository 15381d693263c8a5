"""What every front end's asyncio protocol does the same way: hold the sans-IO connection,
write its output once per loop turn, pass back-pressure both ways (the transport's pause/resume,
consumers held back while output piles up), keep named timers (the handshake's deadline, the
heartbeats both ways, by the rules of frontend/heartbeats.py), block publishers under a resource
alarm, and release everything when the socket goes. Subclasses say when their protocol's
handshake is done, start the heartbeats with its intervals and answer a silent peer its way.

Under a resource alarm (engine/alarms.py: memory, disk, store writes failing) a connection that
publishes is blocked as RabbitMQ blocks it: after the read that carried the publish, nothing more
is read until the last alarm clears. Connections that only consume keep reading, so their acks
still free the queues. A 0-9-1 connection also tells its client (connection.blocked); an AMQP 1.0
sender just sees its transfers go unread, so its window and credit run out (RabbitMQ 4's native
1.0 stops granting credit; 3.10's 1.0 plugin was not blocked at all)."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from rabbitish.config import Config
from rabbitish.engine.auth import Peer
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import SocketStats
from rabbitish.frontend.heartbeats import IdleCheck, SendCheck
from rabbitish.frontend.output import Chunk
from rabbitish.tls import COMMON_NAME, certificate_user

FLUSH_ON_CLOSE = 30.0  # seconds a closing socket's output may take (RabbitMQ's ?CLOSING_TIMEOUT)
LARGE_OUTPUT = 256 * 1024  # bytes in one flush from which its pieces are not joined first
LARGE_PIECE = 16 * 1024  # a piece of such a flush written as it is (a body or a view of one)


def peer_info(transport: asyncio.BaseTransport, login_from: str = COMMON_NAME) -> Peer:
    """The client's address and, on a TLS socket, the user its certificate names (only a
    certificate the CA bundle verified is reported by the ssl module)."""
    peername = transport.get_extra_info("peername")
    address = peername[0] if isinstance(peername, tuple) and peername else ""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return Peer(str(address))
    cert_auth = ssl_object.context.verify_mode != ssl.CERT_NONE
    user = certificate_user(ssl_object.getpeercert() or {}, login_from)
    return Peer(str(address), tls=True, cert_auth=cert_auth, cert_user=user)


class ClientSocket(Protocol):
    """One client socket in the broker's registry: a `HeaderSniffer` until its protocol header
    chose a front end, then that front end's protocol. The broker tells them of alarms and
    closes them at shutdown."""

    transport: asyncio.Transport | None

    def alarms_changed(self) -> None:
        """The node's alarms changed: lift a publisher's block once none is left."""
        ...

    def force_close(self, reply_code: int, text: str) -> None:
        """Broker shutdown: close, telling the client why if its protocol can."""
        ...


def socket_address(address: object) -> tuple[str, int]:
    """(host, port) of a TCP socket address (IPv4 or IPv6); ("", 0) for anything else."""
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return "", 0


def unjoined(parts: list[Chunk]) -> Iterator[Chunk]:
    """Large output in the pieces it is best written in: large ones (bodies, or views of a body
    split into frames) as they are, the small ones between them joined."""
    small: list[Chunk] = []
    for part in parts:
        if len(part) < LARGE_PIECE:
            small.append(part)
            continue
        if small:
            yield b"".join(small)
            small.clear()
        yield part
    if small:
        yield b"".join(small)


class SocketWrites:
    """Socket writes by every connection of this process: the busy-waiting selector
    (server/busy_wait.py) polls only after a loop turn that wrote one."""

    count = 0


class SocketProtocol(asyncio.BaseProtocol):
    """The shared part; a front end's protocol adds how it reads (asyncio.Protocol's
    data_received, or asyncio.BufferedProtocol's get_buffer and buffer_updated)."""

    logger = logging.getLogger("rabbitish.server")  # each protocol logs under its own name

    def __init__(self, node: Node, config: Config, registry: set[ClientSocket]) -> None:
        self.node = node
        self.config = config
        self.registry = registry
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.conn: Any = None  # the front end's sans-IO connection
        self._flush_scheduled = False
        # Reads, writes and bytes each way: the idle checks and management read them. The
        # connection is handed this record, so the contract reads what is counted here.
        self.stats = SocketStats(connected_at=int(time.time() * 1000))
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._closed = False
        self._blocked = False  # reads paused under an alarm
        self._handshake_done = False
        self._send_check: SendCheck | None = None  # heartbeats, once started
        self._send_every = 0.0
        self._idle_check: IdleCheck | None = None
        self._check_every = 0.0
        # Output of large flushes not yet handed to the transport because it asked us to pause.
        self._backlog: deque[Chunk] = deque()

    def _adopt(
        self,
        transport: asyncio.Transport,
        make_conn: Callable[..., Any],
        deadline: float,
    ) -> Any:
        """Take the socket the listener hands over: build the sans-IO connection on it and
        start the handshake clock (`deadline`, loop time, counts from the accept)."""
        self.transport = transport
        peer = transport.get_extra_info("peername")
        stats = self.stats
        stats.peer_host, stats.peer_port = socket_address(peer)
        stats.host, stats.port = socket_address(transport.get_extra_info("sockname"))
        self.conn = make_conn(self.node, self.config, peer=str(peer), wake=self._schedule_flush)
        self.conn.peer_info = peer_info(transport, self.config.ssl_cert_login_from)
        self.conn.socket = stats
        self.registry.add(self)
        self._later("handshake", max(0.0, deadline - self.loop.time()), self._handshake_timeout)
        return self.conn

    @property
    def _reads(self) -> int:
        """data_received calls so far, for the idle checks."""
        return self.stats.recv_cnt

    @property
    def _writes(self) -> int:
        """Transport writes so far, for the heartbeat send check."""
        return self.stats.send_cnt

    def _handshake_timeout(self) -> None:
        self._timers.pop("handshake", None)
        if self.conn is not None and not self._handshake_done:
            self.logger.info("closing %s: handshake timeout", self.conn.peer)
            self._close_transport()

    def _handshake_finished(self) -> None:
        """The connection is open: the handshake's clock stops."""
        self._handshake_done = True
        timer = self._timers.pop("handshake", None)
        if timer is not None:
            timer.cancel()

    # ------------------------------------------------------------------ asyncio callbacks
    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.registry.discard(self)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._backlog.clear()
        if self.conn is not None:
            self.conn.lost()

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.paused = True

    def resume_writing(self) -> None:
        conn = self.conn
        if conn is not None:
            conn.paused = False
            if self._backlog and self.transport is not None:
                self._write_backlog(conn, self.transport)
                if conn.paused:
                    return
            conn.output_drained()
            self._flush()

    # ------------------------------------------------------------------ alarms
    def _receive(self, conn: Any, data: bytes) -> None:
        """Feed `data` to the connection; under an alarm, block it if it published."""
        before = self._input_starts(conn)
        conn.receive(data)
        self._input_ended(conn, before)

    def _input_starts(self, conn: Any) -> int:
        """Input is about to go to the connection: under an alarm, its vhost's publishes so
        far (-1 without an alarm), for `_input_ended`.

        The caller flushes right after (`_after_input`), so output made meanwhile must not
        also queue a flush for the next loop turn: that turn would cost a whole extra poll of
        the selector on every round trip (marked as scheduled, `wake` leaves it be)."""
        self._flush_scheduled = True
        vhost = conn.vhost
        if vhost is None or not self.node.alarms.active:
            return -1
        publishes: int = vhost.publishes
        return publishes

    def _input_ended(self, conn: Any, before: int) -> None:
        """The input went in: under an alarm, block the connection if it published."""
        if before >= 0 and conn.vhost.publishes != before:
            self._block(conn)

    def alarms_changed(self) -> None:
        """The node's alarms changed: lift the block once none is left."""
        conn = self.conn
        if self._blocked and not self.node.alarms.active and conn is not None:
            self._blocked = False
            self._unblocked(conn)
            if self.transport is not None and not self._closed:
                self.transport.resume_reading()

    def _block(self, conn: Any) -> None:
        """A publish arrived under an alarm: read nothing more until the alarms clear."""
        if self._blocked or self._closed or self.transport is None:
            return
        self._blocked = True
        self.transport.pause_reading()
        self._blocked_now(conn)

    def _blocked_now(self, conn: Any) -> None:
        """Tell the client it is blocked, if its protocol has a way."""

    def _unblocked(self, conn: Any) -> None:
        """Tell the client the block is lifted, if it was told of it."""

    def force_close(self, reply_code: int, text: str) -> None:
        """Broker shutdown: close, telling the client why if its protocol can."""
        raise NotImplementedError

    # ------------------------------------------------------------------ output
    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and not self._closed:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        raise NotImplementedError

    def _write_output(self, conn: Any, transport: asyncio.Transport) -> None:
        """Write what the connection produced since the last flush, in one transport call.

        A large flush (message bodies) is not joined: its pieces go to the transport one by one
        until it asks us to pause, and the rest waits, uncopied, until it resumes. asyncio's
        `writelines` joins its pieces into one bytes object (Python 3.11) and `write` copies what
        the socket did not take into the transport's buffer, which copies all it holds again
        each time it grows after a partial send: several copies of every large body, more the
        slower the client reads, where a view the socket only partly took is sliced without
        one."""
        self._flush_scheduled = False
        size = conn.out_size
        parts = conn.take_parts()
        if parts and not transport.is_closing():
            if self._backlog:
                self._backlog.extend(parts)  # after what waits already
            elif len(parts) == 1:
                transport.write(parts[0])
            elif size < LARGE_OUTPUT:
                transport.writelines(parts)
            else:
                self._backlog.extend(unjoined(parts))
                self._write_backlog(conn, transport)
            stats = self.stats
            stats.send_cnt += 1
            SocketWrites.count += 1
            stats.send_oct += size

    def _write_backlog(self, conn: Any, transport: asyncio.Transport) -> None:
        """Hand the transport waiting output until it asks us to pause (it does so from inside
        `write`, once what it holds passes its high-water mark)."""
        backlog = self._backlog
        while backlog and not conn.paused:
            transport.write(backlog.popleft())

    def _resume_starved(self, conn: Any) -> None:
        """Consumers were held back while output piled up: now it went out, let them go on."""
        if conn.consumers_starved and not conn.output_blocked:
            conn.output_drained()
            if conn.out_size:
                self._schedule_flush()

    def _close_transport(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            if self._backlog:  # the last words must still go out, after what waits
                transport.writelines(list(self._backlog))
                self._backlog.clear()
            transport.close()
            if transport.get_write_buffer_size():
                # asyncio closes once the output is written: a peer that takes none of it
                # (gone without a FIN) would hold the socket for good.
                self._later("flush-on-close", FLUSH_ON_CLOSE, self._abort)

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # ------------------------------------------------------------------ heartbeats
    def _start_heartbeats(
        self, send_every: float, first_tick_sends: bool, check_every: float, silent_checks: int
    ) -> None:
        """Every `send_every` seconds a heartbeat if nothing else was written since the last
        tick; every `check_every` seconds a check that the peer has not been silent for
        `silent_checks` checks in a row (0 seconds: no such timer)."""
        if send_every:
            self._send_check, self._send_every = SendCheck(first_tick_sends), send_every
            self._later("heartbeat-send", send_every, self._send_tick)
        if check_every:
            self._idle_check, self._check_every = IdleCheck(silent_checks), check_every
            self._later("heartbeat-check", check_every, self._idle_tick)

    def _send_tick(self) -> None:
        conn, check = self.conn, self._send_check
        if conn is None or check is None or self._closed:
            return
        if check.due(self._writes) and not conn.should_close:
            conn.heartbeat_frame()
            self._flush()
        check.ticked(self._writes)
        self._later("heartbeat-send", self._send_every, self._send_tick)

    def _idle_tick(self) -> None:
        conn, check = self.conn, self._idle_check
        if conn is None or check is None or self._closed:
            return
        if check.expired(self._reads, self._blocked):
            self._peer_silent(conn)
            return
        self._later("heartbeat-check", self._check_every, self._idle_tick)

    def _peer_silent(self, conn: Any) -> None:
        """The peer was silent too long: end the connection as the protocol says."""
        raise NotImplementedError

    # ------------------------------------------------------------------ timers
    def _later(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        if not self._closed:
            self._timers[name] = self.loop.call_later(delay, callback)
