"""The management API's access-control resources: users, permissions and vhosts (create and
delete), in RabbitMQ's JSON shapes and with its answers. Only administrators reach them (the
server checks the tag); every change goes through the engine's UserDatabase and Node, which the
store persists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.engine.auth import (
    HASHES,
    SHA256,
    Permission,
    User,
    parse_tags,
    valid_regex,
)
from rabbitish.management import errors
from rabbitish.management.errors import bad_request, not_found

if TYPE_CHECKING:
    from rabbitish.engine.node import Node

ACCESS_KINDS = ("configure", "write", "read")


def user_json(user: User) -> dict[str, Any]:
    return {
        "name": user.name,
        "password_hash": user.password_hash,
        "hashing_algorithm": user.hashing_algorithm,
        "tags": list(user.tags),
        "limits": {},
    }


def permission_json(user: str, vhost: str, permission: Permission, vhost_first: bool = False):
    """RabbitMQ lists a vhost's permissions with the vhost first, the others user first."""
    head = {"vhost": vhost, "user": user} if vhost_first else {"user": user, "vhost": vhost}
    return {
        **head,
        "configure": permission.configure,
        "write": permission.write,
        "read": permission.read,
    }


def _tags(body: dict[str, Any]) -> tuple[str, ...]:
    tags = body.get("tags", "")
    if tags is None:
        return ()
    if not isinstance(tags, str | list):
        raise bad_request("tags must be a string or a list")
    return parse_tags(tags if isinstance(tags, str) else [str(t) for t in tags])


class AccessApi:
    def __init__(self, node: Node) -> None:
        self.node = node

    # ------------------------------------------------------------------ users
    def list_users(self) -> list[dict[str, Any]]:
        return [user_json(u) for _, u in sorted(self.node.users.users.items())]

    def get_user(self, name: str) -> dict[str, Any]:
        user = self.node.users.users.get(name)
        if user is None:
            raise not_found()
        return user_json(user)

    def put_user(self, name: str, body: dict[str, Any]) -> int:
        """Create or replace: `password` (hashed here), or `password_hash` with an optional
        `hashing_algorithm` (as definitions carry them), or neither (no password login)."""
        users = self.node.users
        existed = name in users.users
        tags = _tags(body)
        password = body.get("password")
        if password is not None:
            if not isinstance(password, str):
                raise bad_request("password must be a string")
            users.add_user(name, password, tags=tags)
            return 204 if existed else 201
        algorithm = str(body.get("hashing_algorithm") or SHA256)
        if algorithm not in HASHES:
            raise bad_request(f"unknown hashing algorithm {algorithm}")
        password_hash = body.get("password_hash")
        if password_hash is None and existed:
            old = users.users[name]  # a tags-only update keeps the password
            password_hash, algorithm = old.password_hash, old.hashing_algorithm
        users.put_user(User(name, str(password_hash or ""), algorithm, tags))
        return 204 if existed else 201

    def delete_user(self, name: str) -> None:
        if not self.node.users.delete_user(name):
            raise not_found()

    def user_permissions(self, name: str) -> list[dict[str, Any]]:
        if name not in self.node.users.users:
            raise not_found()
        return [p for p in self.list_permissions() if p["user"] == name]

    # ------------------------------------------------------------------ permissions
    def list_permissions(self) -> list[dict[str, Any]]:
        """Sorted by vhost, then user: RabbitMQ's default sort for this list."""
        by_vhost = sorted(self.node.users.permissions.items(), key=lambda item: item[0][::-1])
        return [permission_json(user, vhost, permission) for (user, vhost), permission in by_vhost]

    def vhost_permissions(self, vhost: str) -> list[dict[str, Any]]:
        if vhost not in self.node.vhosts:
            raise not_found()
        return [
            permission_json(user, v, permission, vhost_first=True)
            for (user, v), permission in sorted(self.node.users.permissions.items())
            if v == vhost
        ]

    def get_permission(self, vhost: str, user: str) -> dict[str, Any]:
        permission = self.node.users.permission(user, vhost)
        if permission is None:
            raise not_found()
        return permission_json(user, vhost, permission)

    def put_permission(self, vhost: str, user: str, body: dict[str, Any]) -> int:
        missing = [k for k in ACCESS_KINDS if k not in body]
        if missing:
            raise errors.key_missing(missing)
        if vhost not in self.node.vhosts or user not in self.node.users.users:
            raise bad_request("vhost_or_user_not_found")
        patterns = [str(body[k]) for k in ACCESS_KINDS]
        for pattern in patterns:
            if not valid_regex(pattern):
                raise bad_request(["invalid_regexp", pattern])
        existed = self.node.users.permission(user, vhost) is not None
        self.node.users.set_permissions(user, vhost, Permission(*patterns))
        return 204 if existed else 201

    def delete_permission(self, vhost: str, user: str) -> None:
        if not self.node.users.clear_permissions(user, vhost):
            raise not_found()

    # ------------------------------------------------------------------ vhosts
    def put_vhost(self, name: str, body: dict[str, Any], creator: str) -> int:
        """Create or update a vhost; creating one grants `creator` full permissions on it."""
        tracing = tracing_flag(body)
        existed = name in self.node.vhosts
        vhost = self.node.add_vhost(name)
        if "description" in body or not existed:
            vhost.description = str(body.get("description") or "")
        if "tags" in body or not existed:
            vhost.tags = _tags(body)
        self.node.vhost_changed(name)
        if tracing is not None:
            self.node.set_tracing(name, tracing)
        if not existed:
            grant_creator(self.node, name, creator)
        return 204 if existed else 201

    def delete_vhost(self, name: str) -> None:
        if self.node.delete_vhost(name) is None:
            raise not_found()

    # ------------------------------------------------------------------ tracing
    def set_tracing(self, name: str, on: bool) -> None:
        """rabbitmqctl's trace_on / trace_off (rabbitish's `/api/tracing/{vhost}`): as RabbitMQ,
        for any vhost name, existing or not, and without creating it."""
        self.node.set_tracing(name, on)


def tracing_flag(body: dict[str, Any]) -> bool | None:
    """A vhost PUT's `tracing`: true / false (or those words), None when absent; anything else
    is refused before the vhost is touched, as RabbitMQ's parse_bool refuses it."""
    if "tracing" not in body:
        return None
    value = body["tracing"]
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise bad_request(["not_boolean", value])


def grant_creator(node: Node, vhost: str, creator: str | None) -> None:
    """The user who creates a vhost through the API (PUT /api/vhosts/V, or a definitions import
    that brings a new vhost) gets full permissions on it, as RabbitMQ grants them, so a script
    that declares a vhost and then its queues needs no permission step. Not at start-up
    (`creator` None: RabbitMQ imports those as its internal user, who has none)."""
    if creator is not None and creator in node.users.users:
        node.users.set_permissions(creator, vhost, Permission(".*", ".*", ".*"))


def admin_only(user: User) -> None:
    if not user.is_administrator:
        raise errors.not_administrator()
