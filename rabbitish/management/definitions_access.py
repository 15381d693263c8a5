"""Users, permissions, topic permissions and global parameters in definitions files: the one
place that maps them onto the broker's user model (engine/auth.py), which keeps RabbitMQ's
password hashes and per-vhost permission patterns itself, so both round-trip exactly.

Topic permissions and global parameters have no effect in rabbitish; they are kept per node,
so a file exported from RabbitMQ exports back equal."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.engine.auth import HASHES, SHA256, Permission, User, parse_tags
from rabbitish.management.access import permission_json, user_json

if TYPE_CHECKING:
    from rabbitish.engine.node import Node


@dataclass
class _Kept:
    """What rabbitish does not act on, kept for export."""

    topic_permissions: list[dict[str, Any]] = field(default_factory=list)
    global_parameters: dict[str, Any] = field(default_factory=dict)


_KEPT: weakref.WeakKeyDictionary[Node, _Kept] = weakref.WeakKeyDictionary()


def _kept(node: Node) -> _Kept:
    kept = _KEPT.get(node)
    if kept is None:
        kept = _KEPT[node] = _Kept()
    return kept


# ---------------------------------------------------------------------- export
def export_users(node: Node) -> list[dict[str, Any]]:
    return [user_json(user) for _, user in sorted(node.users.users.items())]


def export_permissions(node: Node) -> list[dict[str, Any]]:
    return [
        permission_json(user, vhost, permission)
        for (user, vhost), permission in sorted(node.users.permissions.items())
    ]


def export_topic_permissions(node: Node) -> list[dict[str, Any]]:
    return list(_kept(node).topic_permissions)


def export_global_parameters(node: Node) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in sorted(_kept(node).global_parameters.items())]


# ---------------------------------------------------------------------- import
def import_user(node: Node, item: dict[str, Any]) -> None:
    name = str(item["name"])
    tags = parse_tags(item.get("tags") or ())
    if "password" in item:
        node.users.add_user(name, str(item["password"]), tags=tags)
        return
    algorithm = str(item.get("hashing_algorithm") or SHA256)
    if algorithm not in HASHES:
        algorithm = SHA256
    node.users.put_user(User(name, str(item.get("password_hash") or ""), algorithm, tags))


def import_permission(node: Node, item: dict[str, Any]) -> None:
    name, vhost = str(item["user"]), str(item["vhost"])
    if name not in node.users.users or vhost not in node.vhosts:
        return
    patterns = (str(item.get(k, "")) for k in ("configure", "write", "read"))
    node.users.set_permissions(name, vhost, Permission(*patterns))


def import_topic_permission(node: Node, item: dict[str, Any]) -> None:
    kept = _kept(node).topic_permissions
    key = (item.get("user"), item.get("vhost"), item.get("exchange"))
    kept[:] = [p for p in kept if (p.get("user"), p.get("vhost"), p.get("exchange")) != key]
    kept.append(dict(item))


def import_global_parameter(node: Node, item: dict[str, Any]) -> None:
    _kept(node).global_parameters[str(item["name"])] = item.get("value")
