"""AMQP 1.0 links on the engine. Addresses follow RabbitMQ's 3.x plugin: `/queue/NAME` (declared
durable when missing), `/amq/queue/NAME` (must exist), `/exchange/NAME/KEY`, `/exchange/NAME`
(the subject is the routing key) and `/topic/KEY` (amq.topic); RabbitMQ 4.x's `/queues/NAME` and
`/exchanges/NAME[/KEY]` too. A receiver on an exchange address consumes from a private queue
bound with the key.

An incoming link (the client sends) publishes each complete message through
`VirtualHost.publish` and grants credit in batches; an outgoing link (the client receives) is an
engine `Consumer` whose credit is the link credit, and the client's dispositions settle its
deliveries with the engine's outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rabbitish.bridge import message as mapping
from rabbitish.bridge.codec.definitions import (
    Attach,
    Flow,
    Modified,
    Rejected,
    Released,
    Transfer,
)

from rabbitish.engine.consumer import Consumer
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import not_found

if TYPE_CHECKING:
    from rabbitish.bridge.session import Session

    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

CREDIT = 256  # what an incoming link is granted at a time
SETTLED = 1  # sender-settle-mode "settled": the client receives at most once
ROLE_SENDER, ROLE_RECEIVER = False, True


class LinkError(Exception):
    """Refuse or detach a link with an AMQP 1.0 condition."""

    def __init__(self, condition: str, description: str) -> None:
        super().__init__(description)
        self.condition = condition
        self.description = description


@dataclass(frozen=True)
class Address:
    exchange: str  # where a publish goes
    routing_key: str | None  # None: the message's subject
    queue: str | None  # the queue a receiver consumes from (None: a private one is made)
    declare: bool  # /queue/NAME declares a durable queue when missing


def parse_address(address: str | None) -> Address:
    if not address:
        raise LinkError("amqp:not-found", "an address is required")
    parts = address.split("/")
    if address.startswith(("/queue/", "/queues/")) and len(parts) == 3 and parts[2]:
        return Address("", parts[2], parts[2], True)  # /queues/NAME: RabbitMQ 4.x
    if address.startswith("/exchanges/") and len(parts) in (3, 4) and parts[2]:
        key = parts[3] if len(parts) == 4 else ""  # RabbitMQ 4.x: no key means ""
        return Address(parts[2], key, None, False)
    if address.startswith("/amq/queue/") and len(parts) == 4 and parts[3]:
        return Address("", parts[3], parts[3], False)
    if address.startswith("/exchange/") and len(parts) in (3, 4) and parts[2]:
        key = parts[3] if len(parts) == 4 else None
        return Address(parts[2], key, None, False)
    if address.startswith("/topic/") and len(parts) == 3:
        return Address("amq.topic", parts[2], None, False)
    raise LinkError("amqp:not-found", f"address '{address}' is not understood")


class IncomingLink:
    """The client sends; rabbitish receives and publishes."""

    def __init__(self, session: Session, attach: Attach) -> None:
        self.session = session
        self.handle = int(attach.handle)
        target = attach.target
        self.address = parse_address(getattr(target, "address", None))
        vhost = session.conn.vhost
        assert vhost is not None
        self.vhost: VirtualHost = vhost
        if self.address.queue is not None:
            _ensure_queue(vhost, self.address, session.conn)
        elif self.address.exchange not in vhost.exchanges:
            raise not_found(f"no {vhost.rs('exchange', self.address.exchange)}")
        self.delivery_count = int(attach.initial_delivery_count or 0)
        self.credit = 0
        self._partial: list[bytes] = []
        self._first: Transfer | None = None
        self.attach = attach  # what the client asked for, for the management view

    def grant(self) -> None:
        self.credit = CREDIT
        self.session.send_link_flow(self.handle, self.delivery_count, self.credit)

    def transfer(self, transfer: Transfer, payload: bytes) -> None:
        if self._first is None:
            self._first = transfer
        if transfer.aborted:
            self._partial, self._first = [], None
            return
        self._partial.append(payload)
        if transfer.more:
            return
        first, self._first = self._first, None
        body, self._partial = b"".join(self._partial), []
        self.delivery_count += 1
        self.credit -= 1
        codec = self.session.conn.node.codec
        assert codec is not None
        message, _subject = mapping.to_engine(
            codec, self.address.exchange, self.address.routing_key, body
        )
        self.vhost.publish(self.address.exchange, message.routing_key, message)
        if not first.settled:
            delivery_id = int(first.delivery_id)
            journal = self.vhost.journal
            journal.when_synced(journal.position, lambda: self.session.accept_incoming(delivery_id))
        if self.credit < CREDIT // 2:
            self.grant()

    def teardown(self) -> None:
        self._partial = []


class OutgoingLink(Consumer):
    """The client receives: an engine consumer whose credit is the link credit."""

    __slots__ = ("attach", "delivery_count", "handle", "link_credit", "session")

    def __init__(self, session: Session, attach: Attach) -> None:
        source = attach.source
        address = parse_address(getattr(source, "address", None))
        vhost = session.conn.vhost
        assert vhost is not None
        if address.queue is None:
            queue = _private_queue(vhost, address, session.conn)
        else:
            queue = _ensure_queue(vhost, address, session.conn)
        settled = attach.snd_settle_mode == SETTLED
        super().__init__(queue, str(attach.name), settled_on_delivery=settled)
        self.session = session
        self.handle = int(attach.handle)
        self.delivery_count = 0
        self.link_credit = 0
        self.attach = attach  # what the client asked for, for the management view
        queue.check_can_consume(self)

    @property
    def credit(self) -> int:
        """The link credit the client granted, while the connection can take more output."""
        conn = self.session.conn
        if conn.output_blocked:
            conn.consumers_starved = True
            return 0
        return self.link_credit

    def start(self) -> None:
        self.queue.add_consumer(self)

    def delivered(self, delivery: Delivery) -> None:
        self.link_credit -= 1
        self.delivery_count += 1
        self.session.send_delivery(self, delivery)

    def flow(self, flow: Flow) -> None:
        """The client's view: its delivery-count and credit give ours."""
        remote_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        self.link_credit = max(0, remote_count + int(flow.link_credit or 0) - self.delivery_count)
        if flow.drain:
            drained = self.queue.drain(self, self.link_credit)
            if drained.dry and self.link_credit:
                self.delivery_count += self.link_credit
                self.link_credit = 0
            self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit, True)
        else:
            self.queue.dispatch()
            if flow.echo:
                self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit)

    def cancelled_by_broker(self) -> None:
        self.session.link_lost(self, "amqp:resource-deleted", "the queue was deleted")

    def teardown(self) -> None:
        self.queue.remove_consumer(self)


