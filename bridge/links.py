"""AMQP 1.0 links on the engine. Addresses (bridge/addresses.py) follow RabbitMQ's 3.x plugin:
`/queue/NAME` (declared, durable when the terminus is), `/amq/queue/NAME` (must exist),
`/exchange/NAME/KEY`, `/exchange/NAME` (the subject is the routing key) and `/topic/KEY`
(amq.topic); RabbitMQ 4.x's `/queues/NAME` (must exist) and `/exchanges/NAME[/KEY]` (a target
only) follow RabbitMQ 4, as does its anonymous terminus (a sender whose target has no address:
each message's `to` names its destination). A receiver on an exchange address consumes from a
private queue bound with the key. A dynamic source or target
makes a temporary queue (bridge/dynamic.py); `/queue/amq.NAME` names an existing server-named
queue (a dynamic node's, a 0-9-1 client's reply queue) without declaring it. A source with
distribution-mode `copy` browses its queue (`Queue.add_browser`) instead of consuming.

An incoming link (the client sends) publishes each complete message through
`VirtualHost.publish` and grants credit in batches; an outgoing link (the client receives) is an
engine `Consumer` whose credit is the link credit, and the client's dispositions settle its
deliveries with the engine's outcomes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.bridge import message as mapping
from rabbitish.bridge.addresses import (
    ANONYMOUS,
    PRECONDITION_FAILED,
    Address,
    LinkError,
    RoutingRefused,
    is_v2,
    parse_address,
    parse_v2_target,
)
from rabbitish.bridge.codec import Symbol
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Error,
    Flow,
    Modified,
    Rejected,
    Released,
    Source,
    Target,
    TransactionalState,
    Transfer,
)
from rabbitish.bridge.dynamic import DynamicNode, is_dynamic
from rabbitish.bridge.filters import source_filters

from rabbitish.engine.auth import Authorize
from rabbitish.engine.consumer import Consumer
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError, not_found
from rabbitish.engine.reply_to import is_reply_to_address

if TYPE_CHECKING:
    from rabbitish.bridge.session import Session
    from rabbitish.bridge.transactions import DeclaredTxn

    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

CREDIT = 512  # what an incoming link is granted at a time
TXN_ID = Symbol("txn-id")  # the flow property that names a transaction for acquisition
SETTLED = 1  # sender-settle-mode "settled": the client receives at most once
ROLE_SENDER, ROLE_RECEIVER = False, True
COPY = Symbol("copy")  # distribution-mode: browse, acquiring nothing
FIRST_CREDIT_DELAY = 0.001  # seconds from a new receiver's attach to its first deliveries
NOT_FOUND = "amqp:not-found"
DELIVERY_TAG = Symbol("delivery-tag")  # the info of a settled anonymous transfer's error


class ReceivingLink:
    """A link the client sends on: credit granted in batches, multi-frame transfers put back
    together (aborted ones dropped); each whole message goes to `received`."""

    credit_batch = CREDIT
    coordinator = False  # a transaction coordinator's control link (bridge/transactions.py)
    node: DynamicNode | None = None  # the temporary queue a dynamic target made

    def __init__(self, session: Session, attach: Attach) -> None:
        self.session = session
        self.source: Any = attach.source  # the termini the attach reply names
        self.target: Any = attach.target
        self.handle = int(attach.handle)
        self.attach = attach  # what the client asked for, for the management view
        self.delivery_count = int(attach.initial_delivery_count or 0)
        self.credit = 0
        self._partial: list[bytes] = []
        self.pending_transfer: Transfer | None = None  # first frame of a transfer in progress

    def grant(self) -> None:
        self.credit = self.credit_batch
        self.session.send_link_flow(self.handle, self.delivery_count, self.credit)

    def transfer(self, transfer: Transfer, payload: bytes) -> None:
        if self.pending_transfer is None:
            self.pending_transfer = transfer
        if transfer.aborted:
            self._partial, self.pending_transfer = [], None
            return
        self._partial.append(payload)
        if transfer.more:
            return
        first, self.pending_transfer = self.pending_transfer, None
        body, self._partial = b"".join(self._partial), []
        self.delivery_count += 1
        self.credit -= 1
        if self.credit < self.credit_batch // 2:
            self.grant()
        self.received(first, body)

    def received(self, first: Transfer, body: bytes) -> None:
        """One whole message; `first` is its first transfer frame."""
        raise NotImplementedError

    def teardown(self) -> None:
        self._partial = []
        self.pending_transfer = None


class IncomingLink(ReceivingLink):
    """The client sends; rabbitish receives and publishes."""

    def __init__(self, session: Session, attach: Attach) -> None:
        super().__init__(session, attach)
        target = attach.target
        vhost = session.conn.vhost
        assert vhost is not None
        self.vhost: VirtualHost = vhost
        authorize = session.conn.authorize
        if is_dynamic(target):
            self.node = DynamicNode(vhost, session.conn, target, authorize)
            self.target = self.node.terminus
            target = self.target
        self.authorize = authorize
        self.writable: set[str] = set()  # exchanges the user may write to (anonymous terminus)
        if isinstance(target, Target) and target.address is None:
            self.address = ANONYMOUS  # checked per message, by its `to`
            return
        self.address = parse_address(terminus_address(target), sending=True)
        if self.address.v2 and self.address.queue is not None:
            _check_target_queue(vhost, self.address.queue)
        elif self.address.queue is not None:
            _ensure_queue(vhost, self.address, session.conn, _durable(target), authorize, True)
        elif self.address.exchange not in vhost.exchanges:
            raise not_found(f"no {vhost.rs('exchange', self.address.exchange)}")
        if authorize is not None:  # checked once, at attach
            authorize("write", "exchange", self.address.exchange)

    def received(self, first: Transfer, body: bytes) -> None:
        codec = self.session.conn.node.codec
        assert codec is not None
        address = self.address
        try:
            message, _subject = mapping.to_engine(
                codec,
                address.exchange,
                address.routing_key,
                body,
                self.route_by_to if address.anonymous else None,
            )
        except RoutingRefused as err:
            self._refuse_message(first, err)
            return
        if isinstance(first.state, TransactionalState):
            self._post(first, first.state, message)
            return
        published = self.vhost.publish(
            message.exchange, message.routing_key, message, False, None, self.session
        )
        if not first.settled:
            # An unsettled transfer without a delivery-id breaks the spec; int() refuses it.
            delivery_id = int(first.delivery_id)  # type: ignore[arg-type]
            if (
                address.v2
                and not published.routed
                and not is_reply_to_address(message.exchange, message.routing_key)
            ):
                # RabbitMQ 4: an unsettled message no queue takes is released (3.x accepts it).
                self.session.send_disposition(delivery_id, Released(), role=True)
                return
            journal = self.vhost.journal
            journal.when_synced(
                journal.position,
                lambda: self.session.accept_incoming(delivery_id),
                lambda reason: self.session.reject_incoming(delivery_id, reason),
            )

    def route_by_to(self, to: str | None) -> tuple[str, str]:
        """The anonymous terminus: where a message's `to` sends it (RabbitMQ 4's target
        forms), with RabbitMQ 4's refusals."""
        if to is None:
            raise RoutingRefused(
                PRECONDITION_FAILED, "anonymous terminus requires 'to' address to be set"
            )
        try:
            address = parse_v2_target(to)
        except ValueError:
            raise RoutingRefused(PRECONDITION_FAILED, f"bad 'to' address string: {to}") from None
        exchange = address.exchange
        if exchange not in self.vhost.exchanges:
            raise RoutingRefused(NOT_FOUND, f"no {self.vhost.rs('exchange', exchange)}")
        if self.authorize is not None and exchange not in self.writable:
            self.authorize("write", "exchange", exchange)
            self.writable.add(exchange)
        return exchange, address.routing_key or ""

    def _refuse_message(self, first: Transfer, err: RoutingRefused) -> None:
        """A message the anonymous terminus cannot route: rejected when sent unsettled; sent
        settled, nothing could tell the client, so the link is detached with the error and
        the delivery-tag (the anonymous terminus spec's routing errors)."""
        if first.settled:
            raise LinkError(err.condition, err.description, {DELIVERY_TAG: first.delivery_tag})
        error = Error(condition=Symbol(err.condition), description=err.description)
        delivery_id = int(first.delivery_id)  # type: ignore[arg-type]  # as in received
        self.session.send_disposition(delivery_id, Rejected(error=error), role=True)

    def _post(self, first: Transfer, posted: TransactionalState, message: Any) -> None:
        """Transactional posting: staged in the transaction, visible at its commit; the
        presumptive outcome goes back at once."""
        table = self.session.conn.transactions
        declared = table.lookup(posted.txn_id)
        try:
            self.vhost.publish(
                message.exchange,
                message.routing_key,
                message,
                tx=declared.tx,
                source=self.session,
            )
        except AMQPError as err:
            # Refused (the session ends with it): the transaction must not commit without it.
            table.refused(
                declared.txn_id, f"a transfer in the transaction was refused: {err.reply_text}"
            )
            raise
        if not first.settled:
            state = TransactionalState(txn_id=declared.txn_id, outcome=Accepted())
            delivery_id = int(first.delivery_id)  # type: ignore[arg-type]  # as in on_transfer
            self.session.send_disposition(delivery_id, state, role=True)

    def teardown(self) -> None:
        """A transactional transfer left incomplete can never arrive: its transaction must
        not commit without it."""
        first = self.pending_transfer
        super().teardown()
        if first is not None and isinstance(first.state, TransactionalState):
            reason = "a transfer in the transaction was left incomplete"
            self.session.conn.transactions.refused(first.state.txn_id, reason)


