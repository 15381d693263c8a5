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


class BufferedOutput:
    """The output side every front end's connection shares, sans-IO: frames queue here until
    the I/O layer takes them, and the queue's size is the back-pressure consumers see (their
    credit drops to 0 while output is blocked; `output_drained` lets them deliver again). Each
    front end keeps its own `write` (how it knows it is closed differs, and writing is the hot
    path) and says how to resume its consumers."""

    max_pending_output: int

    def __init__(self, max_pending_output: int) -> None:
        self.max_pending_output = max_pending_output
        self._out: list[Any] = []
        self.out_size = 0
        self.paused = False  # the transport asked us to stop writing
        self.consumers_starved = False  # a consumer was held back because output piled up

    def take_parts(self) -> list[Any]:
        """The frames written since the last take, as the pieces they were written in: the
        I/O layer hands them to the transport's writelines, which sends them without first
        joining them into one more copy where it can (Python 3.12+, uvloop)."""
        parts, self._out = self._out, []
        self.out_size = 0
        return parts

    def take_output(self) -> bytes:
        return b"".join(self.take_parts())

    @property
    def output_blocked(self) -> bool:
        return self.paused or self.out_size > self.max_pending_output

    def output_drained(self) -> None:
        """The I/O layer wrote our output and the transport can take more: consumers held
        back may deliver again."""
        if self.consumers_starved and not self.output_blocked:
            self.consumers_starved = False
            self.resume_consumers()

    def resume_consumers(self) -> None:
        raise NotImplementedError
