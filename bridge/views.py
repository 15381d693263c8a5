"""Management's view of AMQP 1.0 links (`LinkView`): incoming links (publishing, or a
transaction coordinator's control link) and outgoing ones, read through their own attributes
and the attach they answered."""

from __future__ import annotations

from typing import Any

from rabbitish.bridge.addresses import Address, LinkError, parse_address
from rabbitish.bridge.direct_reply import DirectReplyLink
from rabbitish.bridge.links import Link, OutgoingLink, terminus_address
from rabbitish.bridge.management_links import ManagementReplyLink

from rabbitish.engine.sessions import LinkView

SETTLE_MODES = {0: "unsettled", 1: "settled", 2: "mixed"}  # sender-settle-mode; absent: mixed


def link_view(link: Link | ManagementReplyLink | DirectReplyLink) -> LinkView:
    """The neutral view of one link."""
    attach = link.attach
    queue: str | None
    if isinstance(link, ManagementReplyLink):  # replies of the management node
        address, queue, exchange, credit = terminus_address(attach.source), None, None, link.credit
        role, coordinator, unsettled = "sender", False, 0
    elif isinstance(link, DirectReplyLink):  # direct replies: the name it was given, no queue
        address, queue, exchange, credit = link.source.address, None, None, link.credit
        role, coordinator, unsettled = "sender", False, 0
    elif isinstance(link, OutgoingLink):
        address = terminus_address(attach.source)
        parsed = _parsed(address, sending=False)
        queue = link.queue.name
        exchange = parsed.exchange if parsed is not None and parsed.queue is None else None
        credit = link.link_credit  # not `credit`, which also reports output back-pressure
        role, coordinator, unsettled = "sender", False, link.unsettled
    else:
        coordinator = link.coordinator
        address = None if coordinator else terminus_address(attach.target)
        parsed = _parsed(address, sending=True) if address != "/management" else None
        queue = parsed.queue if parsed is not None else None
        exchange = parsed.exchange if parsed is not None else None
        credit = link.credit
        role, unsettled = "receiver", 0
    mode = attach.snd_settle_mode
    return LinkView(
        name=str(attach.name),
        handle=int(link.handle),
        role=role,
        address=str(address) if address is not None else None,
        queue=queue,
        exchange=exchange,
        credit=int(credit),
        delivery_count=int(link.delivery_count),
        unsettled=int(unsettled),
        settle_mode=SETTLE_MODES.get(int(mode) if mode is not None else 2, "mixed"),
        coordinator=coordinator,
    )


def _parsed(address: Any, sending: bool) -> Address | None:
    if not isinstance(address, str):
        return None
    try:
        return parse_address(address, sending)
    except LinkError:
        return None
