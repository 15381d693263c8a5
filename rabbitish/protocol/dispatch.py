"""The method handlers of the 0-9-1 channel in one table: which function handles each method a
client may send on an open channel. The Connection gives this table to every Channel it opens, so
channel.py never imports a handler module and the handler modules import Channel only for type
checking: protocol/ has no import cycle. A method missing here is refused as RabbitMQ refuses it
(503 "unimplemented method", after its arguments were decoded).

The hot methods carry a hand-rolled decoder: their handler gets the decoded fields instead of a
pamqp object (a malformed frame still gets the strict decoder's error). A method that carries
content starts content assembly; its handler runs once the header and body are in, with the raw
properties and the body after the fields."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rabbitish.protocol import basic, outgoing, tx, wiring
from rabbitish.protocol.framing import METHOD_INDEX


@dataclass(frozen=True, slots=True)
class Route:
    handler: Callable[..., None]
    # Hand-rolled decoder returning the handler's arguments; None: the handler gets
    # (channel, pamqp method, payload) from the strict decoder.
    decode: Callable[[bytes], tuple[Any, ...]] | None = None
    content: bool = False  # the method carries content (basic.publish)


Routes = Mapping[int, Route]

_BY_NAME: dict[str, Route] = {
    # channel
    "Channel.Open": Route(wiring.channel_open),
    "Channel.Close": Route(wiring.channel_close),
    "Channel.CloseOk": Route(wiring.channel_close_ok),
    "Channel.Flow": Route(wiring.channel_flow),
    "Channel.FlowOk": Route(wiring.channel_flow_ok),
    # exchange
    "Exchange.Declare": Route(wiring.exchange_declare),
    "Exchange.Delete": Route(wiring.exchange_delete),
    "Exchange.Bind": Route(wiring.exchange_bind),
    "Exchange.Unbind": Route(wiring.exchange_unbind),
    # queue
    "Queue.Declare": Route(wiring.queue_declare),
    "Queue.Bind": Route(wiring.queue_bind),
    "Queue.Unbind": Route(wiring.queue_unbind),
    "Queue.Purge": Route(wiring.queue_purge),
    "Queue.Delete": Route(wiring.queue_delete),
    # basic
    "Basic.Qos": Route(basic.basic_qos),
    "Basic.Consume": Route(basic.basic_consume),
    "Basic.Cancel": Route(basic.basic_cancel),
    "Basic.Publish": Route(basic.publish, outgoing.decode_publish, content=True),
    "Basic.Get": Route(basic.basic_get),
    "Basic.Ack": Route(basic.ack, outgoing.decode_ack),
    "Basic.Reject": Route(basic.basic_reject),
    "Basic.Nack": Route(basic.basic_nack),
    "Basic.Recover": Route(basic.basic_recover),
    "Basic.RecoverAsync": Route(basic.basic_recover),
    # confirm, tx
    "Confirm.Select": Route(wiring.confirm_select),
    "Tx.Select": Route(tx.tx_select),
    "Tx.Commit": Route(tx.tx_commit),
    "Tx.Rollback": Route(tx.tx_rollback),
}


def routes_by_index(by_name: Mapping[str, Route]) -> dict[int, Route]:
    """The table keyed by method index ((class id << 16) | method id), as frames carry it."""
    return {METHOD_INDEX[name]: route for name, route in by_name.items()}


ROUTES: Routes = routes_by_index(_BY_NAME)