class OutgoingLink(Consumer):
    """The client receives: an engine consumer whose credit is the link credit."""

    __slots__ = (
        "attach",
        "browsing",
        "delivery_count",
        "fresh",
        "handle",
        "link_credit",
        "node",
        "session",
        "source",
        "target",
        "txn",
        "wire_settled",
    )

    session: Session  # the consumer's ConsumerSession is the 1.0 session itself

    def __init__(self, session: Session, attach: Attach) -> None:
        source = attach.source
        # Before anything is declared: a malformed selector refuses the link.
        filters = source_filters(source.filter if isinstance(source, Source) else None)
        vhost = session.conn.vhost
        assert vhost is not None
        authorize = session.conn.authorize
        self.node: DynamicNode | None = None
        if is_dynamic(source):
            self.node = DynamicNode(vhost, session.conn, source, authorize)
            source = self.node.terminus
        self.source: Any = source
        self.target: Any = attach.target
        # Browsing: copies, acquiring nothing (the answer keeps the mode: it is honoured).
        self.browsing = isinstance(source, Source) and source.distribution_mode == COPY
        address = parse_address(terminus_address(source), sending=False)
        if address.queue is None:
            queue = _private_queue(vhost, address, session.conn, authorize)
        else:
            queue = _ensure_queue(vhost, address, session.conn, _durable(source), authorize)
        if authorize is not None:
            authorize("read", "queue", queue.name)
        settled = attach.snd_settle_mode == SETTLED
        super().__init__(queue, str(attach.name), settled_on_delivery=settled)
        self.session = session  # also the consumer's ConsumerSession (connection, number, user)
        self.handle = int(attach.handle)
        self.delivery_count = 0
        self.link_credit = 0
        self.fresh = True  # no credit granted yet
        self.wire_settled = settled  # the client receives pre-settled (at most once)
        self.txn: DeclaredTxn | None = None  # transactional acquisition (a flow's txn-id)
        self.attach = attach  # what the client asked for, for the management view
        self.selection = filters.selection
        # The attach reply's source: the client's, with only the filters applied.
        self.source = _with_filter(source, filters.applied)
        queue.check_can_consume(self)

    @property
    def credit(self) -> int:
        """The link credit the client granted, while the connection can take more output and
        the peer's session window more transfers."""
        conn = self.session.conn
        if conn.output_blocked:
            conn.consumers_starved = True
            return 0
        if not self.session.window_open:
            return 0  # the session's flow resumes us
        return self.link_credit

    def start(self) -> None:
        if self.browsing:
            self.queue.add_browser(self)
        else:
            self.queue.add_consumer(self)

    def delivered(self, delivery: Delivery) -> None:
        self.link_credit -= 1
        self.delivery_count += 1
        declared = self.txn
        if declared is None:
            self.session.send_delivery(self, delivery)
            return
        # Transactional acquisition: the message is the transaction's until it discharges.
        state = TransactionalState(txn_id=declared.txn_id)
        delivery_id = self.session.send_delivery(self, delivery, state, self.wire_settled)
        declared.acquired(self.session, delivery_id, delivery, settled=self.wire_settled)

    def start_acquiring(self, declared: DeclaredTxn) -> None:
        """A flow named a transaction: what this link delivers from now on is acquired in it.
        The engine hands deliveries over unsettled even on a pre-settled link, so a rollback
        can put them back."""
        if self.txn is not None and self.txn is not declared:
            self.txn.acquiring.remove(self)
        declared.tx.touch()  # a method naming the transaction: it is in use
        self.txn = declared
        self.settled_on_delivery = False
        if self not in declared.acquiring:
            declared.acquiring.append(self)

    def stop_acquiring(self, declared: DeclaredTxn) -> None:
        """The transaction discharged: the link's txn-id is cleared (its credit is not)."""
        if self.txn is declared:
            self.txn = None
            self.settled_on_delivery = self.wire_settled

    def flow(self, flow: Flow) -> None:
        """The client's view: its delivery-count and credit give ours; a `txn-id` in its
        properties starts transactional acquisition."""
        txn_id = (flow.properties or {}).get(TXN_ID)
        if txn_id is not None and not self.browsing:  # a browser acquires nothing
            self.start_acquiring(self.session.conn.transactions.lookup(txn_id))
        remote_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        self.link_credit = max(0, remote_count + int(flow.link_credit or 0) - self.delivery_count)
        if flow.drain:
            if self.browsing:
                drained = self.queue.browse(self, self.link_credit)
            else:
                drained = self.queue.drain(self, self.link_credit)
            if drained.dry and self.link_credit:
                self.delivery_count += self.link_credit
                self.link_credit = 0
            self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit, True)
        else:
            if self.fresh:
                # A client sends its attach and first credit together; RabbitMQ's queue answers
                # that credit from its own process (a quorum queue once its log has the
                # consumer), well after the attach reply, and clients count on it: RabbitMQ's
                # asyncio client returns from making a consumer before its first message.
                self.fresh = False
                self.queue.scheduler.call_later(FIRST_CREDIT_DELAY, self._resume_if_attached)
            else:
                self.resume()
            if flow.echo:
                self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit)

    def _resume_if_attached(self) -> None:
        if self.session.links.get(self.handle) is self:
            self.resume()

    def resume(self) -> None:
        """The client's flow gave credit, or the session or connection can take transfers
        again: deliver what the credit allows now."""
        self.unblock()
        self.deliver()

    def unblock(self) -> None:
        """Tell the queue this link may take again (a browser is not in its round-robin)."""
        if self.blocked:
            self.queue.credit_returned(self)

    def deliver(self) -> None:
        """Deliver what the credit allows now: the queue's round-robin, or a browser's copies."""
        if self.browsing:
            self.queue.browse(self, self.link_credit)
        else:
            self.queue.dispatch_active()

    def cancelled_by_broker(self) -> None:
        self.session.link_lost(self, "amqp:resource-deleted", "the queue was deleted")

    def teardown(self) -> None:
        if self.browsing:
            self.queue.remove_browser(self)
        else:
            self.queue.remove_consumer(self)


