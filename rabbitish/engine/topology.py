"""A vhost's topology: its exchanges, queues and bindings, declared, recovered and deleted with
RabbitMQ's order of checks and error texts, and the counts statistics keep of them (churn, the
counters of deleted queues). Queues are made here and told their host (engine/queue.py)."""

from __future__ import annotations

import base64
import os
from typing import Any, Protocol

from rabbitish.engine.auth import Authorize
from rabbitish.engine.clock import Scheduler
from rabbitish.engine.errors import (
    AMQPError,
    access_refused,
    not_found,
    precondition_failed,
    resource_locked,
    resource_text,
)
from rabbitish.engine.exchanges.base import Binding, Exchange, freeze
from rabbitish.engine.exchanges.registry import DefaultExchange, exchange_type
from rabbitish.engine.half import DecisionExchange
from rabbitish.engine.queue import STAT_NAMES, Queue, QueueHost
from rabbitish.engine.queue_args import (
    check_args_equivalence,
    check_field_equivalence,
    check_queue_properties,
    check_server_named,
    equivalence_keys,
    python_type_name,
    validate_queue_arguments,
)
from rabbitish.wire_names import TRACE_EXCHANGE, TXN_EXCHANGE

# Every vhost's exchanges from the start, as RabbitMQ's rabbit_vhost declares them: (name, type,
# internal). amq.rabbitmq.trace receives the firehose (engine/tracing.py); clients may bind to
# it but not publish to it.
PREDECLARED = (
    ("amq.direct", "direct", False),
    ("amq.fanout", "fanout", False),
    ("amq.topic", "topic", False),
    ("amq.headers", "headers", False),
    ("amq.match", "headers", False),
    (TRACE_EXCHANGE, "topic", True),
)
DEFAULT_EXCHANGE_DENIED = "operation not permitted on the default exchange"


class DeclaredPolicies(Protocol):
    """What the topology asks of the vhost's policies (engine/policies.py): apply the matching
    ones to a queue or exchange it has just made."""

    def apply_to_queue(self, queue: Queue) -> None: ...

    def apply_to_exchange(self, exchange: Exchange) -> None: ...


class TopologyHost(QueueHost, Protocol):
    """The vhost as its topology sees it: the host its queues are given, the clock they run on,
    and the policies applied to whatever is declared. The journal (in `QueueHost`) hears every
    durable change."""

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def policies(self) -> DeclaredPolicies: ...


