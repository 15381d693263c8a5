"""What every front end's asyncio protocol does the same way: hold the sans-IO connection,
write its output once per loop turn, pass back-pressure both ways (the transport's pause/resume,
consumers held back while output piles up), keep named timers, block publishers under a resource
alarm, and release everything when the socket goes. Subclasses add their protocol's handshake and
heartbeat rules.

Under a resource alarm (engine/alarms.py: memory, disk, store writes failing) a connection that
publishes is blocked as RabbitMQ blocks it: after the read that carried the publish, nothing more
is read until the last alarm clears. Connections that only consume keep reading, so their acks
still free the queues. A 0-9-1 connection also tells its client (connection.blocked); an AMQP 1.0
sender just sees its transfers go unread, so its window and credit run out (RabbitMQ 4's native
1.0 stops granting credit; 3.10's 1.0 plugin was not blocked at all)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from typing import Any, Protocol

from rabbitish.config import Config
from rabbitish.engine.auth import Peer
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import SocketStats
from rabbitish.tls import COMMON_NAME, certificate_user


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


class SocketWrites:
    """Socket writes by every connection of this process: the busy-waiting selector
    (server/busy_wait.py) polls only after a loop turn that wrote one."""

    count = 0


class SocketProtocol(asyncio.Protocol):
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
        stats = self.stats
        stats.peer_host, stats.peer_port = socket_address(peer)
        stats.host, stats.port = socket_address(transport.get_extra_info("sockname"))
        self.conn = make_conn(self.node, self.config, peer=str(peer), wake=self._schedule_flush)
        self.conn.peer_info = peer_info(transport, self.config.ssl_cert_login_from)
        self.conn.socket = stats
        self.registry.add(self)
        self._later("handshake", max(0.0, deadline - self.loop.time()), on_handshake_timeout)
        return self.conn

    @property
    def _reads(self) -> int:
        """data_received calls so far, for the idle checks."""
        return self.stats.recv_cnt

    @property
    def _writes(self) -> int:
        """Transport writes so far, for the heartbeat send check."""
        return self.stats.send_cnt

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

    # ------------------------------------------------------------------ alarms
    def _receive(self, conn: Any, data: bytes) -> None:
        """Feed `data` to the connection; under an alarm, block it if it published.

        The caller flushes right after (`_after_input`), so output made meanwhile must not
        also queue a flush for the next loop turn: that turn would cost a whole extra poll of
        the selector on every round trip (marked as scheduled, `wake` leaves it be)."""
        self._flush_scheduled = True
        vhost = conn.vhost
        if vhost is None or not self.node.alarms.active:
            conn.receive(data)
            return
        before = vhost.publishes
        conn.receive(data)
        if vhost.publishes != before:
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
        """Write what the connection produced since the last flush, in one transport call."""
        self._flush_scheduled = False
        size = conn.out_size
        parts = conn.take_parts()
        if parts and not transport.is_closing():
            if len(parts) == 1:
                transport.write(parts[0])
            else:
                transport.writelines(parts)
            stats = self.stats
            stats.send_cnt += 1
            SocketWrites.count += 1
            stats.send_oct += size

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
