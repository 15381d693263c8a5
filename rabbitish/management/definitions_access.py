"""Users, permissions, topic permissions and global parameters in definitions files: the one
place that maps them onto the broker's user model (engine/auth.py).

The model this adapter reads today keeps a plain password, tags and the set of vhosts a user may
use (None: all). So: an exported user carries a RabbitMQ SHA-256 hash of that password (salted
from the name, so exports are stable); an imported user whose hash matches a known user's
password keeps that user and its hash; a new imported user is listed and exported with its hash
but cannot log in until the model stores hashes; a permission grants its vhost, and its three
regular expressions are kept for export only. When engine/auth.py keeps password hashes,
hashing algorithms and per-vhost permissions itself, the functions below read and write those
instead and the `_Kept` memo goes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.engine.auth import User

if TYPE_CHECKING:
    from rabbitish.engine.node import Node

SHA256 = "rabbit_password_hashing_sha256"
HASHES = {
    "rabbit_password_hashing_sha256": hashlib.sha256,
    "rabbit_password_hashing_sha512": hashlib.sha512,
    "rabbit_password_hashing_md5": hashlib.md5,
}
ALL = ".*"


@dataclass
class _Kept:
    """What the current user model cannot hold, kept per node for export."""

    hashes: dict[str, tuple[str, str]] = field(default_factory=dict)  # user -> (hash, algorithm)
    permissions: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)
    topic_permissions: list[dict[str, Any]] = field(default_factory=list)
    global_parameters: dict[str, Any] = field(default_factory=dict)


_KEPT: weakref.WeakKeyDictionary[Node, _Kept] = weakref.WeakKeyDictionary()


def _kept(node: Node) -> _Kept:
    kept = _KEPT.get(node)
    if kept is None:
        kept = _KEPT[node] = _Kept()
    return kept


# ---------------------------------------------------------------------- password hashes
def password_hash(password: str, salt: bytes, algorithm: str = SHA256) -> str:
    """RabbitMQ's format: base64(salt + H(salt + password)), a 4-byte salt."""
    digest = HASHES[algorithm](salt + password.encode()).digest()
    return base64.b64encode(salt + digest).decode()


def hash_matches(password: str, encoded: str, algorithm: str) -> bool:
    try:
        raw = base64.b64decode(encoded, validate=True)
    except ValueError:
        return False
    if algorithm not in HASHES or len(raw) < 5:
        return False
    return hmac.compare_digest(password_hash(password, raw[:4], algorithm), encoded)


# ---------------------------------------------------------------------- export
def export_users(node: Node) -> list[dict[str, Any]]:
    kept = _kept(node)
    found = []
    for name, user in sorted(node.users.users.items()):
        encoded, algorithm = kept.hashes.get(name) or (
            password_hash(user.password, hashlib.sha256(name.encode()).digest()[:4]),
            SHA256,
        )
        found.append(
            {
                "name": name,
                "password_hash": encoded,
                "hashing_algorithm": algorithm,
                "tags": list(user.tags),
                "limits": {},
            }
        )
    return found


def export_permissions(node: Node) -> list[dict[str, Any]]:
    kept = _kept(node)
    found = []
    for name, user in sorted(node.users.users.items()):
        vhosts = sorted(node.vhosts) if user.vhosts is None else sorted(user.vhosts)
        for vhost in vhosts:
            configure, write, read = kept.permissions.get((name, vhost), (ALL, ALL, ALL))
            found.append(
                {"user": name, "vhost": vhost, "configure": configure, "write": write, "read": read}
            )
    return found


def export_topic_permissions(node: Node) -> list[dict[str, Any]]:
    return list(_kept(node).topic_permissions)


def export_global_parameters(node: Node) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in sorted(_kept(node).global_parameters.items())]


# ---------------------------------------------------------------------- import
def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(t for t in (s.strip() for s in value.split(",")) if t)
    return tuple(str(t) for t in value or ())


def import_user(node: Node, item: dict[str, Any]) -> None:
    name = str(item["name"])
    tags = _tags(item.get("tags"))
    existing = node.users.users.get(name)
    # A user's vhosts come from permissions: a new user has none until one grants them.
    vhosts = existing.vhosts if existing is not None else frozenset()
    if "password" in item:
        node.users.users[name] = User(name, str(item["password"]), tags, vhosts)
        _kept(node).hashes.pop(name, None)
        return
    encoded = str(item.get("password_hash") or "")
    algorithm = str(item.get("hashing_algorithm") or SHA256)
    if existing is not None and hash_matches(existing.password, encoded, algorithm):
        existing.tags = tags
    else:
        # The model cannot check a hash yet: a password nobody knows, until it can.
        unusable = base64.b64encode(os.urandom(24)).decode()
        node.users.users[name] = User(name, unusable, tags, vhosts)
    _kept(node).hashes[name] = (encoded, algorithm)


def import_permission(node: Node, item: dict[str, Any]) -> None:
    name, vhost = str(item["user"]), str(item["vhost"])
    user = node.users.users.get(name)
    if user is None:
        return
    regexes = (
        str(item.get("configure", "")),
        str(item.get("write", "")),
        str(item.get("read", "")),
    )
    if any(regexes) and user.vhosts is not None:
        user.vhosts = user.vhosts | {vhost}
    _kept(node).permissions[(name, vhost)] = regexes


def import_topic_permission(node: Node, item: dict[str, Any]) -> None:
    kept = _kept(node).topic_permissions
    key = (item.get("user"), item.get("vhost"), item.get("exchange"))
    kept[:] = [p for p in kept if (p.get("user"), p.get("vhost"), p.get("exchange")) != key]
    kept.append(dict(item))


def import_global_parameter(node: Node, item: dict[str, Any]) -> None:
    _kept(node).global_parameters[str(item["name"])] = item.get("value")
