"""One AMQP 1.0 session: begin/end, the session flow-control windows, the handle table of its
links and the deliveries it sent that the client has not settled. A link that cannot be made is
refused the way the spec allows: the attach is answered with an attach carrying no terminus,
then a detach with the error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.bridge import links
from rabbitish.bridge import message as mapping
from rabbitish.bridge.codec import (
    Symbol,
    UInt,
    encode_transfers,
)
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Begin,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Transfer,
)
from rabbitish.bridge.views import link_view

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.sessions import SessionView

if TYPE_CHECKING:
    from rabbitish.bridge.connection import Connection10

WINDOW = 65535  # transfers we accept before the peer must wait for our next flow
HANDLE_MAX = 255
UNATTACHED_HANDLE = "amqp:session:unattached-handle"
HANDLE_IN_USE = "amqp:session:handle-in-use"
NOT_IMPLEMENTED = "amqp:not-implemented"
ILLEGAL_STATE = "amqp:illegal-state"


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
        self.links: dict[int, Any] = {}  # the peer's handle -> link
        self.unsettled: dict[int, tuple[links.OutgoingLink, Delivery]] = {}  # by delivery-id
        self.next_delivery_id = 0
        self.ended = False

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
            self.conn._forget(self)

    def end_with_error(self, condition: str, description: str) -> None:
        self.teardown()
        error = Error(condition=Symbol(condition), description=description or None)
        self.conn.send(self.channel, End(error=error))

    def teardown(self) -> None:
        """The session is gone (end, connection closed or lost): release what its links hold."""
        if self.ended:
            return
        self.ended = True
        for link in list(self.links.values()):
            link.teardown()
        self.links.clear()
        back = [delivery for _, delivery in self.unsettled.values()]
        self.unsettled.clear()
        settle(back, Outcome.REQUEUE)

    def flush(self) -> None:
        """End of an input batch."""

    def resume(self) -> None:
        """The connection's output drained: outgoing links may deliver again."""
        for link in list(self.links.values()):
            if isinstance(link, links.OutgoingLink):
                link.queue.dispatch()

    # ------------------------------------------------------------------ frames
    def _attach(self, attach: Attach) -> None:
        handle = int(attach.handle)
        if handle > self.handle_max:
            raise SessionEnded("amqp:connection:framing-error", f"handle {handle} above handle-max")
        if handle in self.links:
            raise SessionEnded(HANDLE_IN_USE, f"handle {handle} is in use")
        try:
            if attach.role == links.ROLE_SENDER:
                link: Any = links.IncomingLink(self, attach)
            else:
                link = links.OutgoingLink(self, attach)
        except links.LinkError as err:
            self._refuse(attach, err.condition, err.description)
            return
        except AMQPError as err:
            self._refuse(attach, session_condition(err), err.text)
            return
        self.links[handle] = link
        we_send = attach.role == links.ROLE_RECEIVER
        self.conn.send(
            self.channel,
            Attach(
                name=attach.name,
                handle=UInt(handle),
                role=not attach.role,
                snd_settle_mode=attach.snd_settle_mode,
                rcv_settle_mode=attach.rcv_settle_mode,
                source=attach.source,
                target=attach.target,
                initial_delivery_count=UInt(0) if we_send else None,
            ),
        )
        if we_send:
            link.start()
        else:
            link.grant()

    def _refuse(self, attach: Attach, condition: str, description: str) -> None:
        handle = int(attach.handle)
        self.conn.send(
            self.channel,
            Attach(name=attach.name, handle=UInt(handle), role=not attach.role),
        )
        error = Error(condition=Symbol(condition), description=description or None)
        self.conn.send(self.channel, Detach(handle=UInt(handle), closed=True, error=error))

    def link_lost(self, link: Any, condition: str, description: str) -> None:
        """The broker ends a link (its queue went away)."""
        if self.links.get(link.handle) is not link:
            return
        del self.links[link.handle]
        error = Error(condition=Symbol(condition), description=description or None)
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

    def send_delivery(self, link: links.OutgoingLink, delivery: Delivery) -> None:
        delivery_id = self.next_delivery_id
        self.next_delivery_id = (delivery_id + 1) & 0xFFFFFFFF
        payload = mapping.from_engine(delivery.entry.message, delivery.delivery_count - 1)
        transfer = Transfer(
            handle=UInt(link.handle),
            delivery_id=UInt(delivery_id),
            delivery_tag=delivery_id.to_bytes(4, "big"),
            message_format=UInt(0),
            settled=True if delivery.settled else None,
        )
        frames = encode_transfers(self.channel, transfer, payload, self.conn.max_frame_size)
        for frame in frames:
            self.conn.write(frame)
        self.next_outgoing_id = (self.next_outgoing_id + len(frames)) & 0xFFFFFFFF
        if not delivery.settled:
            self.unsettled[delivery_id] = (link, delivery)

    def accept_incoming(self, delivery_id: int) -> None:
        """A message the client sent unsettled is safely in: accepted and settled."""
        if self.ended:
            return
        self.conn.send(
            self.channel,
            Disposition(role=True, first=UInt(delivery_id), settled=True, state=Accepted()),
        )

    def _flow(self, flow: Flow) -> None:
        if flow.next_incoming_id is not None:
            self.remote_incoming_window = (
                int(flow.next_incoming_id) + int(flow.incoming_window) - self.next_outgoing_id
            )
        else:
            self.remote_incoming_window = int(flow.incoming_window)
        self.remote_outgoing_window = int(flow.outgoing_window)
        if flow.handle is not None:
            link = self.links.get(int(flow.handle))
            if link is None:
                raise SessionEnded(UNATTACHED_HANDLE, f"flow for unattached handle {flow.handle}")
            if isinstance(link, links.OutgoingLink):
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
        if not isinstance(link, links.IncomingLink):
            raise SessionEnded(
                UNATTACHED_HANDLE, f"transfer on unattached handle {transfer.handle}"
            )
        self.next_incoming_id = (self.next_incoming_id + 1) & 0xFFFFFFFF
        self.incoming_window -= 1
        if self.incoming_window < WINDOW // 2:
            self.incoming_window = WINDOW
            self._send_flow()
        link.transfer(transfer, payload)

    def _disposition(self, disposition: Disposition) -> None:
        if disposition.role != links.ROLE_RECEIVER:
            return  # about deliveries the client sent: rabbitish settles those itself
        first = int(disposition.first)
        last = int(disposition.last) if disposition.last is not None else first
        settled = []
        for delivery_id in range(first, last + 1):
            found = self.unsettled.pop(delivery_id, None)
            if found is not None:
                settled.append(found[1])
        if settled:
            links.settle_outgoing(settled, disposition.state)
            for link in self.links.values():
                if isinstance(link, links.OutgoingLink):
                    link.queue.dispatch()

    def _detach(self, detach: Detach) -> None:
        handle = int(detach.handle)
        link = self.links.pop(handle, None)
        if link is None:
            return  # already detached by us (a refused attach): the peer's answer
        link.teardown()
        if isinstance(link, links.OutgoingLink):
            mine = [d for d, (lnk, _) in self.unsettled.items() if lnk is link]
            settle([self.unsettled.pop(d)[1] for d in mine], Outcome.REQUEUE)
        self.conn.send(self.channel, Detach(handle=UInt(handle), closed=detach.closed))

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
            transactions=(),
            links=shown,
        )


def session_condition(error: AMQPError) -> str:
    """The 1.0 condition for an engine error, as RabbitMQ's 1.0 plugin maps reply codes."""
    return {
        403: "amqp:unauthorized-access",
        404: "amqp:not-found",
        405: "amqp:resource-locked",
        406: "amqp:precondition-failed",
    }.get(error.reply_code, "amqp:internal-error")
