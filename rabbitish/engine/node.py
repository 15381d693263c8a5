"""The engine's root: vhosts, users, the scheduler, the transaction registry and the front ends'
connections. One per broker process; front ends (0-9-1, 1.0) and the management API all act on
it."""

from __future__ import annotations

from collections.abc import Callable

from rabbitish.engine.alarms import Alarms
from rabbitish.engine.auth import UserDatabase
from rabbitish.engine.clock import Scheduler
from rabbitish.engine.half import HalfSettings, HalfView
from rabbitish.engine.journal import Journal, NullJournal
from rabbitish.engine.message import PropertyCodec
from rabbitish.engine.resources import BodyStore
from rabbitish.engine.sessions import FrontEndConnection
from rabbitish.engine.transactions import TransactionRegistry
from rabbitish.engine.vhost import VirtualHost

DEFAULT_VHOST = "/"
CHURN_NAMES = (
    "connection_created",
    "connection_closed",
    "channel_created",
    "channel_closed",
    "queue_declared",
    "queue_created",
    "queue_deleted",
)


class ConnectionSet(set[FrontEndConnection]):
    """The open connections, counting arrivals and departures (the overview's churn)."""

    def __init__(self, churn: dict[str, int]) -> None:
        super().__init__()
        self.churn = churn

    def add(self, conn: FrontEndConnection) -> None:
        if conn not in self:
            self.churn["connection_created"] += 1
            super().add(conn)

    def discard(self, conn: object) -> None:
        if conn in self:
            self.churn["connection_closed"] += 1
            super().discard(conn)


class Node:
    def __init__(
        self,
        scheduler: Scheduler,
        vhosts: tuple[str, ...] = ("/",),
        users: dict[str, str] | None = None,
        codec: PropertyCodec | None = None,
        half: HalfSettings | None = None,
        transaction_timeout: float = 0.0,
    ) -> None:
        self.scheduler = scheduler
        self.half_settings = half or HalfSettings()
        # How messages published through the management API are encoded (the 0-9-1 codec).
        self.codec = codec
        self.journal: Journal = NullJournal()
        self.vhosts: dict[str, VirtualHost] = {
            name: VirtualHost(name, scheduler, half_settings=self.half_settings) for name in vhosts
        }
        if DEFAULT_VHOST in self.vhosts:
            self.vhosts[DEFAULT_VHOST].description = "Default virtual host"
        # The default users (RabbitMQ's default_user), administrators with every permission on
        # the default vhosts; a data dir that was started before replaces them (store/access.py).
        self.users = UserDatabase.with_defaults(users or {"guest": "guest"}, vhosts)
        # Called with (name, vhost) when a vhost is added and (name, None) when it is deleted:
        # the store persists both.
        self.vhost_listeners: list[Callable[[str, VirtualHost | None], None]] = []
        # Counters of what came and went, for statistics: queue ones are counted by the vhosts.
        self.churn = dict.fromkeys(CHURN_NAMES, 0)
        self.connections = ConnectionSet(self.churn)
        # Every open transaction; idle ones holding work end after `transaction_timeout`
        # seconds (0: never).
        self.transactions = TransactionRegistry(
            scheduler=scheduler, idle_timeout=transaction_timeout
        )
        self.alarms = Alarms()  # raised while publishers must wait (engine/alarms.py)
        self.spill: BodyStore | None = None  # where bodies go under memory pressure
        self.on_published: Callable[[int], None] | None = None
        # The names of the vhosts being traced (engine/tracing.py): a set of names, as RabbitMQ
        # keeps it, so it outlives a vhost's deletion and never reaches the store.
        self.traced_vhosts: set[str] = set()

    def vhost(self, name: str) -> VirtualHost | None:
        return self.vhosts.get(name)

    def add_vhost(self, name: str) -> VirtualHost:
        if name not in self.vhosts:
            self.vhosts[name] = VirtualHost(
                name, self.scheduler, self.journal, half_settings=self.half_settings
            )
            self.vhosts[name].spill = self.spill
            self.vhosts[name].on_published = self.on_published
            self.vhosts[name].set_tracing(name in self.traced_vhosts)
            for listener in self.vhost_listeners:
                listener(name, self.vhosts[name])
        return self.vhosts[name]

    def set_tracing(self, name: str, on: bool) -> None:
        """trace_on / trace_off for vhost `name`, which need not exist (RabbitMQ's rabbit_trace
        start / stop): a vhost of that name created later is traced from the start."""
        if on:
            self.traced_vhosts.add(name)
        else:
            self.traced_vhosts.discard(name)
        vhost = self.vhosts.get(name)
        if vhost is not None:
            vhost.set_tracing(on)

    def tracing(self, name: str) -> bool:
        """Whether vhost `name` is traced (the management API's `tracing` field)."""
        return name in self.traced_vhosts

    def vhost_changed(self, name: str) -> None:
        """A vhost's description or tags changed: tell the listeners (the store)."""
        for listener in self.vhost_listeners:
            listener(name, self.vhosts[name])

    def delete_vhost(self, name: str) -> VirtualHost | None:
        """Forget a vhost with everything in it and every permission on it; the front ends
        close its connections. The store drops its rows through `vhost_deleted`."""
        vhost = self.vhosts.pop(name, None)
        if vhost is not None:
            for queue in list(vhost.queues.values()):
                vhost.delete_queue_object(queue)
            self.users.vhost_deleted(name)
            for listener in self.vhost_listeners:
                listener(name, None)
        return vhost

    def use_limits(self, spill: BodyStore, on_published: Callable[[int], None]) -> None:
        """Memory limits (engine/resources.py): bodies go to `spill` under pressure, and
        `on_published` hears the size of every message published."""
        self.spill, self.on_published = spill, on_published
        for vhost in self.vhosts.values():
            vhost.spill, vhost.on_published = spill, on_published

    def use_journal(self, journal: Journal) -> None:
        """From now on durable changes go to `journal` (set after recovery)."""
        self.journal = journal
        for vhost in self.vhosts.values():
            vhost.journal = journal

    def half_transactions(self) -> list[HalfView]:
        """Every undecided half transaction of every vhost (engine/half.py)."""
        return [view for vhost in self.vhosts.values() for view in vhost.half.list()]
