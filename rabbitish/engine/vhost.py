"""A virtual host: owns exchanges, queues and bindings; declares and deletes them with RabbitMQ's
checks and texts; routes published messages (exchange-to-exchange bindings, alternate exchanges);
dead-letters."""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from typing import Any

from rabbitish.engine.clock import Scheduler
from rabbitish.engine.errors import (
    AMQPError,
    ConnectionError_,
    access_refused,
    not_found,
    precondition_failed,
    resource_locked,
)
from rabbitish.engine.exchanges.base import Binding, Exchange, freeze
from rabbitish.engine.exchanges.direct import DirectExchange
from rabbitish.engine.exchanges.registry import EXCHANGE_TYPES
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.queue import Queue
from rabbitish.engine.queue_args import (
    EQUIVALENCE_CHECKED,
    check_args_equivalence,
    check_field_equivalence,
    validate_queue_arguments,
)

PREDECLARED = (
    ("amq.direct", "direct"),
    ("amq.fanout", "fanout"),
    ("amq.topic", "topic"),
    ("amq.headers", "headers"),
    ("amq.match", "headers"),
)
DEFAULT_EXCHANGE_DENIED = "operation not permitted on the default exchange"


class DefaultExchange(DirectExchange):
    """The nameless exchange: routes to the queue named by the routing key; cannot be bound."""

    def __init__(self, vhost: VirtualHost) -> None:
        super().__init__(vhost.name, "", durable=True)
        self._owner = vhost

    def match(self, message: Message, routing_key: str) -> Any:
        queue = self._owner.queues.get(routing_key)
        return (queue,) if queue is not None else ()