# Every kind of link a session holds by handle: the client sends on a receiving one (publishing,
# or a coordinator's control link), receives on an outgoing one.
Link = ReceivingLink | OutgoingLink


def rabbitmq_4_form(attach: Attach) -> bool:
    """Whether an attach names one of RabbitMQ 4's address forms (a dynamic terminus names
    none), whose refusals are the link's alone."""
    client_sends = attach.role == ROLE_SENDER
    terminus = attach.target if client_sends else attach.source
    if not isinstance(terminus, Source | Target) or terminus.dynamic:
        return False
    return is_v2(terminus.address, client_sends)


def terminus_address(terminus: Any) -> Any:
    """The address an attach's source or target names (None for none, or for a terminus of
    another kind, such as a transaction coordinator)."""
    return terminus.address if isinstance(terminus, Source | Target) else None


def _with_filter(source: Any, applied: dict[Any, Any] | None) -> Any:
    if not isinstance(source, Source) or source.filter == applied:
        return source
    fields = {name: getattr(source, name) for name in Source.ATTRS}
    return Source(**{**fields, "filter": applied})


def _durable(terminus: Any) -> bool:
    """RabbitMQ 3.x declares a durable queue for a terminus durable in configuration or
    unsettled-state, a transient one for none (the default)."""
    return isinstance(terminus, Source | Target) and bool(terminus.durable or 0)


