"""The engine's root: vhosts, users, the scheduler, the transaction registry and the front ends'
connections. One per broker process; front ends (0-9-1, 1.0) and the management API all act on
it."""

from __future__ import annotations

from collections.abc import Callable

from rabbitish.engine.alarms import Alarms
from rabbitish.engine.auth import User, UserDatabase
from rabbitish.engine.clock import Scheduler
from rabbitish.engine.half import HalfSettings, HalfView
from rabbitish.engine.journal import Journal, NullJournal
from rabbitish.engine.message import PropertyCodec
from rabbitish.engine.resources import BodyStore
from rabbitish.engine.sessions import FrontEndConnection
from rabbitish.engine.transactions import TransactionRegistry
from rabbitish.engine.vhost import VirtualHost


class Node:
    def __init__(
        self,
        scheduler: Scheduler,
        vhosts: tuple[str, ...] = ("/",),
        users: dict[str, str] | None = None,
        codec: PropertyCodec | None = None,
        half: HalfSettings | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.half_settings = half or HalfSettings()
        # How messages published through the management API are encoded (the 0-9-1 codec).
        self.codec = codec
        self.journal: Journal = NullJournal()
        self.vhosts: dict[str, VirtualHost] = {
            name: VirtualHost(name, scheduler, half_settings=self.half_settings) for name in vhosts
        }
        self.users = UserDatabase(
            {name: User(name, password) for name, password in (users or {"guest": "guest"}).items()}
        )
        self.connections: set[FrontEndConnection] = set()
        self.transactions = TransactionRegistry()
        self.alarms = Alarms()  # raised while publishers must wait (engine/alarms.py)
        self.spill: BodyStore | None = None  # where bodies go under memory pressure
        self.on_published: Callable[[int], None] | None = None

    def vhost(self, name: str) -> VirtualHost | None:
        return self.vhosts.get(name)

    def add_vhost(self, name: str) -> VirtualHost:
        if name not in self.vhosts:
            self.vhosts[name] = VirtualHost(
                name, self.scheduler, self.journal, half_settings=self.half_settings
            )
            self.vhosts[name].spill = self.spill
            self.vhosts[name].on_published = self.on_published
        return self.vhosts[name]

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
