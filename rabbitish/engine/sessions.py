"""The neutral view of client connections and their sessions (0-9-1 channels, 1.0 sessions) that
every front end provides, so the management API and the CLI read one shape whatever protocol a
client speaks, and never reach into a front end's own objects."""

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


class FrontEndConnection(Protocol):
    """What a front end's connection object offers the node (it is kept in `Node.connections`)."""

    vhost: VirtualHost | None

    def view(self) -> ConnectionView: ...

    def server_close(self, reply_code: int, text: str) -> None:
        """Close from the broker's side (management API, shutdown)."""
        ...


@dataclass(frozen=True)
class SessionRef:
    """Which connection and session a consumer belongs to."""

    connection: FrontEndConnection
    number: int
    user: str | None
