"""The typed contract between the front ends and the rest of the broker. Every client
connection, whatever protocol it speaks, is a `FrontEndConnection`: who it is (user, vhost,
protocol), where it comes from and what went through its socket (`SocketStats`), its sessions
(0-9-1 channels, 1.0 sessions) and their links as neutral views, and how the broker closes it.
The node keeps them (`Node.connections`); the management API, the CLI (through it) and the
metrics read only this, never a front end's own objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rabbitish.engine.transactions import Transaction
    from rabbitish.engine.vhost import VirtualHost


@dataclass(frozen=True)
class LinkView:
    """One AMQP 1.0 link. `role` is the broker's side of it, as the broker's attach says:
    "receiver" when the client sends (an incoming link, RabbitMQ 4's `incoming_links`),
    "sender" when the client receives (outgoing). A transaction coordinator link is a
    receiver with `coordinator` set and no address."""

    name: str
    handle: int
    role: str  # "sender" or "receiver", from the broker's side
    address: str | None  # the target address of an incoming link, the source of an outgoing one
    queue: str | None  # the queue an outgoing link consumes from, or an incoming one publishes to
    exchange: str | None  # the exchange an incoming link publishes to ("" is the default)
    credit: int  # link credit: granted to the client (incoming), granted by it (outgoing)
    delivery_count: int
    unsettled: int  # deliveries on this link that the other side has not settled yet
    settle_mode: str  # the sender's settle mode: "unsettled", "settled" or "mixed"
    coordinator: bool = False


@dataclass(frozen=True)
class SessionView:
    number: int  # 0-9-1 channel number, 1.0 session channel
    state: str  # "running" or "closing"
    transactional: bool
    confirm: bool
    consumer_count: int
    prefetch_count: int
    global_prefetch_count: int
    unacked: int  # deliveries waiting for settlement (staged ones not included)
    # Open transactions: at most one on a 0-9-1 channel; a 1.0 session lists those declared
    # through its coordinator links (1.0 transactions belong to the connection, so their work
    # may come from any of its sessions).
    transactions: tuple[Transaction, ...] = ()
    links: tuple[LinkView, ...] = ()  # AMQP 1.0 only
    unconfirmed: int = 0  # confirm mode: published, not confirmed yet
    # Counters named as RabbitMQ's channel message_stats (publish, confirm, deliver, ...).
    message_stats: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ConnectionView:
    protocol: str  # as RabbitMQ's management API names it: "AMQP 0-9-1", "AMQP 1.0"
    user: str | None
    vhost: str | None
    peer: str
    channel_max: int
    frame_max: int
    heartbeat: int
    client_properties: dict[str, Any] = field(default_factory=dict)
    sessions: tuple[SessionView, ...] = ()
    auth_mechanism: str = ""  # the SASL mechanism the client logged in with


@dataclass(slots=True)
class SocketStats:
    """What the I/O layer knows of one connection's socket: both ends' addresses, when the
    front end took it, and what went through it. The I/O layer fills it in and counts (one
    add per read or write batch, which the heartbeat checks also use); management reads it.
    A connection without a socket (sans-IO use) keeps the empty one it starts with."""

    peer_host: str = ""
    peer_port: int = 0
    host: str = ""  # our end: the listener's address and port
    port: int = 0
    connected_at: int | None = None  # milliseconds since the epoch
    recv_oct: int = 0  # bytes read
    recv_cnt: int = 0  # reads (data_received calls)
    send_oct: int = 0  # bytes written
    send_cnt: int = 0  # writes (one per flush that had output)


class FrontEndConnection(Protocol):
    """What a front end's connection offers the rest of the broker (it is kept in
    `Node.connections` while open). Both the 0-9-1 and the AMQP 1.0 connection implement it."""

    # As RabbitMQ's management API names it: "AMQP 0-9-1", "AMQP 1-0".
    protocol: str
    user: str | None  # once logged in
    vhost: VirtualHost | None  # once open
    socket: SocketStats

    def view(self) -> ConnectionView:
        """Its state now, with its sessions (channels) and their links."""
        ...

    def server_close(self, reply_code: int, text: str) -> None:
        """Close from the broker's side (management API, a deleted vhost or user): the client
        is told why; the I/O layer writes it on its next turn."""
        ...


class ConsumerSession(Protocol):
    """Which connection and session (0-9-1 channel, 1.0 session) a consumer belongs to, as
    management names its channel: a 0-9-1 consumer holds a `SessionRef`, a 1.0 outgoing link
    its session."""

    @property
    def connection(self) -> FrontEndConnection: ...

    @property
    def number(self) -> int: ...

    @property
    def user(self) -> str | None: ...


@dataclass(frozen=True)
class SessionRef:
    """A 0-9-1 consumer's `ConsumerSession`: its channel's connection and number."""

    connection: FrontEndConnection
    number: int
    user: str | None
