"""The publishing side of a virtual host (`vhost.publisher`): the one publish entry point every
front end uses, routing (CC/BCC keys, exchange-to-exchange bindings, alternate exchanges), direct
reply-to, the mandatory outcome and dead-lettering. It routes over the topology's exchanges and
queues (engine/topology.py) and never changes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rabbitish.engine.dead_letter import dead_message, header_routes, is_cycle
from rabbitish.engine.errors import access_refused, not_found, precondition_failed, resource_text
from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.exchanges.registry import DefaultExchange
from rabbitish.engine.half import HALF_MARK, Effect, HalfRegistry
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.queue import Queue
from rabbitish.engine.queue_args import python_type_name
from rabbitish.engine.reply_to import REPLY_TO, check_decodable, is_reply_to_address
from rabbitish.wire_names import TXN_EXCHANGE

if TYPE_CHECKING:
    from rabbitish.engine.tracing import Firehose, TraceSource
    from rabbitish.engine.transactions import Transaction


@dataclass(slots=True)
class PublishResult:
    """What became of a publish, for the front end to report."""

    routed: bool  # reached at least one queue (a direct reply never counts, as in RabbitMQ)
    accepted: bool  # no queue refused it (x-overflow reject-publish): a confirm may be positive
    returned: bool  # mandatory and routed nowhere: the front end sends it back (312 NO_ROUTE)


class Publisher:
    """Publishing and routing for one vhost. It holds the topology's own dicts (never copies),
    so a publish reads them with no hop through the vhost."""

    def __init__(
        self,
        vhost_name: str,
        exchanges: dict[str, Exchange],
        queues: dict[str, Queue],
        half: HalfRegistry,
        settled: Callable[[Queue, QueueEntry], None],
    ) -> None:
        self.vhost_name = vhost_name
        self.exchanges = exchanges
        self.queues = queues
        self.half = half
        # A dead-lettered message leaves its queue for good, as an acked one does.
        self.settled = settled
        # Direct reply-to: pseudo-queue name -> deliver function of the consuming channel.
        self.reply_to_targets: dict[str, Callable[[Message], None]] = {}
        self.publishes = 0  # publish calls so far: a front end tells a publishing connection by it
        # Who hears of published bytes (the memory monitor samples after enough of them).
        self.on_published: Callable[[int], None] | None = None
        # The vhost's tracer while tracing is on (engine/tracing.py; set by the vhost).
        self.firehose: Firehose | None = None

    def _rs(self, kind: str, name: str) -> str:
        return resource_text(kind, name, self.vhost_name)

    # ------------------------------------------------------------------ publishing
    def publish(
        self,
        exchange: str | Exchange,
        routing_key: str,
        message: Message,
        mandatory: bool = False,
        tx: Transaction | None = None,
        source: TraceSource | None = None,
    ) -> PublishResult:
        """The one publish entry point of every front end: routing (CC/BCC, exchange-to-exchange
        bindings, alternate exchanges), direct reply-to, x-overflow reject-publish and the
        mandatory outcome. In a transaction the queues are resolved now and the work is staged;
        a mandatory return then happens at commit. A half message (x-half-txn) is routed, then
        held invisible; a publish to amq.rabbitish.txn decides one (engine/half.py). While the
        vhost is traced, the publish is traced once routed, before any queue has the message,
        naming `source` (the publisher's session) as who published it."""
        self.publishes += 1
        if self.on_published is not None:
            self.on_published(message.size)
        if isinstance(exchange, str):
            exchange = self.publish_exchange(exchange)
        exchange.published_in += 1
        effect: Effect | None = None
        if is_reply_to_address(exchange.name, routing_key):
            # The reply is handed over at once, even in a transaction, and never counts as
            # routed, so a mandatory reply comes back as basic.return (RabbitMQ 3.10 does so).
            target = self.reply_to_targets.get(routing_key)
            if target is not None:
                target(message)
            else:
                check_decodable(routing_key)
            queues: list[Queue] = []
        else:
            if exchange.name == TXN_EXCHANGE or HALF_MARK in message.raw_properties:
                effect = self.half.effect_for(exchange.name, routing_key, message)
            if effect is not None and effect.decides:
                queues = []  # a decision is for the broker: it never reaches a queue
            else:
                queues = self.route(exchange, routing_key, message)
                exchange.published_out += len(queues)
        if self.firehose is not None:
            self.firehose.published(source, exchange, routing_key, message, queues)
        if tx is not None:
            tx.stage_publish(message, queues, mandatory, effect)
            return PublishResult(bool(queues), True, False)
        if effect is not None:
            routed = effect.apply(message, queues, None)
            return PublishResult(routed, True, mandatory and not routed)
        accepted = True
        for queue in queues:
            if not queue.enqueue(message):
                accepted = False
        return PublishResult(bool(queues), accepted, mandatory and not queues)

    def reply_to_exists(self, name: str) -> bool:
        """queue.declare(passive) on a direct reply-to name: RabbitMQ answers declare-ok (0
        messages, 1 consumer) for the bare name and for a live reply-to name, else 404."""
        return name == REPLY_TO or name in self.reply_to_targets

    # ------------------------------------------------------------------ routing
    def publish_exchange(self, name: str) -> Exchange:
        """The exchange a publish names: 404 when missing, 403 when internal."""
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise not_found(f"no {self._rs('exchange', name)}")
        if exchange.internal:
            raise access_refused(f"cannot publish to internal {self._rs('exchange', name)}")
        return exchange

    def route(self, exchange: Exchange, routing_key: str, message: Message) -> list[Queue]:
        """Queues a message reaches: every routing key (CC and BCC headers add keys), through
        exchange-to-exchange bindings and alternate exchanges; each queue at most once."""
        if message.extra_keys is None:
            message.extra_keys = self._sender_selected_keys(message)
        if not message.extra_keys and isinstance(exchange, DefaultExchange):
            queue = self.queues.get(routing_key)  # the common case, kept short
            return [queue] if queue is not None else []
        keys = [routing_key, *message.extra_keys]
        queues: dict[int, Queue] = {}
        seen: set[int] = set()
        self._route_into(exchange, keys, message, queues, seen)
        return list(queues.values())

    def _sender_selected_keys(self, message: Message) -> tuple[str, ...]:
        """CC and BCC routing keys; BCC is removed from the message as RabbitMQ does."""
        raw = message.raw_properties
        cc, bcc = message.codec.sender_selected_marks
        if cc not in raw and bcc not in raw:
            return ()
        headers = message.headers
        for key in ("CC", "BCC"):
            value = headers.get(key)
            if value is not None and not isinstance(value, list):
                raise precondition_failed(
                    f'invalid message: {{unacceptable_type_in_header,"{key}",'
                    f"{python_type_name(value)}}}"
                )
        if "BCC" in headers:
            message.raw_properties = message.codec.with_headers(raw, {}, ("BCC",))
            message.reset_headers()
        return tuple(header_routes(headers))

    def _route_into(
        self,
        exchange: Exchange,
        keys: list[str],
        message: Message,
        queues: dict[int, Queue],
        seen: set[int],
    ) -> None:
        seen.add(id(exchange))
        destinations: list[Any] = []
        for key in keys if exchange.uses_routing_key else keys[:1]:
            destinations.extend(exchange.match(message, key))
        if not destinations and exchange.alternate_exchange is not None:
            alternate = self.exchanges.get(exchange.alternate_exchange)
            if alternate is not None:
                destinations.append(alternate)
        for destination in destinations:
            if isinstance(destination, Queue):
                queues[id(destination)] = destination
            elif id(destination) not in seen:
                self._route_into(destination, keys, message, queues, seen)

    # ------------------------------------------------------------------ dead-lettering
    def dead_letter(self, queue: Queue, entries: list[QueueEntry], reason: str) -> None:
        """Republish to the queue's dead-letter exchange with an x-death record, or drop.
        A message that would close a loop of automatic deaths is not delivered to the queue
        that closes it."""
        for entry in entries:
            self.settled(queue, entry)
        dlx_name = queue.args.dead_letter_exchange
        if dlx_name is None:
            return
        dlx = self.exchanges.get(dlx_name)
        if dlx is None:
            return
        routing_key = queue.args.dead_letter_routing_key
        for entry in entries:
            dead, deaths = dead_message(entry.message, queue.name, reason, dlx_name, routing_key)
            for target in self.route(dlx, dead.routing_key, dead):
                if reason == "rejected" or not is_cycle(target.name, deaths):
                    target.enqueue(dead)
