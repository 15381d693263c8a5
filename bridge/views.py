"""Management's view of AMQP 1.0 links (`LinkView`), read off any link object a session holds:
incoming and outgoing links, and whatever other kinds (a transaction coordinator) provide a
`handle` and, when they have them, the attach they answered, a name, credit and counts."""

from __future__ import annotations

from typing import Any

from rabbitish.bridge import links
from rabbitish.bridge.addresses import Address, LinkError, parse_address

from rabbitish.engine.sessions import LinkView

SETTLE_MODES = {0: "unsettled", 1: "settled", 2: "mixed"}  # sender-settle-mode; absent: mixed


def link_view(link: Any) -> LinkView:
    """The neutral view of one link; attributes a kind of link lacks read as empty."""
    attach = getattr(link, "attach", None)
    outgoing = isinstance(link, links.OutgoingLink)
    coordinator = bool(getattr(link, "coordinator", False))
    terminus = getattr(attach, "source" if outgoing else "target", None)
    address = None if coordinator else getattr(terminus, "address", None)
    parsed = _parsed(address, sending=not outgoing)
    queue: str | None
    if outgoing:
        queue = link.queue.name
        exchange = parsed.exchange if parsed is not None and parsed.queue is None else None
        credit = link.link_credit  # not `credit`, which also reports output back-pressure
    else:
        queue = parsed.queue if parsed is not None else None
        exchange = parsed.exchange if parsed is not None else None
        credit = getattr(link, "credit", 0)
    mode = getattr(attach, "snd_settle_mode", None)
    name = getattr(attach, "name", None) or getattr(link, "name", None)
    return LinkView(
        name=str(name) if name is not None else "",
        handle=int(link.handle),
        role="sender" if outgoing else "receiver",
        address=str(address) if address is not None else None,
        queue=queue,
        exchange=exchange,
        credit=int(credit),
        delivery_count=int(getattr(link, "delivery_count", 0)),
        unsettled=int(getattr(link, "unsettled", 0)),
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
