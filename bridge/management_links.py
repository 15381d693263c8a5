"""The link pair of RabbitMQ 4's management node (OASIS AMQP link pair): the client attaches a
sender with target `/management` and a receiver with source `/management`, both with the same
link name and the link property `paired` = true. Requests arrive settled on the sender half;
each is answered (management_requests.py) with one settled transfer on the receiver half of the
same pair, as far as the client's credit allows (the rest wait for its next flow).

A half without `paired`, or a second attach of the same half of a pair, is refused with
`amqp:precondition-failed` on that link alone, as RabbitMQ 4 refuses it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.bridge.addresses import LinkError
from rabbitish.bridge.codec import Symbol
from rabbitish.bridge.codec.definitions import Attach, Flow, Transfer
from rabbitish.bridge.links import ReceivingLink, terminus_address
from rabbitish.bridge.management_requests import ManagementRequests

if TYPE_CHECKING:
    from rabbitish.bridge.session import Session

MANAGEMENT_ADDRESS = "/management"
PAIRED = Symbol("paired")
PRECONDITION_FAILED = "amqp:precondition-failed"


def is_management(attach: Attach, client_sends: bool) -> bool:
    """The attach names the management node (the client's sender by its target, its receiver
    by its source)."""
    terminus = attach.target if client_sends else attach.source
    address: object = terminus_address(terminus)
    return address == MANAGEMENT_ADDRESS


class ManagementPairs:
    """A session's management link pairs, by link name: each half as it attaches."""

    def __init__(self) -> None:
        self.requests: dict[str, ManagementRequestLink] = {}
        self.replies: dict[str, ManagementReplyLink] = {}

    def reply_link(self, name: str) -> ManagementReplyLink | None:
        return self.replies.get(name)

    def forget(self, link: ManagementRequestLink | ManagementReplyLink) -> None:
        table: dict[str, Any] = self.requests if link.client_sends else self.replies
        if table.get(link.name) is link:
            del table[link.name]


class RefusedPairAttach(LinkError):
    """A management half refused alone (an attach answered without a terminus, then a detach
    with the error); the session goes on."""


def _check_paired(attach: Attach, taken: bool) -> None:
    properties: dict[Any, Any] = attach.properties or {}
    if properties.get(PAIRED) is not True:
        raise RefusedPairAttach(PRECONDITION_FAILED, "link property 'paired' must be set to true")
    if taken:
        raise RefusedPairAttach(
            PRECONDITION_FAILED,
            f"received invalid attach for management link pair '{attach.name}'",
        )


class ManagementRequestLink(ReceivingLink):
    """The client's sender to `/management`: each request message is answered on the reply
    half of its pair."""

    client_sends = True

    def __init__(self, session: Session, attach: Attach) -> None:
        pairs = session.management_pairs
        self.name = str(attach.name)
        _check_paired(attach, self.name in pairs.requests)
        super().__init__(session, attach)
        conn = session.conn
        assert conn.vhost is not None
        self.requests = ManagementRequests(conn.vhost, conn, conn.authorize)
        pairs.requests[self.name] = self

    def received(self, first: Transfer, body: bytes) -> None:
        reply = self.session.management_pairs.reply_link(self.name)
        if reply is None:
            raise LinkError(
                PRECONDITION_FAILED, "received transfer on half open management link pair"
            )
        reply.send(self.requests.handle(body))

    def teardown(self) -> None:
        super().teardown()
        self.session.management_pairs.forget(self)


class ManagementReplyLink:
    """The client's receiver from `/management`: replies go out settled as its credit allows."""

    client_sends = False
    coordinator = False

    def __init__(self, session: Session, attach: Attach) -> None:
        pairs = session.management_pairs
        self.name = str(attach.name)
        _check_paired(attach, self.name in pairs.replies)
        self.session = session
        self.attach = attach
        self.handle = int(attach.handle)
        # As every link: the termini its attach reply carries, and no dynamic node.
        self.source: Any = attach.source
        self.target: Any = attach.target
        self.node: None = None
        self.delivery_count = 0
        self.link_credit = 0
        self.waiting: list[bytes] = []  # replies the client has not yet given credit for
        pairs.replies[self.name] = self

    @property
    def credit(self) -> int:
        return self.link_credit

    def send(self, reply: bytes) -> None:
        self.waiting.append(reply)
        self._send_waiting()

    def flow(self, flow: Flow) -> None:
        remote_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        self.link_credit = max(0, remote_count + int(flow.link_credit or 0) - self.delivery_count)
        self._send_waiting()
        if flow.echo:
            self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit)

    def _send_waiting(self) -> None:
        while self.waiting and self.link_credit > 0:
            self.link_credit -= 1
            self.delivery_count += 1
            self.session.send_settled(self.handle, self.waiting.pop(0))

    def teardown(self) -> None:
        self.waiting = []
        self.session.management_pairs.forget(self)
