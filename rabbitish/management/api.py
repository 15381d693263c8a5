"""The management API's resources, as plain methods over the engine: each takes already-decoded
path parts, query and body and returns JSON-ready data or raises ApiError. Everything runs on the
broker's event loop and calls the engine directly (all engine calls are synchronous)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from rabbitish import __version__, sysinfo
from rabbitish.engine.errors import AMQPError
from rabbitish.management import errors, format, messages, sessions, stats
from rabbitish.management.clients import ClientsApi
from rabbitish.management.errors import ApiError, bad_request, not_found
from rabbitish.management.stats import CHANNEL_ONLY, QUEUE_STATS
from rabbitish.wire_names import DEFAULT_EXCHANGE_ALIAS

if TYPE_CHECKING:
    from rabbitish.config import Config
    from rabbitish.engine.auth import Authorize, User
    from rabbitish.engine.exchanges.base import Exchange
    from rabbitish.engine.node import Node
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost


class Api(ClientsApi):
    """Every resource: the client-side ones (connections, channels, links, transactions) come
    from `ClientsApi`."""

    def __init__(self, node: Node, config: Config, amqp_port: int) -> None:
        super().__init__(node, config, amqp_port)
        self.http_port = 0
        self.tls_port: int | None = None  # the AMQP TLS listener's, when it runs

    # ------------------------------------------------------------------ lookups
    def queue(self, user: User, vhost_name: str, name: str) -> Queue:
        queue = self.vhost(user, vhost_name).queues.get(name)
        if queue is None:
            raise not_found()
        return queue

    def exchange(self, user: User, vhost_name: str, name: str) -> Exchange:
        name = "" if name == DEFAULT_EXCHANGE_ALIAS else name
        exchange = self.vhost(user, vhost_name).exchanges.get(name)
        if exchange is None:
            raise not_found()
        return exchange

    # ------------------------------------------------------------------ overview
    def overview(self, user: User) -> dict[str, Any]:
        vhosts = self.vhosts(user)
        queues = [q for v in vhosts for q in v.queues.values()]
        conns = list(self._connections(user))
        ready = sum(q.message_count for q in queues)
        unacked = sum(q.unacked for q in queues)
        channel_stats = [s.message_stats for c in conns for s in c.view().sessions]
        message_stats = {
            **stats.sum_counters(map(stats.queue_message_stats, queues), QUEUE_STATS),
            "publish": sum(v.publishes for v in vhosts),
            **stats.sum_counters(channel_stats, CHANNEL_ONLY),
        }
        totals = {
            "messages": ready + unacked,
            "messages_ready": ready,
            "messages_unacknowledged": unacked,
        }
        churn = dict(self.node.churn)
        for vhost in vhosts:
            for key, value in vhost.churn.items():
                churn[key] += value
        rate = self.rates.sample(self.node, {**message_stats, **totals, **churn})
        host = self.config.host or "0.0.0.0"
        return {
            "churn_rates": stats.with_details(dict(sorted(churn.items())), rate),
            "cluster_name": format.NODE,
            "disable_stats": False,
            "contexts": [],
            "exchange_types": [
                {"name": n, "description": d, "enabled": True}
                for n, d in format.EXCHANGE_TYPES.items()
            ],
            "listeners": [
                {
                    "node": format.NODE,
                    "protocol": "amqp",
                    "ip_address": host,
                    "port": self.amqp_port,
                },
                *self._tls_listeners(host),
                {
                    "node": format.NODE,
                    "protocol": "https" if self.config.management_tls else "http",
                    "ip_address": host,
                    "port": self.http_port,
                },
            ],
            "management_version": format.RABBITMQ_VERSION,
            "message_stats": stats.with_details(message_stats, rate),
            "node": format.NODE,
            "object_totals": {
                "channels": sum(len(c.view().sessions) for c in conns),
                "connections": len(conns),
                "consumers": sum(len(q.consumers) for q in queues),
                "exchanges": sum(len(v.exchanges) for v in vhosts),
                "queues": len(queues),
            },
            "product_name": "rabbitish",
            "product_version": __version__,
            "queue_totals": stats.with_details(totals, rate),
            "rabbitmq_version": format.RABBITMQ_VERSION,
            "rates_mode": "basic",
        }

    def _tls_listeners(self, host: str) -> list[dict[str, Any]]:
        if not self.tls_port:
            return []
        return [
            {"node": format.NODE, "protocol": "amqp/ssl", "ip_address": host, "port": self.tls_port}
        ]

    def list_nodes(self, user: User) -> list[dict[str, Any]]:
        """The one node, with the fields rabbitish can report of RabbitMQ's node document (the
        rest describe the Erlang VM). Monitoring users and administrators only, as RabbitMQ."""
        if not user.is_monitor:
            raise errors.not_monitor()
        active = self.node.alarms.active
        return [
            {
                "disk_free_alarm": "disk" in active or "store" in active,
                "exchange_types": [
                    {"name": n, "description": d, "enabled": True}
                    for n, d in format.EXCHANGE_TYPES.items()
                ],
                "mem_alarm": "memory" in active,
                "mem_used": sysinfo.rss_bytes(),
                "name": format.NODE,
                "os_pid": str(os.getpid()),
                "partitions": [],
                "processors": os.cpu_count() or 1,
                "rates_mode": "basic",
                "running": True,
                "type": "disc",
            }
        ]

    @staticmethod
    def whoami(user: User) -> dict[str, Any]:
        return {"name": user.name, "tags": list(user.tags)}

    def list_vhosts(self, user: User, name: str | None = None) -> Any:
        if name is not None and not user.is_administrator:
            known = self.node.vhosts.get(name) is not None
            if not known or not self.node.users.may_see(user, name):
                raise errors.not_administrator()  # RabbitMQ answers so, even for a missing one
        found = []
        for vhost in self.vhosts(user, name):
            views = self._views(user, vhost.name)
            channel_stats = [s.message_stats for view, _ in views for s in view.sessions]
            io = stats.sum_counters(
                ({"recv_oct": e.recv_oct, "send_oct": e.send_oct} for _, e in views),
                ("recv_oct", "send_oct"),
            )
            found.append(format.vhost_json(vhost, self.rates, channel_stats, io))
        return found[0] if name is not None else found

    # ------------------------------------------------------------------ queues
    def list_queues(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        known = self._endpoints()
        return [
            format.queue_json(q, self.rates, self._owner(q, known))
            for v in self.vhosts(user, vhost)
            for _, q in sorted(v.queues.items())
        ]

    def get_queue(self, user: User, vhost: str, name: str) -> dict[str, Any]:
        queue = self.queue(user, vhost, name)
        known = self._endpoints()
        doc = format.queue_json(queue, self.rates, self._owner(queue, known))
        doc["consumer_details"] = [
            sessions.consumer_json(c, queue, self._consumer_endpoint(c, known))
            for c in queue.consumers
        ]
        doc["deliveries"] = []
        doc["incoming"] = []
        return doc

    def _writable(self, user: User, vhost_name: str) -> VirtualHost:
        """The vhost a PUT declares in: 404 when missing, 401 without permissions there."""
        vhost = self.node.vhosts.get(vhost_name)
        if vhost is None:
            raise ApiError(404, "not_found", "vhost_not_found")
        if not self.node.users.may_access(user, vhost_name):
            raise errors.vhost_refused()
        return vhost

    def _authorize(self, user: User, vhost: str) -> Authorize | None:
        return self.node.users.authorizer(user.name, vhost)

    def put_queue(self, user: User, vhost_name: str, name: str, body: dict[str, Any]) -> int:
        vhost = self._writable(user, vhost_name)
        existed = name in vhost.queues
        arguments = body.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise bad_request("arguments must be a JSON object")
        try:
            vhost.declare_queue(
                name,
                owner=None,
                durable=_flag(body, "durable"),
                auto_delete=_flag(body, "auto_delete"),
                arguments=arguments,
                authorize=self._authorize(user, vhost_name),
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None
        return 204 if existed else 201

    def delete_queue(self, user: User, vhost: str, name: str, query: Mapping[str, str]) -> None:
        self.queue(user, vhost, name)
        try:
            self.node.users.authorize(user.name, vhost, "configure", "queue", name)
            self.node.vhosts[vhost].delete_queue(
                name,
                owner=None,
                if_unused=query.get("if-unused") == "true",
                if_empty=query.get("if-empty") == "true",
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None

    def purge(self, user: User, vhost: str, name: str) -> int:
        queue = self.queue(user, vhost, name)
        try:
            self.node.users.authorize(user.name, vhost, "read", "queue", name)
            self.node.vhosts[vhost].check_exclusive(queue, None)
        except AMQPError as err:
            raise errors.from_declare(err) from None
        return queue.purge()

    def get(self, user: User, vhost: str, name: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        missing = [k for k in ("ackmode", "count", "encoding") if k not in body]
        if missing:
            raise errors.key_missing(missing)
        count = _integer(body["count"])
        truncate = _integer(body["truncate"]) if body.get("truncate") is not None else None
        ackmode, encoding = body["ackmode"], body["encoding"]
        if encoding not in ("auto", "base64"):
            raise bad_request("Unsupported encoding. Please use auto or base64.")
        if ackmode not in messages.ACKMODES:
            raise ApiError(500)  # RabbitMQ fails the same way on an unknown ackmode
        try:
            vhost_obj = self.vhost(user, vhost)
        except ApiError:
            raise errors.not_authorised() from None
        try:
            self.node.users.authorize(user.name, vhost, "read", "queue", name)
            queue = vhost_obj.queue(name, None)
        except AMQPError as err:
            raise errors.from_channel(err) from None
        return messages.get_messages(queue, count, ackmode, encoding, truncate, user.name)

    # ------------------------------------------------------------------ exchanges
    def list_exchanges(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        return [
            format.exchange_json(e, self.rates)
            for v in self.vhosts(user, vhost)
            for _, e in sorted(v.exchanges.items())
        ]

    def get_exchange(self, user: User, vhost: str, name: str) -> dict[str, Any]:
        doc = format.exchange_json(self.exchange(user, vhost, name), self.rates)
        doc["incoming"] = []
        doc["outgoing"] = []
        return doc

    def put_exchange(self, user: User, vhost_name: str, name: str, body: dict[str, Any]) -> int:
        vhost = self._writable(user, vhost_name)
        name = "" if name == DEFAULT_EXCHANGE_ALIAS else name
        existed = name in vhost.exchanges
        arguments = body.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise bad_request("arguments must be a JSON object")
        try:
            vhost.declare_exchange(
                name,
                str(body.get("type") or "direct"),
                durable=_flag(body, "durable"),
                auto_delete=_flag(body, "auto_delete"),
                internal=_flag(body, "internal"),
                arguments=arguments,
                authorize=self._authorize(user, vhost_name),
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None
        return 204 if existed else 201

    def delete_exchange(self, user: User, vhost: str, name: str, query: Mapping[str, str]) -> None:
        exchange = self.exchange(user, vhost, name)
        try:
            self.node.vhosts[vhost].delete_exchange(
                exchange.name,
                if_unused=query.get("if-unused") == "true",
                authorize=self._authorize(user, vhost),
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None

    def publish(self, user: User, vhost: str, name: str, body: dict[str, Any]) -> dict[str, bool]:
        keys = ("routing_key", "properties", "payload", "payload_encoding")
        missing = [k for k in keys if k not in body]
        if missing:
            raise errors.key_missing(missing)
        try:
            vhost_obj = self.vhost(user, vhost)
        except ApiError:
            raise errors.not_authorised() from None
        payload = messages.decode_payload(body["payload"], body["payload_encoding"])
        exchange = "" if name == DEFAULT_EXCHANGE_ALIAS else name
        try:
            assert self.node.codec is not None
            self.node.users.authorize(user.name, vhost, "write", "exchange", exchange)
            routed = messages.publish(
                vhost_obj,
                self.node.codec,
                exchange,
                str(body["routing_key"]),
                body["properties"],
                payload,
                user.name,
            )
        except AMQPError as err:
            raise errors.from_publish(err) from None
        return {"routed": routed}

    # ------------------------------------------------------------------ bindings
    def list_bindings(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        return [b for v in self.vhosts(user, vhost) for b in format.vhost_bindings(v)]

    def queue_bindings(self, user: User, vhost: str, name: str) -> list[dict[str, Any]]:
        self.queue(user, vhost, name)
        return [
            b
            for b in self.list_bindings(user, vhost)
            if b["destination_type"] == "queue" and b["destination"] == name
        ]

    def exchange_bindings(
        self, user: User, vhost: str, name: str, side: str
    ) -> list[dict[str, Any]]:
        exchange = self.exchange(user, vhost, name)
        if side == "source":
            return [b for b in self.list_bindings(user, vhost) if b["source"] == exchange.name]
        return [
            b
            for b in self.list_bindings(user, vhost)
            if b["destination_type"] == "exchange" and b["destination"] == exchange.name
        ]

    def bindings_between(
        self, user: User, vhost: str, source: str, kind: str, destination: str
    ) -> list[dict[str, Any]]:
        exchange = self.exchange(user, vhost, source)
        self._destination(user, vhost, kind, destination)
        return [
            b
            for b in self.list_bindings(user, vhost)
            if b["source"] == exchange.name
            and b["destination_type"] == kind
            and b["destination"] == destination
        ]

    def _destination(self, user: User, vhost: str, kind: str, name: str) -> Any:
        if kind == "queue":
            return self.queue(user, vhost, name)
        return self.exchange(user, vhost, name)

    def binding(
        self, user: User, vhost: str, source: str, kind: str, destination: str, props: str
    ) -> dict[str, Any]:
        for found in self.bindings_between(user, vhost, source, kind, destination):
            key = found["properties_key"]
            # The key holds %-escapes: accept it escaped once more or sent as it is.
            if props in (key, unquote_plus(key)):
                return found
        raise not_found()

    def add_binding(
        self, user: User, vhost: str, source: str, kind: str, destination: str, body: dict[str, Any]
    ) -> str:
        """Bind; returns the new binding's properties key (for the Location header)."""
        vhost_obj = self.vhost(user, vhost)
        routing_key = str(body.get("routing_key") or "")
        arguments = body.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise bad_request("arguments must be a JSON object")
        source = "" if source == DEFAULT_EXCHANGE_ALIAS else source
        try:
            vhost_obj.add_binding(
                kind,
                destination,
                source,
                routing_key,
                arguments,
                {},
                None,
                self._authorize(user, vhost),
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None
        return format.properties_key(routing_key, arguments)

    def delete_binding(
        self, user: User, vhost: str, source: str, kind: str, destination: str, props: str
    ) -> None:
        found = self.binding(user, vhost, source, kind, destination, props)
        try:
            self.node.vhosts[vhost].remove_binding(
                kind,
                destination,
                found["source"],
                found["routing_key"],
                self._binding_arguments(vhost, found),
                None,
                self._authorize(user, vhost),
            )
        except AMQPError as err:
            raise errors.from_declare(err) from None

    def _binding_arguments(self, vhost: str, found: dict[str, Any]) -> dict[str, Any]:
        """The engine's own arguments object for a listed binding (JSON loses wire types)."""
        exchange = self.node.vhosts[vhost].exchanges[found["source"]]
        for binding in exchange.bindings.values():
            listed = format.explicit_binding(vhost, binding)
            if listed == found:
                return binding.arguments
        return {}


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if isinstance(value, str):
        return value == "true"
    return bool(value)


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise bad_request(["not_integer", value])
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise bad_request(["not_integer", value]) from None
