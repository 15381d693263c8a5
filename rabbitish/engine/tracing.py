"""RabbitMQ's firehose (rabbit_trace, 3.10): while tracing is on for a vhost, every message
published in it is copied to its `amq.rabbitmq.trace` exchange with routing key
"publish.<exchange>" (routed or not, in a transaction or not: at the publish, as RabbitMQ does),
and every delivery (to a consumer, or a get) with "deliver.<queue>". A copy carries RabbitMQ's
headers, in its order (the message's exchange, routing keys and properties, the node, then who
published or received it and where it went) and the message's body. Nothing that came through
the trace exchange is copied, so the firehose never feeds itself.

Which vhosts are traced is the node's set of names (`Node.traced_vhosts`), not a property of the
vhost: RabbitMQ keeps it in an application setting, so tracing may be turned on for a vhost that
does not exist yet, stays on for one deleted and created again, and is forgotten at a restart.
A vhost whose name is in the set holds a `Firehose`; the others hold None, which is all the
publish and deliver paths check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rabbitish.engine.exchanges.registry import DefaultExchange
from rabbitish.engine.message import FieldValue, Message
from rabbitish.engine.reply_to import is_reply_to_address
from rabbitish.engine.sessions import ConsumerSession
from rabbitish.wire_names import NODE_NAME, TRACE_EXCHANGE

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Exchange
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.routing import Publisher

# The properties table lists what is set in the reverse of the 0-9-1 field order (RabbitMQ
# folds over P_basic's fields, prepending).
PROPERTY_ORDER = (
    "cluster_id",
    "app_id",
    "user_id",
    "type",
    "timestamp",
    "message_id",
    "expiration",
    "reply_to",
    "correlation_id",
    "priority",
    "delivery_mode",
    "headers",
    "content_encoding",
    "content_type",
)


@dataclass(frozen=True, slots=True)
class TraceOrigin:
    """Who published or received a message, as a trace names them: the connection's name, the
    channel number and the user."""

    connection: str
    channel: int
    user: str


# A front end names itself by its session (0-9-1 channel, 1.0 session); the management API,
# which has no connection, by a TraceOrigin.
TraceSource = ConsumerSession | TraceOrigin


def origin_of(source: TraceSource | None) -> TraceOrigin:
    """The connection, channel and user a trace names: a session's are its connection's name as
    RabbitMQ writes it ("127.0.0.1:54321 -> 127.0.0.1:5672"), its number and its user."""
    if isinstance(source, TraceOrigin):
        return source
    if source is None:
        return TraceOrigin("", 0, "")
    socket = source.connection.socket
    name = f"{socket.peer_host}:{socket.peer_port} -> {socket.host}:{socket.port}"
    return TraceOrigin(name, source.number, source.user or "")


def _longstr(text: str) -> FieldValue:
    return FieldValue("longstr", text.encode())


def _signedint(number: int) -> FieldValue:
    return FieldValue("signedint", number)


def property_table(fields: dict[str, Any]) -> dict[str, FieldValue]:
    """A message's properties as RabbitMQ's trace lists them: the headers as a table, numbers
    (delivery mode, priority, timestamp) as signed ints, everything else as long strings."""
    table: dict[str, FieldValue] = {}
    for name in PROPERTY_ORDER:
        value = fields.get(name)
        if value is None:
            continue
        if name == "headers":
            table[name] = FieldValue("table", value)
        elif isinstance(value, int):
            table[name] = _signedint(value)
        else:
            table[name] = _longstr(str(value))
    return table


class Firehose:
    """The tracer of one vhost while tracing is on: it makes the copies and routes them through
    the vhost's trace exchange to the queues bound to it with the vhost's publisher, whose
    listener (the memory monitor) hears of their bytes as of any publish's."""

    def __init__(self, vhost_name: str, exchange: Exchange, publisher: Publisher) -> None:
        self.vhost_name = vhost_name
        self.exchange = exchange
        self.publisher = publisher

    def published(
        self,
        source: TraceSource | None,
        exchange: Exchange,
        routing_key: str,
        message: Message,
        queues: list[Queue],
    ) -> None:
        """A publish to `exchange` was routed to `queues` (before any is given the message).
        `routed_queues` names what RabbitMQ's routing returns: through the default exchange,
        every routing key but direct reply-to names (existing queues or not), else the queues
        reached; sorted, each once."""
        if exchange.name == TRACE_EXCHANGE:
            return
        if isinstance(exchange, DefaultExchange):
            keys = {routing_key, *(message.extra_keys or ())}
            routed = sorted(k for k in keys if not is_reply_to_address("", k))
        else:
            routed = sorted({queue.name for queue in queues})
        origin = origin_of(source)
        self._trace(
            "publish",
            exchange.name,
            message,
            {
                "vhost": _longstr(self.vhost_name),
                "connection": _longstr(origin.connection),
                "channel": _signedint(origin.channel),
                "user": _longstr(origin.user),
                "routed_queues": FieldValue("array", [_longstr(name) for name in routed]),
            },
        )

    def delivered(
        self, source: TraceSource | None, queue: str, message: Message, redelivered: bool
    ) -> None:
        """A message of `queue` went to a consumer or a get."""
        if message.exchange == TRACE_EXCHANGE:
            return
        origin = origin_of(source)
        self._trace(
            "deliver",
            queue,
            message,
            {
                "redelivered": _signedint(1 if redelivered else 0),
                "vhost": _longstr(self.vhost_name),
                "connection": _longstr(origin.connection),
                "channel": _signedint(origin.channel),
                "user": _longstr(origin.user),
            },
        )

    def _trace(self, kind: str, name: str, message: Message, extra: dict[str, FieldValue]) -> None:
        codec = message.codec
        headers = {
            "exchange_name": _longstr(message.exchange),
            "routing_keys": FieldValue("array", [_longstr(k) for k in message.routing_keys]),
            "properties": FieldValue(
                "table", property_table(codec.to_fields(message.raw_properties))
            ),
            "node": _longstr(NODE_NAME),
            **extra,
        }
        routing_key = f"{kind}.{name}"
        copy = codec.new_message(
            TRACE_EXCHANGE, routing_key, codec.from_fields({"headers": headers}), message.body
        )
        publisher = self.publisher
        if publisher.on_published is not None:
            publisher.on_published(copy.size)
        for queue in publisher.route(self.exchange, routing_key, copy):
            queue.enqueue(copy)