class Topology:
    """Exchanges, queues and the bindings between them, for one vhost."""

    def __init__(self, host: TopologyHost) -> None:
        self.host = host
        self.vhost_name = host.name
        self.exchanges: dict[str, Exchange] = {}
        self.queues: dict[str, Queue] = {}
        self.queue_arg_types: dict[str, dict[str, str]] = {}
        self.exchange_arg_types: dict[str, dict[str, str]] = {}
        # Counters of deleted queues, so node-wide totals (metrics) never go down.
        self.deleted_queue_stats = dict.fromkeys(STAT_NAMES, 0)
        self.churn = {"queue_declared": 0, "queue_created": 0, "queue_deleted": 0}
        self.exchanges[""] = DefaultExchange(self.vhost_name, self.queues)
        for name, type_, internal in PREDECLARED:
            self.exchanges[name] = exchange_type(type_)(
                self.vhost_name, name, durable=True, internal=internal
            )
        self.exchanges[TXN_EXCHANGE] = DecisionExchange(self.vhost_name, TXN_EXCHANGE, durable=True)

    def _rs(self, kind: str, name: str) -> str:
        return resource_text(kind, name, self.vhost_name)

    # ------------------------------------------------------------------ exchanges
    def exchange(self, name: str) -> Exchange:
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise not_found(f"no {self._rs('exchange', name)}")
        return exchange

    def declare_exchange(
        self,
        name: str,
        type_: str,
        *,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: dict[str, Any] | None = None,
        arg_types: dict[str, str] | None = None,
        authorize: Authorize | None = None,
    ) -> Exchange:
        """exchange.declare with RabbitMQ's order of checks: type, default exchange, configure
        permission, then equivalence with an existing exchange or name and argument checks
        (and read / write permissions for an alternate exchange) for a new one."""
        arguments = arguments or {}
        arg_types = arg_types or {}
        if passive:
            if name == "":
                raise access_refused(DEFAULT_EXCHANGE_DENIED)
            return self.exchange(name)
        cls = exchange_type(type_)
        if name == "":
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        if authorize is not None:
            authorize("configure", "exchange", name)
        existing = self.exchanges.get(name)
        if existing is not None:
            resource = self._rs("exchange", name)
            check_field_equivalence(resource, "type", existing.type_name, type_)
            check_field_equivalence(resource, "durable", existing.durable, durable)
            check_field_equivalence(resource, "auto_delete", existing.auto_delete, auto_delete)
            check_field_equivalence(resource, "internal", existing.internal, internal)
            check_args_equivalence(
                resource,
                existing.arguments,
                self.exchange_arg_types.get(name, {}),
                arguments,
                arg_types,
                ("alternate-exchange",),
            )
            return existing
        if name.startswith("amq."):
            raise access_refused(f"exchange name '{name}' contains reserved prefix 'amq.*'")
        ae_type = arg_types.get("alternate-exchange") or (
            python_type_name(arguments["alternate-exchange"])
            if "alternate-exchange" in arguments
            else "longstr"
        )
        if ae_type != "longstr":
            raise precondition_failed(
                f"invalid type '{ae_type}' for arg 'alternate-exchange' in "
                f"{self._rs('exchange', name)}"
            )
        if authorize is not None and "alternate-exchange" in arguments:
            authorize("read", "exchange", name)
            authorize("write", "exchange", str(arguments["alternate-exchange"]))
        return self._add_exchange(cls, name, durable, auto_delete, internal, arguments, arg_types)

    def recover_exchange(
        self,
        name: str,
        type_: str,
        *,
        auto_delete: bool,
        internal: bool,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> Exchange:
        """Recreate a durable exchange from the store, without declare's checks (see
        `recover_queue`)."""
        cls = exchange_type(type_)
        return self._add_exchange(cls, name, True, auto_delete, internal, arguments, arg_types)

    def _add_exchange(
        self,
        cls: type[Exchange],
        name: str,
        durable: bool,
        auto_delete: bool,
        internal: bool,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> Exchange:
        exchange = cls(
            self.vhost_name,
            name,
            durable=durable,
            auto_delete=auto_delete,
            internal=internal,
            arguments=arguments,
        )
        self.exchanges[name] = exchange
        self.exchange_arg_types[name] = dict(arg_types)
        self.host.policies.apply_to_exchange(exchange)
        self.host.journal.exchange_declared(exchange, arg_types)
        return exchange

    def delete_exchange(
        self, name: str, *, if_unused: bool = False, authorize: Authorize | None = None
    ) -> None:
        """exchange.delete: the default and amq.* exchanges are refused, then the configure
        permission is checked; a missing exchange is fine; if_unused looks at bindings from
        the exchange only."""
        if name == "":
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        if name.startswith("amq."):
            raise access_refused(f"deletion of system {self._rs('exchange', name)} not allowed")
        if authorize is not None:
            authorize("configure", "exchange", name)
        exchange = self.exchanges.get(name)
        if exchange is None:
            return
        if if_unused and exchange.bindings:
            raise precondition_failed(f"{self._rs('exchange', name)} in use")
        self._remove_exchange(exchange)

    def _remove_exchange(self, exchange: Exchange) -> None:
        exchange.deleted = True
        self.host.journal.exchange_deleted(exchange)
        self.exchanges.pop(exchange.name, None)
        self.exchange_arg_types.pop(exchange.name, None)
        for binding in list(exchange.bindings.values()):
            exchange.remove_binding(binding.key)
        for binding in self._bindings_to(exchange):
            binding.source.remove_binding(binding.key)
            self._maybe_auto_delete(binding.source)

    def _bindings_to(self, destination: Any) -> list[Binding]:
        found = []
        for exchange in self.exchanges.values():
            if exchange.name == "":
                continue
            found.extend(exchange.bindings_to(destination))
        return found

    def _maybe_auto_delete(self, exchange: Exchange) -> None:
        if exchange.auto_delete and not exchange.bindings and not exchange.deleted:
            self._remove_exchange(exchange)

    # ------------------------------------------------------------------ queues
    def queue(self, name: str, owner: object | None) -> Queue:
        """Look a queue up for use by a connection: 404 when missing, 405 when exclusive to
        another connection."""
        queue = self.queues.get(name)
        if queue is None:
            raise not_found(f"no {self._rs('queue', name)}")
        self.check_exclusive(queue, owner)
        return queue

    def check_exclusive(self, queue: Queue, owner: object | None) -> None:
        if queue.exclusive_owner is not None and queue.exclusive_owner is not owner:
            raise self._locked(queue)

    def _locked(self, queue: Queue) -> AMQPError:
        return resource_locked(
            f"cannot obtain exclusive access to locked {self._rs('queue', queue.name)}. "
            "It could be originally declared on another connection or the exclusive "
            "property value does not match that of the original declaration."
        )

    @staticmethod
    def generate_queue_name() -> str:
        return "amq.gen-" + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")

    def declare_queue(
        self,
        name: str,
        *,
        owner: object | None,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
        arg_types: dict[str, str] | None = None,
        authorize: Authorize | None = None,
    ) -> Queue:
        """queue.declare with RabbitMQ's order of checks: name (only a classic queue may be
        server-named), configure permission, then an existing queue must match exactly in
        exclusivity (405), then durable, auto_delete and its type's arguments (406); a new queue
        with a dead-letter exchange needs read on itself and write on that exchange, then its
        arguments are checked for its type and a quorum queue or stream must be durable, not
        exclusive and not auto-delete."""
        arguments = arguments or {}
        arg_types = arg_types or {}
        self.churn["queue_declared"] += 1
        if passive:
            queue = self.queue(name, owner)
            queue.touch()
            return queue
        if name == "":
            check_server_named(arguments)
            name = self.generate_queue_name()
        elif name.startswith("amq."):
            raise access_refused(f"queue name '{name}' contains reserved prefix 'amq.*'")
        if authorize is not None:
            authorize("configure", "queue", name)
        if exclusive:
            durable = False  # exclusive queues are never durable (RabbitMQ ignores the flag)
        existing = self.queues.get(name)
        resource = self._rs("queue", name)
        if existing is not None:
            if existing.exclusive_owner is not (owner if exclusive else None):
                raise self._locked(existing)
            check_field_equivalence(resource, "durable", existing.durable, durable)
            check_field_equivalence(resource, "auto_delete", existing.auto_delete, auto_delete)
            check_args_equivalence(
                resource,
                existing.arguments,
                self.queue_arg_types.get(name, {}),
                arguments,
                arg_types,
                equivalence_keys(existing.arguments),
            )
            existing.touch()
            return existing
        dlx = arguments.get("x-dead-letter-exchange")
        if authorize is not None and isinstance(dlx, str | bytes):
            authorize("read", "queue", name)
            authorize("write", "exchange", dlx.decode() if isinstance(dlx, bytes) else dlx)
        validate_queue_arguments(resource, arguments, arg_types)
        check_queue_properties(
            resource, arguments, durable=durable, exclusive=exclusive, auto_delete=auto_delete
        )
        return self._add_queue(
            name, durable, owner if exclusive else None, auto_delete, arguments, arg_types
        )

    def recover_queue(
        self,
        name: str,
        *,
        auto_delete: bool,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> Queue:
        """Recreate a durable queue from the store. None of declare's checks apply: what the
        broker accepted once (a server-named 'amq.gen-' queue, arguments checked when declared)
        must come back, so recovery never refuses it."""
        return self._add_queue(name, True, None, auto_delete, arguments, arg_types)

    def _add_queue(
        self,
        name: str,
        durable: bool,
        exclusive_owner: object | None,
        auto_delete: bool,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> Queue:
        queue = Queue(
            self.host,
            name,
            durable=durable,
            exclusive_owner=exclusive_owner,
            auto_delete=auto_delete,
            arguments=arguments,
            scheduler=self.host.scheduler,
        )
        self.queues[name] = queue
        self.queue_arg_types[name] = dict(arg_types)
        self.churn["queue_created"] += 1
        self.host.policies.apply_to_queue(queue)
        self.host.journal.queue_declared(queue, arg_types)
        return queue

    def delete_queue(
        self, name: str, *, owner: object | None, if_unused: bool = False, if_empty: bool = False
    ) -> int:
        queue = self.queues.get(name)
        if queue is None:
            return 0  # deleting a missing queue is not an error in RabbitMQ
        self.check_exclusive(queue, owner)
        if if_unused and queue.consumers:
            raise precondition_failed(f"{self._rs('queue', name)} in use")
        if if_empty and queue.message_count:
            raise precondition_failed(f"{self._rs('queue', name)} not empty")
        count = queue.message_count
        self.delete_queue_object(queue)
        return count

    def delete_queue_object(self, queue: Queue) -> None:
        """Remove a queue for any reason (delete, exclusive owner gone, auto-delete, x-expires)."""
        if queue.deleted or self.queues.get(queue.name) is not queue:
            return
        del self.queues[queue.name]
        self.queue_arg_types.pop(queue.name, None)
        for name, count in queue.stats.items():
            self.deleted_queue_stats[name] += count
        self.churn["queue_deleted"] += 1
        self.host.journal.queue_deleted(queue)
        for binding in self._bindings_to(queue):
            binding.source.remove_binding(binding.key)
            self._maybe_auto_delete(binding.source)
        for consumer in queue.mark_deleted():
            consumer.cancelled_by_broker()

    def owner_closed(self, owner: object) -> None:
        """The connection that owns exclusive queues went away: delete them."""
        for queue in [q for q in self.queues.values() if q.exclusive_owner is owner]:
            self.delete_queue_object(queue)

    # ------------------------------------------------------------------ bindings
    def bind(
        self,
        destination: Queue | Exchange,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        """Add a binding between objects already resolved (recovery, internal callers)."""
        source = self.exchange(source_name)
        self._add(Binding(source, destination, routing_key, dict(arguments or {})))

    def _add(self, binding: Binding) -> None:
        if binding.source.add_binding(binding):
            self.host.journal.binding_added(binding)

    def _remove(self, source: Exchange, key: tuple[int, str, Any]) -> bool:
        binding = source.remove_binding(key)
        if binding is not None:
            self.host.journal.binding_removed(binding)
        return binding is not None

    def unbind(
        self,
        destination: Queue | Exchange,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        """Remove a binding between objects already resolved; missing is fine."""
        source = self.exchanges.get(source_name)
        if source is None:
            return
        key = (id(destination), routing_key, freeze(dict(arguments or {})))
        if self._remove(source, key):
            self._maybe_auto_delete(source)

    def _destination(self, kind: str, name: str) -> Queue | Exchange | None:
        return (self.queues if kind == "queue" else self.exchanges).get(name)

    @staticmethod
    def _check_binding(
        kind: str, destination_name: str, source_name: str, authorize: Authorize | None
    ) -> None:
        """RabbitMQ's order: write on the destination, the default exchange refused on either
        side, read on the source."""
        if authorize is not None:
            authorize("write", kind, destination_name)
        if source_name == "" or (kind == "exchange" and destination_name == ""):
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        if authorize is not None:
            authorize("read", "exchange", source_name)

    def add_binding(
        self,
        kind: str,
        destination_name: str,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
        owner: object | None,
        authorize: Authorize | None = None,
    ) -> None:
        """queue.bind / exchange.bind in RabbitMQ's order of checks: permissions and default
        exchange (403), source then destination (404), binding arguments (406), exclusive
        queue (405)."""
        self._check_binding(kind, destination_name, source_name, authorize)
        source = self.exchange(source_name)
        destination = self._destination(kind, destination_name)
        if destination is None:
            raise not_found(f"no {self._rs(kind, destination_name)}")
        source.validate_binding(destination, routing_key, arguments, arg_types)
        if isinstance(destination, Queue):
            self.check_exclusive(destination, owner)
        self._add(Binding(source, destination, routing_key, dict(arguments)))

    def remove_binding(
        self,
        kind: str,
        destination_name: str,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any],
        owner: object | None,
        authorize: Authorize | None = None,
    ) -> None:
        """queue.unbind / exchange.unbind: unbinding what does not exist succeeds, as in
        RabbitMQ; an auto-delete source goes with its last binding."""
        self._check_binding(kind, destination_name, source_name, authorize)
        source = self.exchanges.get(source_name)
        destination = self._destination(kind, destination_name)
        if source is None or destination is None:
            return
        key = (id(destination), routing_key, freeze(dict(arguments)))
        if key not in source.bindings:
            return
        if isinstance(destination, Queue):
            self.check_exclusive(destination, owner)
        self._remove(source, key)
        self._maybe_auto_delete(source)
