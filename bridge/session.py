"""One AMQP 1.0 session: begin/end, the session flow-control windows, and the handle table of
its links. Links that are not served yet are refused the way the spec allows: the attach is
answered with an attach carrying no terminus, then a detach with the error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.bridge.codec import (
    Symbol,
    UInt,
)
from rabbitish.bridge.codec.definitions import (
    Attach,
    Begin,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Transfer,
)

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
            if hasattr(link, "teardown"):
                link.teardown()
        self.links.clear()

    def flush(self) -> None:
        """End of an input batch."""

    def resume(self) -> None:
        """The connection's output drained: senders may deliver again."""

    # ------------------------------------------------------------------ frames
    def _attach(self, attach: Attach) -> None:
        handle = int(attach.handle)
        if handle > self.handle_max:
            raise SessionEnded("amqp:connection:framing-error", f"handle {handle} above handle-max")
        if handle in self.links:
            raise SessionEnded(HANDLE_IN_USE, f"handle {handle} is in use")
        # Not served yet: answer with no terminus, then detach with the reason.
        self.conn.send(
            self.channel,
            Attach(
                name=attach.name,
                handle=UInt(handle),
                role=not attach.role,
                source=None,
                target=None,
            ),
        )
        self.conn.send(
            self.channel,
            Detach(
                handle=UInt(handle),
                closed=True,
                error=Error(
                    condition=Symbol(NOT_IMPLEMENTED),
                    description="links are not served on AMQP 1.0 yet",
                ),
            ),
        )

    def _flow(self, flow: Flow) -> None:
        if flow.next_incoming_id is not None:
            self.remote_incoming_window = (
                int(flow.next_incoming_id) + int(flow.incoming_window) - self.next_outgoing_id
            )
        else:
            self.remote_incoming_window = int(flow.incoming_window)
        self.remote_outgoing_window = int(flow.outgoing_window)
        if flow.handle is not None and int(flow.handle) not in self.links:
            raise SessionEnded(UNATTACHED_HANDLE, f"flow for unattached handle {flow.handle}")
        if flow.echo and flow.handle is None:
            self._send_flow()

    def _send_flow(self) -> None:
        self.conn.send(
            self.channel,
            Flow(
                next_incoming_id=UInt(self.next_incoming_id),
                incoming_window=UInt(self.incoming_window),
                next_outgoing_id=UInt(self.next_outgoing_id),
                outgoing_window=UInt(self.outgoing_window),
            ),
        )

    def _transfer(self, transfer: Transfer, payload: bytes) -> None:
        raise SessionEnded(UNATTACHED_HANDLE, f"transfer on unattached handle {transfer.handle}")

    def _disposition(self, disposition: Disposition) -> None:
        return  # nothing of ours is unsettled while no link is served

    def _detach(self, detach: Detach) -> None:
        handle = int(detach.handle)
        link = self.links.pop(handle, None)
        if link is None:
            return  # already detached by us (a refused attach): the peer's answer
        if hasattr(link, "teardown"):
            link.teardown()
        self.conn.send(self.channel, Detach(handle=UInt(handle), closed=detach.closed))

    # ------------------------------------------------------------------ view
    def view(self) -> SessionView:
        return SessionView(
            number=self.channel,
            state="running",
            transactional=False,
            confirm=False,
            consumer_count=0,
            prefetch_count=0,
            global_prefetch_count=0,
            unacked=0,
            transaction=None,
        )
