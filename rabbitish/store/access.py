"""Users, permissions and vhosts in the data dir (the schema's v3 tables). The first start on a
data dir writes the node's defaults there (the default user with every permission on the
default vhost, as RabbitMQ's first boot creates them) and marks the data dir as seeded; every
later start loads what is stored instead, so a deleted default user stays deleted. Changes
reach the journal as ordered records and are written with the other durable changes."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rabbitish.engine.auth import AccessChange, Permission, User
from rabbitish.store.ops import Sql, Statements
from rabbitish.store.schema import ACCESS_SEEDED as SEEDED

if TYPE_CHECKING:
    from rabbitish.engine.node import Node
    from rabbitish.engine.vhost import VirtualHost
    from rabbitish.store.writer import JournalWriter


def _join(tags: tuple[str, ...]) -> str:
    return ",".join(tags)


def _split(tags: str) -> tuple[str, ...]:
    return tuple(t for t in tags.split(",") if t)


@dataclass(frozen=True, slots=True)
class PutUser(Statements):
    name: str
    password_hash: str
    hashing_algorithm: str
    tags: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO users VALUES (?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeleteUser(Statements):
    name: str

    sql: ClassVar[Sql] = (
        "DELETE FROM users WHERE name = ?1",
        "DELETE FROM permissions WHERE user = ?1",
    )


@dataclass(frozen=True, slots=True)
class PutPermission(Statements):
    user: str
    vhost: str
    configure_re: str  # (not `write`: that is the record's method)
    write_re: str
    read_re: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO permissions VALUES (?, ?, ?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeletePermission(Statements):
    user: str
    vhost: str

    sql: ClassVar[Sql] = ("DELETE FROM permissions WHERE user = ? AND vhost = ?",)


@dataclass(frozen=True, slots=True)
class PutVhost(Statements):
    name: str
    description: str
    tags: str

    sql: ClassVar[Sql] = ("INSERT OR REPLACE INTO vhosts VALUES (?, ?, ?)",)


@dataclass(frozen=True, slots=True)
class DeleteVhost(Statements):
    """A deleted vhost takes everything in it along (its queues' rows went just before)."""

    name: str

    sql: ClassVar[Sql] = (
        "DELETE FROM vhosts WHERE name = ?1",
        "DELETE FROM permissions WHERE vhost = ?1",
        "DELETE FROM policies WHERE vhost = ?1",
        "DELETE FROM bindings WHERE vhost = ?1",
        "DELETE FROM exchanges WHERE vhost = ?1",
        "DELETE FROM queues WHERE vhost = ?1",
        "DELETE FROM queue_messages WHERE vhost = ?1",
        "DELETE FROM half_messages WHERE vhost = ?1",
        "DELETE FROM half_txns WHERE vhost = ?1",
        "DELETE FROM half_settlements WHERE vhost = ?1",
        "DELETE FROM half_decisions WHERE vhost = ?1",
        "DELETE FROM messages WHERE id NOT IN (SELECT message_id FROM queue_messages) "
        "AND id NOT IN (SELECT message_id FROM half_messages)",
    )

    def params(self) -> list[tuple[str, ...]]:
        return [(self.name,)] * (len(self.sql) - 1) + [()]


def change_op(change: AccessChange) -> Statements:
    if change.kind == "user":
        if change.value is None:
            return DeleteUser(change.key[0])
        assert isinstance(change.value, User)
        user = change.value
        return PutUser(user.name, user.password_hash, user.hashing_algorithm, _join(user.tags))
    user_name, vhost = change.key
    if change.value is None:
        return DeletePermission(user_name, vhost)
    assert isinstance(change.value, Permission)
    p = change.value
    return PutPermission(user_name, vhost, p.configure, p.write, p.read)


def vhost_op(name: str, vhost: VirtualHost | None) -> Statements:
    if vhost is None:
        return DeleteVhost(name)
    return PutVhost(name, vhost.description, _join(vhost.tags))


def load_access(conn: sqlite3.Connection, node: Node, seed: bool = True) -> None:
    """Seed a fresh data dir with the node's defaults (unless `seed` is false: a read-only
    check keeps them), or replace them with what is stored. Runs before recovery, while the
    node's vhosts are still empty."""
    seeded = conn.execute("SELECT 1 FROM meta WHERE key = ?", (SEEDED,)).fetchone()
    if seeded is None and not seed:
        return
    if seeded is None:
        # A data dir from before users were stored: its vhosts were open to every user.
        for (name,) in conn.execute("SELECT vhost FROM exchanges UNION SELECT vhost FROM queues"):
            if name not in node.vhosts:
                node.add_vhost(name)
                for user in node.users.users:
                    node.users.set_permissions(user, name, Permission())
        ops: list[Statements] = [vhost_op(name, v) for name, v in node.vhosts.items()]
        ops += [change_op(AccessChange("user", (u.name,), u)) for u in node.users.users.values()]
        ops += [
            change_op(AccessChange("permission", key, p))
            for key, p in node.users.permissions.items()
        ]
        conn.execute("BEGIN")
        for op in ops:
            op.write(conn)
        conn.execute("INSERT INTO meta VALUES (?, '1')", (SEEDED,))
        conn.execute("COMMIT")
        return
    users = node.users
    users.users = {
        name: User(name, password_hash, algorithm, _split(tags))
        for name, password_hash, algorithm, tags in conn.execute("SELECT * FROM users")
    }
    users.permissions = {
        (user, vhost): Permission(configure, write, read)
        for user, vhost, configure, write, read in conn.execute("SELECT * FROM permissions")
    }
    stored = {name: (d, t) for name, d, t in conn.execute("SELECT * FROM vhosts")}
    for name in [n for n in node.vhosts if n not in stored]:
        del node.vhosts[name]
    for name, (description, tags) in stored.items():
        vhost = node.add_vhost(name)
        vhost.description, vhost.tags = description, _split(tags)


def journal_access(node: Node, writer: JournalWriter) -> None:
    """From now on every user, permission and vhost change is journaled."""
    node.users.on_change = lambda change: writer.add(change_op(change))
    node.vhost_listeners.append(lambda name, vhost: writer.add(vhost_op(name, vhost)))