def _ensure_queue(
    vhost: VirtualHost,
    address: Address,
    owner: Any,
    durable: bool,
    authorize: Authorize | None,
    sending: bool = False,
) -> Queue:
    """/queue/NAME declares the queue every time, as RabbitMQ 3.x does, so an existing queue
    of other properties refuses the link (405 exclusive elsewhere, 406 inequivalent). A name
    with the reserved `amq.` prefix that exists (a server-named queue: a dynamic node, a 0-9-1
    reply queue) is used as it is: anyone may send to it, only its owner consume from it.
    A receiver on /queues/NAME (RabbitMQ 4) looks the queue up as /amq/queue/NAME does."""
    assert address.queue is not None
    if address.declare and address.queue.startswith("amq."):
        existing = vhost.queues.get(address.queue)
        if existing is not None:
            return existing if sending else vhost.queue(address.queue, owner)
    if address.declare:
        return vhost.declare_queue(address.queue, owner=owner, durable=durable, authorize=authorize)
    return vhost.queue(address.queue, owner)


def _check_target_queue(vhost: VirtualHost, name: str) -> None:
    """A sender's /queues/NAME (RabbitMQ 4) must name a queue that exists, or a live direct
    reply-to name; who owns it does not matter, as for any publish."""
    if name not in vhost.queues and not (
        is_reply_to_address("", name) and vhost.reply_to_exists(name)
    ):
        raise not_found(f"no {vhost.rs('queue', name)}")


