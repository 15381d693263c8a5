"""The management API's client-side resources: connections of every protocol, their channels
(0-9-1 channels and AMQP 1.0 sessions), 1.0 sessions with their links, consumers and open
transactions, all read from the front ends' neutral views, and the half transactions the vhosts
hold. `Api` builds on this class, which
also holds the vhost lookups every resource shares."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rabbitish.management import errors, half, sessions
from rabbitish.management.errors import bad_request, not_found
from rabbitish.management.rates import Rates

if TYPE_CHECKING:
    from rabbitish.config import Config
    from rabbitish.engine.auth import User
    from rabbitish.engine.consumer import Consumer
    from rabbitish.engine.node import Node
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.sessions import ConnectionView, FrontEndConnection
    from rabbitish.engine.vhost import VirtualHost

CLOSED_VIA_API = "Closed via management plugin"
AMQP_1_0 = "AMQP 1-0"  # the protocol name RabbitMQ's API gives 1.0 connections


class ClientsApi:
    def __init__(self, node: Node, config: Config, amqp_port: int) -> None:
        self.node = node
        self.config = config
        self.amqp_port = amqp_port
        self.rates = Rates()

    # ------------------------------------------------------------------ lookups
    def vhost(self, user: User, name: str) -> VirtualHost:
        """A vhost named in a path: 404 when missing, RabbitMQ's 401 when the user has no
        permissions there (monitoring users and administrators see every vhost)."""
        vhost = self.node.vhosts.get(name)
        if vhost is None:
            raise not_found()
        if not self.node.users.may_see(user, name):
            raise errors.vhost_refused()
        return vhost

    def vhosts(self, user: User, name: str | None = None) -> list[VirtualHost]:
        if name is not None:
            return [self.vhost(user, name)]
        return [
            v for _, v in sorted(self.node.vhosts.items()) if self.node.users.may_see(user, v.name)
        ]

    def _connections(self, user: User, vhost: str | None = None) -> Iterator[FrontEndConnection]:
        for conn in list(self.node.connections):
            name = conn.vhost.name if conn.vhost is not None else None
            if (vhost is None or name == vhost) and (
                name is None or self.node.users.may_see(user, name)
            ):
                yield conn

    def _endpoint(self, conn: FrontEndConnection) -> sessions.Endpoint:
        return sessions.endpoint_of(conn, self.amqp_port)

    def _endpoints(self) -> dict[int, sessions.Endpoint]:
        """id(connection) -> its Endpoint, for every open connection: how the owners of
        exclusive queues and consumers' connections are named."""
        return {id(conn): self._endpoint(conn) for conn in list(self.node.connections)}

    def _views(
        self, user: User, vhost: str | None = None
    ) -> list[tuple[ConnectionView, sessions.Endpoint]]:
        return [(c.view(), self._endpoint(c)) for c in self._connections(user, vhost)]

    @staticmethod
    def _owner(queue: Queue, known: dict[int, sessions.Endpoint]) -> dict[str, Any] | None:
        # The owner is one of the open connections (its exclusive queues go when it closes).
        owner = queue.exclusive_owner
        endpoint = known.get(id(owner)) if owner is not None else None
        if endpoint is None:
            return None
        return {
            "name": endpoint.name,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
        }

    def _consumer_endpoint(
        self, consumer: Consumer, known: dict[int, sessions.Endpoint]
    ) -> sessions.Endpoint | None:
        session = consumer.session
        if session is None:
            return None
        endpoint = known.get(id(session.connection))
        return endpoint if endpoint is not None else self._endpoint(session.connection)

    # ------------------------------------------------------------------ connections
    def list_connections(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        if vhost is not None:
            self.vhost(user, vhost)
        found = [
            sessions.connection_json(view, ep, self.rates) for view, ep in self._views(user, vhost)
        ]
        return sorted(found, key=lambda c: c["name"])

    def _connection(self, user: User, name: str) -> FrontEndConnection:
        for conn in self._connections(user):
            if self._endpoint(conn).name == name:
                return conn
        raise not_found()

    def get_connection(self, user: User, name: str) -> dict[str, Any]:
        conn = self._connection(user, name)
        return sessions.connection_json(conn.view(), self._endpoint(conn), self.rates)

    def close_connection(self, user: User, name: str, reason: str | None) -> None:
        """Close with 320 CONNECTION_FORCED, as RabbitMQ does (text from the X-Reason header)."""
        self._connection(user, name).server_close(320, reason or CLOSED_VIA_API)

    def connection_sessions(self, user: User, name: str) -> list[dict[str, Any]]:
        """RabbitMQ 4.x's `/api/connections/{name}/sessions`: a 1.0 connection's sessions and
        their links; 400 for a connection of another protocol, as RabbitMQ answers."""
        view = self._connection(user, name).view()
        if view.protocol != AMQP_1_0:
            raise bad_request("connection does not use AMQP 1.0")
        return [sessions.session_json(session) for session in view.sessions]

    # ------------------------------------------------------------------ channels
    def list_channels(
        self, user: User, vhost: str | None = None, connection: str | None = None
    ) -> list[dict[str, Any]]:
        """0-9-1 channels and 1.0 sessions (as RabbitMQ's 3.x 1.0 plugin lists them)."""
        if vhost is not None:
            self.vhost(user, vhost)
        if connection is not None:
            conn = self._connection(user, connection)
            views = [(conn.view(), self._endpoint(conn))]
        else:
            views = self._views(user, vhost)
        found = [
            sessions.channel_json(view, session, endpoint, self.rates)
            for view, endpoint in views
            for session in view.sessions
        ]
        return sorted(found, key=lambda c: (c["connection_details"]["name"], c["number"]))

    def get_channel(self, user: User, name: str) -> dict[str, Any]:
        """One channel, with its consumers (RabbitMQ's per-queue and per-exchange breakdowns,
        `deliveries` and `publishes`, stay empty as in its basic rates mode)."""
        for channel in self.list_channels(user):
            if channel["name"] == name:
                channel["consumer_details"] = self._channel_consumers(user, channel)
                channel["deliveries"] = []
                channel["publishes"] = []
                return channel
        raise not_found()

    def _channel_consumers(self, user: User, channel: dict[str, Any]) -> list[dict[str, Any]]:
        known = self._endpoints()
        found = []
        for vhost in self.vhosts(user, channel["vhost"]):
            for queue in vhost.queues.values():
                for consumer in queue.consumers:
                    endpoint = self._consumer_endpoint(consumer, known)
                    session = consumer.session
                    if endpoint is None or session is None:
                        continue
                    if sessions.channel_name(endpoint, session.number) == channel["name"]:
                        found.append(sessions.consumer_json(consumer, queue, endpoint))
        return found

    def list_links(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        """Every AMQP 1.0 link (rabbitish's own listing: RabbitMQ nests them in sessions)."""
        if vhost is not None:
            self.vhost(user, vhost)
        return sessions.links_json(self._views(user, vhost))

    # ------------------------------------------------------------------ transactions, consumers
    def list_transactions(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        """Open transactions of the connections the user may see, oldest first."""
        return sessions.transactions_json(self._views(user, vhost), time.time())

    def list_half_transactions(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        """Undecided half transactions of the vhosts the user may use, oldest first."""
        now = time.time()
        found = [
            half.half_json(view, now) for v in self.vhosts(user, vhost) for view in v.half.list()
        ]
        return sorted(found, key=lambda t: t["created_at"])

    async def decide_half(self, user: User, vhost: str, txn_id: str, commit: bool) -> Any:
        """Commit or roll back one half transaction (404 for an unknown vhost or id), once
        durable."""
        decided = await half.decide(self.vhost(user, vhost), txn_id, commit)
        if decided is None:
            raise not_found()
        return decided

    def list_consumers(self, user: User, vhost: str | None = None) -> list[dict[str, Any]]:
        known = self._endpoints()
        return [
            sessions.consumer_json(c, q, self._consumer_endpoint(c, known))
            for v in self.vhosts(user, vhost)
            for _, q in sorted(v.queues.items())
            for c in q.consumers
        ]