class VirtualHost:
    def __init__(self, name: str, scheduler: Scheduler) -> None:
        self.name = name
        self.scheduler = scheduler
        self.exchanges: dict[str, Exchange] = {}
        self.queues: dict[str, Queue] = {}
        self.queue_arg_types: dict[str, dict[str, str]] = {}
        self.exchange_arg_types: dict[str, dict[str, str]] = {}
        # Direct reply-to: pseudo-queue name -> deliver function of the consuming channel.
        self.reply_to_targets: dict[str, Callable[[Message], None]] = {}
        self.exchanges[""] = DefaultExchange(self)
        for name_, type_ in PREDECLARED:
            self.exchanges[name_] = EXCHANGE_TYPES[type_](self.name, name_, durable=True)

    # ------------------------------------------------------------------ naming
    def rs(self, kind: str, name: str) -> str:
        """RabbitMQ's resource rendering: ``queue 'q' in vhost '/'``."""
        return f"{kind} '{name}' in vhost '{self.name}'"

    # ------------------------------------------------------------------ exchanges
    def exchange(self, name: str) -> Exchange:
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise not_found(f"no {self.rs('exchange', name)}")
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
    ) -> Exchange:
        arguments = arguments or {}
        arg_types = arg_types or {}
        if passive:
            if name == "":
                return self.exchanges[""]
            return self.exchange(name)
        if name == "":
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        if name.startswith("amq."):
            raise access_refused(f"exchange name '{name}' contains reserved prefix 'amq.*'")
        existing = self.exchanges.get(name)
        if existing is not None:
            resource = self.rs("exchange", name)
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
        cls = EXCHANGE_TYPES.get(type_)
        if cls is None:
            raise ConnectionError_(503, f"invalid exchange type '{type_}'")
        exchange = cls(
            self.name,
            name,
            durable=durable,
            auto_delete=auto_delete,
            internal=internal,
            arguments=arguments,
        )
        self.exchanges[name] = exchange
        self.exchange_arg_types[name] = dict(arg_types)
        return exchange

    def delete_exchange(self, name: str, *, if_unused: bool = False) -> None:
        if name == "":
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        if name.startswith("amq."):
            raise access_refused(f"exchange name '{name}' contains reserved prefix 'amq.*'")
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise not_found(f"no {self.rs('exchange', name)}")
        if if_unused and (exchange.bindings or self._bindings_to(exchange)):
            raise precondition_failed(f"{self.rs('exchange', name)} in use")
        self._remove_exchange(exchange)

    def _remove_exchange(self, exchange: Exchange) -> None:
        exchange.deleted = True
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
            raise not_found(f"no {self.rs('queue', name)}")
        self.check_exclusive(queue, owner)
        return queue

    def check_exclusive(self, queue: Queue, owner: object | None) -> None:
        if queue.exclusive_owner is not None and queue.exclusive_owner is not owner:
            raise resource_locked(
                f"cannot obtain exclusive access to locked {self.rs('queue', queue.name)}. "
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
    ) -> Queue:
        arguments = arguments or {}
        arg_types = arg_types or {}
        if passive:
            queue = self.queue(name, owner)
            queue.touch()
            return queue
        if name == "":
            name = self.generate_queue_name()
        elif name.startswith("amq."):
            raise access_refused(f"queue name '{name}' contains reserved prefix 'amq.*'")
        if exclusive:
            durable = False  # exclusive queues are never durable (RabbitMQ ignores the flag)
        existing = self.queues.get(name)
        resource = self.rs("queue", name)
        if existing is not None:
            check_field_equivalence(resource, "durable", existing.durable, durable)
            check_field_equivalence(resource, "auto_delete", existing.auto_delete, auto_delete)
            self.check_exclusive(existing, owner if exclusive else None)
            check_args_equivalence(
                resource,
                existing.arguments,
                self.queue_arg_types.get(name, {}),
                arguments,
                arg_types,
                EQUIVALENCE_CHECKED,
            )
            existing.touch()
            return existing
        validate_queue_arguments(resource, arguments, arg_types)
        queue = Queue(
            self,
            name,
            durable=durable,
            exclusive_owner=owner if exclusive else None,
            auto_delete=auto_delete,
            arguments=arguments,
            scheduler=self.scheduler,
        )
        self.queues[name] = queue
        self.queue_arg_types[name] = dict(arg_types)
        return queue

    def delete_queue(
        self, name: str, *, owner: object | None, if_unused: bool = False, if_empty: bool = False
    ) -> int:
        queue = self.queues.get(name)
        if queue is None:
            return 0  # deleting a missing queue is not an error in RabbitMQ
        self.check_exclusive(queue, owner)
        if if_unused and queue.consumers:
            raise precondition_failed(f"{self.rs('queue', name)} in use")
        if if_empty and queue.message_count:
            raise precondition_failed(f"{self.rs('queue', name)} is not empty")
        count = queue.message_count
        self.delete_queue_object(queue)
        return count

    def delete_queue_object(self, queue: Queue) -> None:
        """Remove a queue for any reason (delete, exclusive owner gone, auto-delete, x-expires)."""
        if queue.deleted or self.queues.get(queue.name) is not queue:
            return
        del self.queues[queue.name]
        self.queue_arg_types.pop(queue.name, None)
        for binding in self._bindings_to(queue):
            binding.source.remove_binding(binding.key)
            self._maybe_auto_delete(binding.source)
        for consumer in queue.mark_deleted():
            consumer.cancelled_by_broker(queue)

    def owner_closed(self, owner: object) -> None:
        """The connection that owns exclusive queues went away: delete them."""
        for queue in [q for q in self.queues.values() if q.exclusive_owner is owner]:
            self.delete_queue_object(queue)

    # ------------------------------------------------------------------ bindings
    def _bind_check(self, source_name: str) -> Exchange:
        if source_name == "":
            raise access_refused(DEFAULT_EXCHANGE_DENIED)
        return self.exchange(source_name)

    def bind(
        self,
        destination: Queue | Exchange,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        source = self._bind_check(source_name)
        source.add_binding(Binding(source, destination, routing_key, dict(arguments or {})))

    def unbind(
        self,
        destination: Queue | Exchange,
        source_name: str,
        routing_key: str,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        source = self._bind_check(source_name)
        key = (id(destination), routing_key, freeze(dict(arguments or {})))
        if source.remove_binding(key) is not None:
            self._maybe_auto_delete(source)

    # ------------------------------------------------------------------ routing
    def publish_exchange(self, name: str) -> Exchange:
        """The exchange a publish names: 404 when missing, 403 when internal."""
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise not_found(f"no {self.rs('exchange', name)}")
        if exchange.internal:
            raise access_refused(f"cannot publish to internal {self.rs('exchange', name)}")
        return exchange

    def route(self, exchange: Exchange, routing_key: str, message: Message) -> list[Queue]:
        """Queues a message reaches: follows exchange-to-exchange bindings and alternate
        exchanges; every queue at most once."""
        queues: dict[int, Queue] = {}
        seen: set[int] = set()
        self._route_into(exchange, routing_key, message, queues, seen)
        return list(queues.values())

    def _route_into(
        self,
        exchange: Exchange,
        routing_key: str,
        message: Message,
        queues: dict[int, Queue],
        seen: set[int],
    ) -> None:
        if id(exchange) in seen:
            return
        seen.add(id(exchange))
        before = len(queues)
        matched = False
        for destination in exchange.match(message, routing_key):
            matched = True
            if isinstance(destination, Queue):
                queues[id(destination)] = destination
            else:
                self._route_into(destination, routing_key, message, queues, seen)
        if (not matched or len(queues) == before) and exchange.alternate_exchange is not None:
            alternate = self.exchanges.get(exchange.alternate_exchange)
            if alternate is not None:
                self._route_into(alternate, routing_key, message, queues, seen)

    # ------------------------------------------------------------------ settlement hooks
    def settled(self, queue: Queue, entry: QueueEntry) -> None:
        """A message left a queue for good (acked, dropped, purged). The store hooks in here."""

    def dead_letter(self, queue: Queue, entries: list[QueueEntry], reason: str) -> None:
        """Republish to the queue's dead-letter exchange with an x-death record, or drop."""
        for entry in entries:
            self.settled(queue, entry)
        dlx_name = queue.args.dead_letter_exchange
        if dlx_name is None:
            return
        dlx = self.exchanges.get(dlx_name)
        if dlx is None:
            return
        for entry in entries:
            message = entry.message
            routing_key = queue.args.dead_letter_routing_key or message.routing_key
            headers = message.headers
            deaths = self._x_death(headers, queue, message, reason)
            updates: dict[str, Any] = {"x-death": deaths}
            for key, value in (
                ("x-first-death-reason", reason),
                ("x-first-death-queue", queue.name),
                ("x-first-death-exchange", message.exchange),
            ):
                if key not in headers:
                    updates[key] = value
            raw = message.codec.with_headers(message.raw_properties, updates)
            if message.expiration_ms is not None:
                raw = message.codec.with_expiration(raw, None)
            dead = message.derive(dlx_name, routing_key, raw)
            cyclic = _cycle_queues(deaths, reason)
            for target in self.route(dlx, routing_key, dead):
                if target.name not in cyclic:
                    target.enqueue(dead)

    def _x_death(
        self, headers: dict[str, Any], queue: Queue, message: Message, reason: str
    ) -> list[dict[str, Any]]:
        existing = headers.get("x-death")
        deaths: list[dict[str, Any]] = (
            [dict(d) for d in existing if isinstance(d, dict)] if isinstance(existing, list) else []
        )
        for index, death in enumerate(deaths):
            if _text(death.get("queue")) == queue.name and _text(death.get("reason")) == reason:
                death["count"] = int(death.get("count", 0)) + 1
                deaths.insert(0, deaths.pop(index))
                return deaths
        record: dict[str, Any] = {
            "count": 1,
            "reason": reason,
            "queue": queue.name,
            "time": _now_timestamp(),
            "exchange": message.exchange,
            "routing-keys": [message.routing_key],
        }
        if message.expiration_ms is not None:
            record["original-expiration"] = str(message.expiration_ms)
        deaths.insert(0, record)
        return deaths


def _cycle_queues(deaths: list[dict[str, Any]], reason: str) -> set[str]:
    """Queues a dead-lettered message must not re-enter: RabbitMQ drops a message that would die
    again in a queue it already died in, unless a client rejected it along the way."""
    if reason == "rejected" or any(_text(d.get("reason")) == "rejected" for d in deaths):
        return set()
    return {name for d in deaths if (name := _text(d.get("queue"))) is not None}


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _now_timestamp() -> Any:
    import datetime

    return datetime.datetime.fromtimestamp(int(time.time()), tz=datetime.UTC)


__all__ = ["AMQPError", "DefaultExchange", "VirtualHost"]
