"""One AMQP 1.0 session: begin/end, the session flow-control windows, the handle table of its
links and the deliveries it sent that the client has not settled. Transfers stop at the peer's
incoming window and resume with its next flow. A link that cannot be made ends the session with
the error, as RabbitMQ 3.x's plugin does (engine reply codes become 1.0 conditions in
`session_condition`); resume is never offered: an attach is answered with no unsettled map. A
link on one of RabbitMQ 4's address forms (bridge/addresses.py) is refused alone, as RabbitMQ 4
refuses it, and the session goes on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.bridge import links
from rabbitish.bridge import message as mapping
from rabbitish.bridge import transactions as txns
from rabbitish.bridge.addresses import INTERNAL_ERROR, LinkError, RefusedAttach
from rabbitish.bridge.codec import (
    Symbol,
    UInt,
    encode_frame,
    encode_transfers,
)
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Begin,
    Coordinator,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Rejected,
    TransactionalState,
    Transfer,
)
from rabbitish.bridge.direct_reply import DirectReplyLink, is_direct_reply
from rabbitish.bridge.dynamic import CLOSED, DETACHED, SESSION_ENDED
from rabbitish.bridge.management_links import (
    ManagementPairs,
    ManagementReplyLink,
    ManagementRequestLink,
    RefusedPairAttach,
    is_management,
)
from rabbitish.bridge.views import link_view

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.sessions import SessionView

if TYPE_CHECKING:
    from rabbitish.bridge.connection import Connection10

WINDOW = 65535  # transfers we accept before the peer must wait for our next flow
HANDLE_MAX = 255
RCV_SETTLE_SECOND = 1
HANDLE_IN_USE = "amqp:session:handle-in-use"
NOT_IMPLEMENTED = "amqp:not-implemented"
ILLEGAL_STATE = "amqp:illegal-state"
INVALID_FIELD = "amqp:invalid-field"

# Every link a session holds by handle: the links of links.py, the reply half of a management
# link pair (management_links.py) and a direct reply-to receiver (direct_reply.py), which send
# but are no engine consumers.
AnyLink = links.Link | ManagementReplyLink | DirectReplyLink


class SessionEnded(Exception):
    """End the session with an AMQP 1.0 error."""

    def __init__(self, condition: str, description: str = "") -> None:
        super().__init__(f"{condition}: {description}")
        self.condition = condition
        self.description = description


class Session:
    def __init__(self, conn: Connection10, channel: int, remote_channel: int, begin: Begin) -> None:
        self.conn = conn
        self.channel = channel
        self.remote_channel = remote_channel
        # Outgoing side (our transfers).
        self.next_outgoing_id = 0
        self.outgoing_window = WINDOW
        self.remote_incoming_window = int(begin.incoming_window)
        # Incoming side (the peer's transfers).
        self.next_incoming_id = int(begin.next_outgoing_id)
        self.incoming_window = WINDOW
        self.remote_outgoing_window = int(begin.outgoing_window)
        self.handle_max = min(HANDLE_MAX, int(begin.handle_max or HANDLE_MAX))
        self.links: dict[int, AnyLink] = {}  # the peer's handle -> link
        self.management_pairs = ManagementPairs()  # RabbitMQ 4's /management link pairs
        self.unsettled: dict[int, tuple[links.OutgoingLink, Delivery]] = {}  # by delivery-id
        self.next_delivery_id = 0
        self.held: list[bytes] = []  # transfer frames waiting for the peer's incoming window
        self.ended = False
        self._accepted: list[int] = []  # incoming delivery ids to accept at the next flush

    # The engine's ConsumerSession (management's channel_details of 1.0 receivers).
    @property
    def connection(self) -> Connection10:
        return self.conn

    @property
    def number(self) -> int:
        return self.channel

    @property
    def user(self) -> str | None:
        return self.conn.user

    # ------------------------------------------------------------------ lifecycle
    def begun(self) -> None:
        self.conn.send(
            self.channel,
            Begin(
                remote_channel=self.remote_channel,
                next_outgoing_id=UInt(self.next_outgoing_id),
                incoming_window=UInt(self.incoming_window),
                outgoing_window=UInt(self.outgoing_window),
                handle_max=UInt(self.handle_max),
            ),
        )

    def handle(self, body: Any, payload: bytes) -> None:
        try:
            if isinstance(body, Attach):
                self._attach(body)
            elif isinstance(body, Flow):
                self._flow(body)
            elif isinstance(body, Transfer):
                self._transfer(body, payload)
            elif isinstance(body, Disposition):
                self._disposition(body)
            elif isinstance(body, Detach):
                self._detach(body)
        except SessionEnded as err:
            self.end_with_error(err.condition, err.description)

    def end_with_error(self, condition: str, description: str) -> None:
        """End the session (RabbitMQ 3.x ends it for any error on one of its links); the
        connection forgets it but takes the peer's answering end quietly."""
        self.teardown()
        error = Error(condition=Symbol(condition), description=description or None)
        self.conn.send(self.channel, End(error=error))
        self.conn.ended_by_broker(self)

    def teardown(self) -> None:
        """The session is gone (end, connection closed or lost): release what its links hold."""
        if self.ended:
            return
        self.ended = True
        for link in list(self.links.values()):
            link.teardown()
            if link.node is not None:
                link.node.link_gone(SESSION_ENDED)
        self.links.clear()
        back = [delivery for _, delivery in self.unsettled.values()]
        self.unsettled.clear()
        settle(self.conn.transactions.take_over(back), Outcome.REQUEUE)

    def flush(self) -> None:
        """End of an input batch, or the connection is about to send something else: the
        accepts gathered go out as one disposition per run of consecutive delivery ids (as
        RabbitMQ sends them), so a client is not sent a frame per message."""
        accepted, self._accepted = self._accepted, []
        for first, last in _runs(accepted):
            disposition = Disposition(
                role=True,
                first=UInt(first),
                last=UInt(last) if last != first else None,
                settled=True,
                state=Accepted(),
            )
            self.conn.write(encode_frame(self.channel, disposition))

    def resume(self) -> None:
        """The connection's output drained or the peer's window opened: outgoing links may
        deliver again."""
        self.unblock_links()
        self.deliver_links()

    def unblock_links(self) -> None:
        """Every outgoing link of the session may take again; their queues hear it before any
        of them delivers, so the links compete in the queues' own order."""
        for link in self.links.values():
            if isinstance(link, links.OutgoingLink):
                link.unblock()

    def deliver_links(self) -> None:
        for link in list(self.links.values()):
            if isinstance(link, links.OutgoingLink):
                link.deliver()

    # ------------------------------------------------------------------ frames
    def _attach(self, attach: Attach) -> None:
        handle = int(attach.handle)
        if handle > self.handle_max:
            raise SessionEnded("amqp:connection:framing-error", f"handle {handle} above handle-max")
        if handle in self.links:
            raise SessionEnded(HANDLE_IN_USE, f"handle {handle} is in use")
        if attach.rcv_settle_mode == RCV_SETTLE_SECOND and attach.snd_settle_mode != links.SETTLED:
            raise SessionEnded(NOT_IMPLEMENTED, "rcv-settle-mode second not supported")
        # A link that cannot be made ends the session with the error, as RabbitMQ 3.x does
        # (`_refuse` is the spec's link-level refusal, which RabbitMQ 4.x uses; rabbitish
        # refuses a control link that way when it asks for what the coordinator lacks).
        try:
            client_sends = attach.role == links.ROLE_SENDER
            if client_sends and isinstance(attach.target, Coordinator):
                link: AnyLink = txns.CoordinatorLink(self, attach)
            elif is_management(attach, client_sends):
                link = (ManagementRequestLink if client_sends else ManagementReplyLink)(
                    self, attach
                )
            elif client_sends:
                link = links.IncomingLink(self, attach)
            elif is_direct_reply(attach):
                link = DirectReplyLink(self, attach)
            else:
                link = links.OutgoingLink(self, attach)
        except (RefusedAttach, RefusedPairAttach) as err:
            self._refuse(attach, err.condition, err.description)
            return
        except LinkError as err:
            raise SessionEnded(err.condition, err.description) from None
        except AMQPError as err:
            if links.rabbitmq_4_form(attach):
                # RabbitMQ 4 refuses its own forms' links alone, with the bare text.
                self._refuse(attach, session_condition(err), err.text)
                return
            raise SessionEnded(session_condition(err), reply_description(err)) from None
        self.links[handle] = link
        we_send = attach.role == links.ROLE_RECEIVER
        paired = isinstance(link, ManagementRequestLink | ManagementReplyLink)
        self.conn.send(
            self.channel,
            Attach(
                name=attach.name,
                handle=UInt(handle),
                role=not attach.role,
                snd_settle_mode=attach.snd_settle_mode,
                rcv_settle_mode=attach.rcv_settle_mode,
                source=link.source,
                target=link.target,
                initial_delivery_count=UInt(0) if we_send else None,
                properties=attach.properties if paired else None,  # a link pair's `paired`
            ),
        )
        if isinstance(link, links.OutgoingLink):
            link.start()
        elif isinstance(link, links.ReceivingLink):
            link.grant()

    def _refuse(self, attach: Attach, condition: str, description: str) -> None:
        handle = int(attach.handle)
        self.conn.send(
            self.channel,
            Attach(name=attach.name, handle=UInt(handle), role=not attach.role),
        )
        error = Error(condition=Symbol(condition), description=description or None)
        self.conn.send(self.channel, Detach(handle=UInt(handle), closed=True, error=error))

    def link_lost(self, link: AnyLink, condition: str, description: str) -> None:
        """The broker ends a link (its queue went away)."""
        if self.links.get(link.handle) is not link:
            return
        del self.links[link.handle]
        if link.node is not None:
            link.node.link_gone(CLOSED)
        self._send_detach_error(link, condition, description)

    def detach_link(
        self, link: AnyLink, condition: str, description: str, info: dict[Any, Any] | None = None
    ) -> None:
        """The broker ends a link with an error: what it holds is given back first (a control
        link's transactions roll back, a receiver's unsettled deliveries go back in place)."""
        if self.links.get(link.handle) is not link:
            return
        del self.links[link.handle]
        self._release_link(link)
        self._send_detach_error(link, condition, description, info)

    def _send_detach_error(
        self, link: AnyLink, condition: str, description: str, info: dict[Any, Any] | None = None
    ) -> None:
        error = Error(condition=Symbol(condition), description=description or None, info=info)
        self.conn.send(self.channel, Detach(handle=UInt(link.handle), closed=True, error=error))

    # ------------------------------------------------------------------ sending
    def send_link_flow(
        self, handle: int, delivery_count: int, credit: int, drain: bool = False
    ) -> None:
        self._send_flow(
            handle=UInt(handle),
            delivery_count=UInt(delivery_count & 0xFFFFFFFF),
            link_credit=UInt(credit),
            drain=drain or None,
        )

    def send_delivery(
        self,
        link: links.OutgoingLink,
        delivery: Delivery,
        state: Any = None,
        settled: bool | None = None,
    ) -> int:
        """Send one delivery (settled on the wire when the engine settled it, unless `settled`
        says otherwise); returns its delivery-id."""
        if settled is None:
            settled = delivery.settled
        delivery_id = self.next_delivery_id
        self.next_delivery_id = (delivery_id + 1) & 0xFFFFFFFF
        payload = mapping.from_engine(delivery.entry.message, delivery.delivery_count - 1)
        # Plain ints: each field is encoded as its declared type (uint) all the same.
        transfer = Transfer(
            handle=link.handle,
            delivery_id=delivery_id,
            delivery_tag=delivery_id.to_bytes(4, "big"),
            message_format=0,
            settled=True if settled else None,
            state=state,
        )
        self.held.extend(
            encode_transfers(self.channel, transfer, payload, self.conn.max_frame_size)
        )
        if not settled:
            self.unsettled[delivery_id] = (link, delivery)
        self._send_held()
        return delivery_id

    def send_settled(self, handle: int, payload: bytes) -> None:
        """One message sent settled on `handle` (a management reply): nothing to track."""
        delivery_id = self.next_delivery_id
        self.next_delivery_id = (delivery_id + 1) & 0xFFFFFFFF
        transfer = Transfer(
            handle=UInt(handle),
            delivery_id=UInt(delivery_id),
            delivery_tag=b"",
            message_format=UInt(0),
            settled=True,
        )
        self.held.extend(
            encode_transfers(self.channel, transfer, payload, self.conn.max_frame_size)
        )
        self._send_held()

    @property
    def window_open(self) -> bool:
        """The peer's incoming window takes another transfer now (outgoing links stop at 0)."""
        return self.remote_incoming_window > 0 and not self.held

    def _send_held(self) -> None:
        """Transfer frames, as many as the peer's incoming window allows; the rest wait for
        its next flow."""
        sent = 0
        for frame in self.held:
            if self.remote_incoming_window <= 0:
                break
            self.conn.write(frame)
            self.remote_incoming_window -= 1
            sent += 1
        del self.held[:sent]
        self.next_outgoing_id = (self.next_outgoing_id + sent) & 0xFFFFFFFF

    def send_disposition(self, delivery_id: int, state: Any, role: bool) -> None:
        """Settle one delivery with `state`: one the client sent (`role` receiver, True) or one
        rabbitish sent (sender, False)."""
        if self.ended:
            return
        self.conn.send(
            self.channel,
            Disposition(role=role, first=UInt(delivery_id), settled=True, state=state),
        )

    def reject_incoming(self, delivery_id: int, reason: str) -> None:
        """A message the client sent unsettled could not be written to disk: it must not look
        accepted."""
        description = f"not written to disk: {reason}"
        error = Error(condition=Symbol(INTERNAL_ERROR), description=description)
        self.send_disposition(delivery_id, Rejected(error=error), role=True)

    def accept_incoming(self, delivery_id: int) -> None:
        """A message the client sent unsettled is safely in: accepted and settled (at the
        next flush)."""
        if self.ended:
            return
        if not self._accepted:
            self.conn.hold(self)
        self._accepted.append(delivery_id)

    def _flow(self, flow: Flow) -> None:
        was_open = self.window_open
        if flow.next_incoming_id is not None:
            self.remote_incoming_window = (
                int(flow.next_incoming_id) + int(flow.incoming_window) - self.next_outgoing_id
            )
        else:
            self.remote_incoming_window = int(flow.incoming_window) - self.next_outgoing_id
        self.remote_outgoing_window = int(flow.outgoing_window)
        if not was_open:
            self._send_held()
            if self.window_open:
                self.resume()
        if flow.handle is not None:
            link = self.links.get(int(flow.handle))
            if link is None:
                raise SessionEnded(INVALID_FIELD, f"Unattached handle: {{uint,{flow.handle}}}")
            if isinstance(link, links.OutgoingLink):
                try:
                    link.flow(flow)
                except LinkError as err:
                    self.detach_link(link, err.condition, err.description)
            elif isinstance(link, ManagementReplyLink | DirectReplyLink):
                link.flow(flow)
            elif flow.echo:
                self.send_link_flow(link.handle, link.delivery_count, link.credit)
        elif flow.echo:
            self._send_flow()

    def _send_flow(self, **link_fields: Any) -> None:
        """The session's flow state, plus a link's when `link_fields` name one."""
        self.conn.send(
            self.channel,
            Flow(
                next_incoming_id=UInt(self.next_incoming_id),
                incoming_window=UInt(self.incoming_window),
                next_outgoing_id=UInt(self.next_outgoing_id),
                outgoing_window=UInt(self.outgoing_window),
                **link_fields,
            ),
        )

    def _transfer(self, transfer: Transfer, payload: bytes) -> None:
        link = self.links.get(int(transfer.handle))
        if not isinstance(link, links.ReceivingLink):
            # RabbitMQ's condition and text (the spec would say unattached-handle).
            raise SessionEnded(ILLEGAL_STATE, f"Unknown link handle {{uint,{transfer.handle}}}")
        self.next_incoming_id = (self.next_incoming_id + 1) & 0xFFFFFFFF
        self.incoming_window -= 1
        if self.incoming_window < WINDOW // 2:
            self.incoming_window = WINDOW
            self._send_flow()
        try:
            link.transfer(transfer, payload)
        except LinkError as err:
            self.detach_link(link, err.condition, err.description, err.info)

    def _disposition(self, disposition: Disposition) -> None:
        if disposition.role != links.ROLE_RECEIVER:
            return  # about deliveries the client sent: rabbitish settles those itself
        first = int(disposition.first)
        last = int(disposition.last) if disposition.last is not None else first
        if isinstance(disposition.state, TransactionalState):
            self._retire(first, last, disposition, disposition.state)
            return
        settled = []
        for delivery_id in range(first, last + 1):
            found = self.unsettled.pop(delivery_id, None)
            if found is not None:
                settled.append(found[1])
        if settled:
            links.settle_outgoing(settled, disposition.state)
            self.resume()

    def _retire(
        self, first: int, last: int, disposition: Disposition, state: TransactionalState
    ) -> None:
        """Transactional retirement: the outcome is staged in the transaction. Deliveries the
        client settled leave the unsettled map now; the others stay until the commit applies
        the outcome (or, after a rollback, until the client settles them again)."""
        try:
            declared = self.conn.transactions.lookup(state.txn_id)
        except LinkError as err:
            raise SessionEnded(err.condition, err.description) from None
        for delivery_id in range(first, last + 1):
            if disposition.settled:
                found = self.unsettled.pop(delivery_id, None)
            else:
                found = self.unsettled.get(delivery_id)
            if found is not None and not self.conn.transactions.retire(
                declared, self, delivery_id, found[1], state.outcome, bool(disposition.settled)
            ):
                return  # the transaction ended over it: the rest is not staged either

    def _detach(self, detach: Detach) -> None:
        handle = int(detach.handle)
        link = self.links.pop(handle, None)
        if link is None:
            return  # already detached by us (a refused attach): the peer's answer
        self._release_link(link, CLOSED if detach.closed else DETACHED)
        self.conn.send(self.channel, Detach(handle=UInt(handle), closed=detach.closed))

    def _release_link(self, link: AnyLink, how: str = CLOSED) -> None:
        link.teardown()
        if link.node is not None:
            link.node.link_gone(how)
        if isinstance(link, links.OutgoingLink):
            mine = [d for d, (lnk, _) in self.unsettled.items() if lnk is link]
            back = [self.unsettled.pop(d)[1] for d in mine]
            settle(self.conn.transactions.take_over(back), Outcome.REQUEUE)

    # ------------------------------------------------------------------ view
    def view(self) -> SessionView:
        """Shown as a channel by management, as RabbitMQ's 1.0 plugin shows sessions; a session
        with a coordinator link counts as transactional."""
        shown = tuple(link_view(link) for _, link in sorted(self.links.items()))
        return SessionView(
            number=self.channel,
            state="running",
            transactional=any(link.coordinator for link in shown),
            confirm=False,
            consumer_count=sum(isinstance(k, links.OutgoingLink) for k in self.links.values()),
            prefetch_count=0,
            global_prefetch_count=0,
            unacked=len(self.unsettled),
            transactions=self.conn.transactions.declared_by(self),
            links=shown,
        )


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive ids, in order (ids wrap at 2**32)."""
    runs: list[tuple[int, int]] = []
    for delivery_id in ids:
        if runs and (runs[-1][1] + 1) & 0xFFFFFFFF == delivery_id:
            runs[-1] = (runs[-1][0], delivery_id)
        else:
            runs.append((delivery_id, delivery_id))
    return runs


def session_condition(error: AMQPError) -> str:
    """The 1.0 condition for an engine error, as RabbitMQ's 1.0 plugin maps reply codes."""
    return {
        403: "amqp:unauthorized-access",
        404: "amqp:not-found",
        405: "amqp:resource-locked",
        406: "amqp:precondition-failed",
    }.get(error.reply_code, "amqp:internal-error")


def reply_description(error: AMQPError) -> str:
    """The description RabbitMQ's plugin gives an engine error: the 0-9-1 reply text its
    internal channel was closed with, so cut to 252 bytes and "..." beyond a short string."""
    text = error.reply_text.encode()
    if len(text) > 255:
        return (text[:252] + b"...").decode(errors="ignore")
    return error.reply_text
