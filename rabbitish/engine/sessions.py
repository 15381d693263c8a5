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
class SessionView:
    number: int  # 0-9-1 channel number, 1.0 session channel
    state: str  # "running" or "closing"
    transactional: bool
    confirm: bool
    consumer_count: int
    prefetch_count: int
    global_prefetch_count: int
    unacked: int  # deliveries waiting for settlement (staged ones not included)
    transaction: Transaction | None


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