def _ensure_queue(vhost: VirtualHost, address: Address, owner: Any) -> Queue:
    assert address.queue is not None
    if address.declare and address.queue not in vhost.queues:
        return vhost.declare_queue(address.queue, owner=owner, durable=True)
    return vhost.queue(address.queue, owner)


def _private_queue(vhost: VirtualHost, address: Address, owner: Any) -> Queue:
    """A receiver on an exchange address gets its own queue, bound with the address's key and
    gone with the link (exclusive to the connection, auto-delete), as RabbitMQ's plugin does."""
    exchange = vhost.exchange(address.exchange)  # 404 for a missing exchange
    queue = vhost.declare_queue("", owner=owner, exclusive=True, auto_delete=True)
    vhost.bind(queue, exchange.name, address.routing_key or "")
    return queue


def outcome_of(state: Any) -> tuple[Outcome, dict[str, bool]]:
    """A 1.0 delivery state as an engine outcome (no state on a settled disposition: accepted)."""
    if isinstance(state, Rejected):
        return Outcome.DISCARD, {}
    if isinstance(state, Released):
        return Outcome.RELEASED, {}
    if isinstance(state, Modified):
        return Outcome.MODIFIED, {
            "delivery_failed": bool(state.delivery_failed),
            "undeliverable_here": bool(state.undeliverable_here),
        }
    return Outcome.ACK, {}


def settle_outgoing(deliveries: list[Delivery], state: Any) -> None:
    outcome, flags = outcome_of(state)
    settle(deliveries, outcome, **flags)