def _private_queue(
    vhost: VirtualHost, address: Address, owner: Any, authorize: Authorize | None
) -> Queue:
    """A receiver on an exchange address gets its own queue, bound with the address's key and
    gone with the link (exclusive to the connection, auto-delete), as RabbitMQ's plugin does;
    the user needs the permissions a declare and a bind take."""
    exchange = vhost.exchange(address.exchange)  # 404 for a missing exchange
    queue = vhost.declare_queue(
        "", owner=owner, exclusive=True, auto_delete=True, authorize=authorize
    )
    if authorize is not None:
        try:
            authorize("write", "queue", queue.name)
            authorize("read", "exchange", exchange.name)
        except Exception:
            vhost.delete_queue_object(queue)
            raise
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
    if isinstance(state, Modified) and state.message_annotations:
        annotate(deliveries, state.message_annotations)
    settle(deliveries, outcome, **flags)


def annotate(deliveries: list[Delivery], annotations: dict[Any, Any]) -> None:
    """RabbitMQ 4 merges a `modified` outcome's annotations (keys starting "x-"; the others are
    reserved) into the message when its queue is a quorum queue; other queues ignore them."""
    wanted = {k: v for k, v in annotations.items() if str(k).startswith("x-")}
    for delivery in deliveries:
        entry = delivery.entry
        if wanted and not delivery.settled and _is_quorum(delivery.queue):
            entry.message = mapping.with_annotations(entry.message, wanted)


def _is_quorum(queue: Queue) -> bool:
    queue_type = queue.arguments.get("x-queue-type")
    return queue_type in ("quorum", b"quorum")
