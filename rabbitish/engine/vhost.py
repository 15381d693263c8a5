"""A virtual host, composed of named parts that each own their state: `topology` (exchanges,
queues and bindings, declared and deleted with RabbitMQ's checks; engine/topology.py),
`publisher` (publishing, routing, direct reply-to and dead-lettering; engine/routing.py), `half`
(half transactions; engine/half.py) and `policies` (engine/policies.py). The vhost itself holds
what they share (its name, clock, journal and spill store) and is the host its queues see
(`QueueHost`). Front ends, management and the store call the vhost's methods, which are the
parts' own, bound once (no extra call per published message)."""

from __future__ import annotations

from collections.abc import Callable

from rabbitish.engine.clock import Scheduler
from rabbitish.engine.errors import AMQPError, resource_text
from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.exchanges.registry import DefaultExchange
from rabbitish.engine.half import HalfRegistry, HalfSettings
from rabbitish.engine.journal import Journal, NullJournal
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.policies import VhostPolicies
from rabbitish.engine.queue import Queue
from rabbitish.engine.resources import BodyStore
from rabbitish.engine.routing import Publisher
from rabbitish.engine.topology import Topology
from rabbitish.engine.tracing import Firehose
from rabbitish.wire_names import TRACE_EXCHANGE


class VirtualHost:
    def __init__(
        self,
        name: str,
        scheduler: Scheduler,
        journal: Journal | None = None,
        half_settings: HalfSettings | None = None,
    ) -> None:
        self.name = name
        self.description = ""  # as the management API and definitions show them
        self.tags: tuple[str, ...] = ()
        self.scheduler = scheduler
        self.journal: Journal = journal or NullJournal()
        # Memory limits (engine/resources.py): where bodies go under memory pressure.
        self.spill: BodyStore | None = None
        self.topology = topology = Topology(self)
        self.half = HalfRegistry(self, half_settings or HalfSettings())
        self.publisher = publisher = Publisher(
            name, topology.exchanges, topology.queues, self.half, self.settled
        )
        self.policies = VhostPolicies(self)
        # The tracer while tracing is on (engine/tracing.py), else None: the publisher and the
        # queues check it on every publish and delivery, so it is a plain attribute of both.
        self.firehose: Firehose | None = None

        # The topology's entry points (declare, delete, bind; recovery's recover_*).
        self.exchange = topology.exchange
        self.declare_exchange = topology.declare_exchange
        self.recover_exchange = topology.recover_exchange
        self.delete_exchange = topology.delete_exchange
        self.queue = topology.queue
        self.check_exclusive = topology.check_exclusive
        self.declare_queue = topology.declare_queue
        self.recover_queue = topology.recover_queue
        self.delete_queue = topology.delete_queue
        self.delete_queue_object = topology.delete_queue_object
        self.owner_closed = topology.owner_closed
        self.bind = topology.bind
        self.unbind = topology.unbind
        self.add_binding = topology.add_binding
        self.remove_binding = topology.remove_binding
        # The publisher's: these are on every publish's path, so bound here once.
        self.publish = publisher.publish
        self.publish_exchange = publisher.publish_exchange
        self.route = publisher.route
        self.reply_to_exists = publisher.reply_to_exists
        self.dead_letter = publisher.dead_letter

    def set_tracing(self, on: bool) -> None:
        """Start or stop the firehose (the node decides, by name: `Node.set_tracing`)."""
        firehose = None
        if on:
            firehose = self.firehose or Firehose(
                self.name, self.topology.exchanges[TRACE_EXCHANGE], self.publisher
            )
        self.firehose = self.publisher.firehose = firehose

    @property
    def tracing(self) -> bool:
        return self.firehose is not None

    def rs(self, kind: str, name: str) -> str:
        """RabbitMQ's resource rendering: ``queue 'q' in vhost '/'``."""
        return resource_text(kind, name, self.name)

    def settled(self, queue: Queue, entry: QueueEntry) -> None:
        """A message left a queue for good (acked, dropped, purged, dead-lettered)."""
        self.journal.message_removed(queue, entry)

    # ------------------------------------------------------------------ the parts' state
    @property
    def exchanges(self) -> dict[str, Exchange]:
        return self.topology.exchanges

    @property
    def queues(self) -> dict[str, Queue]:
        return self.topology.queues

    @property
    def queue_arg_types(self) -> dict[str, dict[str, str]]:
        return self.topology.queue_arg_types

    @property
    def exchange_arg_types(self) -> dict[str, dict[str, str]]:
        return self.topology.exchange_arg_types

    @property
    def churn(self) -> dict[str, int]:
        return self.topology.churn

    @property
    def deleted_queue_stats(self) -> dict[str, int]:
        return self.topology.deleted_queue_stats

    @property
    def reply_to_targets(self) -> dict[str, Callable[[Message], None]]:
        return self.publisher.reply_to_targets

    @property
    def publishes(self) -> int:
        """Publish calls so far: a front end tells a publishing connection by it."""
        return self.publisher.publishes

    @property
    def on_published(self) -> Callable[[int], None] | None:
        """Who hears of published bytes (the memory monitor, engine/resources.py)."""
        return self.publisher.on_published

    @on_published.setter
    def on_published(self, listener: Callable[[int], None] | None) -> None:
        self.publisher.on_published = listener


__all__ = ["AMQPError", "DefaultExchange", "VirtualHost"]
