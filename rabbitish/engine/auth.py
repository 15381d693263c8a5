"""Users, their tags and their per-vhost permissions, as RabbitMQ's internal auth backend keeps
them. SASL mechanisms are wire format and live above the engine (rabbitish/frontend/sasl.py
and each protocol's sasl.py); this module answers "who is this", "may this user into that
vhost", "may this user log in from there" (the loopback rule) and "may this user configure /
write / read that resource", with RabbitMQ's 403 texts.

Passwords are stored only as RabbitMQ stores them (and exports them in definitions): base64 of a
4-byte salt followed by the hash of salt + UTF-8 password, by default with SHA-256
(rabbit_password_hashing_sha256). Every change goes to `on_change`, which the store uses to
persist it."""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import ipaddress
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from rabbitish.engine.errors import access_refused
from rabbitish.wire_names import DEFAULT_EXCHANGE_ALIAS

SHA256 = "rabbit_password_hashing_sha256"
SHA512 = "rabbit_password_hashing_sha512"
MD5 = "rabbit_password_hashing_md5"
HASHES: dict[str, Callable[[bytes], bytes]] = {
    SHA256: lambda data: hashlib.sha256(data).digest(),
    SHA512: lambda data: hashlib.sha512(data).digest(),
    MD5: lambda data: hashlib.md5(data).digest(),
}
# Tags that open the management API (the others are kept but grant nothing).
ADMINISTRATOR = "administrator"
MANAGEMENT_TAGS = frozenset({ADMINISTRATOR, "monitoring", "policymaker", "management"})
FULL = ".*"

Access = Literal["configure", "write", "read"]
# Checks one access to one resource (access, kind, name), raising the 403: what the engine calls
# at the points where RabbitMQ checks a permission; None lets everything through.
Authorize = Callable[[Access, str, str], None]


def hash_password(password: str, algorithm: str = SHA256, salt: bytes | None = None) -> str:
    """RabbitMQ's stored form: base64(salt + hash(salt + utf8(password)))."""
    salt = os.urandom(4) if salt is None else salt
    return base64.b64encode(salt + HASHES[algorithm](salt + password.encode())).decode()


def check_password(password: str, password_hash: str, algorithm: str = SHA256) -> bool:
    """Whether `password` matches a stored hash; an empty hash (a user without a password, such
    as one that logs in with a certificate) matches nothing."""
    hasher = HASHES.get(algorithm)
    if not password_hash or hasher is None:
        return False
    try:
        raw = base64.b64decode(password_hash, validate=True)
    except (binascii.Error, ValueError):
        return False
    salt, digest = raw[:4], raw[4:]
    return hmac.compare_digest(hasher(salt + password.encode()), digest)


def parse_tags(tags: str | Iterable[str]) -> tuple[str, ...]:
    """Tags as the API and the CLI take them: a comma (or space) separated string or a list."""
    items = re.split(r"[,\s]+", tags) if isinstance(tags, str) else list(tags)
    return tuple(t for t in (item.strip() for item in items) if t)


@dataclass(frozen=True)
class User:
    name: str
    password_hash: str = ""
    hashing_algorithm: str = SHA256
    tags: tuple[str, ...] = ()

    @classmethod
    def with_password(cls, name: str, password: str, tags: Iterable[str] = ()) -> User:
        return cls(name, hash_password(password), SHA256, tuple(tags))

    def check_password(self, password: str) -> bool:
        return check_password(password, self.password_hash, self.hashing_algorithm)

    @property
    def is_administrator(self) -> bool:
        return ADMINISTRATOR in self.tags

    @property
    def is_monitor(self) -> bool:
        """Monitoring users (administrators too) see every vhost in the management API."""
        return ADMINISTRATOR in self.tags or "monitoring" in self.tags

    @property
    def may_use_management(self) -> bool:
        return not MANAGEMENT_TAGS.isdisjoint(self.tags)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    """RabbitMQ matches with re:run (a search, not anchored); "" means "^$" (nothing but "")."""
    try:
        return re.compile(pattern or "^$")
    except re.error:
        return None


def valid_regex(pattern: str) -> bool:
    return _compiled(pattern) is not None


@dataclass(frozen=True)
class Permission:
    configure: str = FULL
    write: str = FULL
    read: str = FULL

    def allows(self, access: Access, name: str) -> bool:
        regex = _compiled(getattr(self, access))
        return regex is not None and regex.search(name) is not None


@dataclass(frozen=True)
class Peer:
    """What the socket tells about a client: where it connects from (the loopback rule) and,
    on TLS, whether the listener verifies client certificates (then EXTERNAL is offered, as
    RabbitMQ offers it on every TLS connection once configured) and the user name the
    certificate the client presented stands for (its subject CN or DN, tls.py). The default,
    a peer without a socket (in-process tests), counts as local."""

    address: str = ""
    tls: bool = False
    cert_auth: bool = False
    cert_user: str | None = None

    @property
    def loopback(self) -> bool:
        if not self.address:
            return True
        try:
            address = ipaddress.ip_address(self.address.split("%")[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            return address.ipv4_mapped.is_loopback
        return address.is_loopback


def may_log_in_from(name: str, peer: Peer, loopback_users: Iterable[str]) -> bool:
    """RabbitMQ's loopback_users: those users may only connect from a loopback address."""
    return peer.loopback or name not in loopback_users


@dataclass(frozen=True)
class AccessChange:
    """One change for the store: `kind` is "user" or "permission"; `value` None means deleted."""

    kind: Literal["user", "permission"]
    key: tuple[str, ...]
    value: User | Permission | None


def resource_name(kind: str, name: str) -> str:
    """The default exchange is checked (and named in the refusal) as amq.default."""
    return DEFAULT_EXCHANGE_ALIAS if kind == "exchange" and name == "" else name


@dataclass
class UserDatabase:
    users: dict[str, User] = field(default_factory=dict)
    # (user, vhost) -> the user's permissions there; no entry: no access to that vhost.
    permissions: dict[tuple[str, str], Permission] = field(default_factory=dict)
    on_change: Callable[[AccessChange], None] | None = None

    @classmethod
    def with_defaults(cls, users: dict[str, str], vhosts: Iterable[str]) -> UserDatabase:
        """RabbitMQ's first start: the default users, administrators with every permission on
        the default vhosts."""
        db = cls()
        for name, password in users.items():
            db.add_user(name, password, tags=(ADMINISTRATOR,))
            for vhost in vhosts:
                db.set_permissions(name, vhost, Permission())
        return db

    def _changed(self, change: AccessChange) -> None:
        if self.on_change is not None:
            self.on_change(change)

    # ------------------------------------------------------------------ users
    def add_user(
        self,
        name: str,
        password: str | None = None,
        *,
        password_hash: str | None = None,
        hashing_algorithm: str = SHA256,
        tags: Iterable[str] = (),
    ) -> User:
        """Create or replace a user. Without a password or hash the user cannot log in with a
        password (only with a certificate)."""
        if password is not None:
            user = User.with_password(name, password, tags)
        else:
            user = User(name, password_hash or "", hashing_algorithm, tuple(tags))
        self.put_user(user)
        return user

    def put_user(self, user: User) -> None:
        self.users[user.name] = user
        self._changed(AccessChange("user", (user.name,), user))

    def delete_user(self, name: str) -> bool:
        if self.users.pop(name, None) is None:
            return False
        for key in [k for k in self.permissions if k[0] == name]:
            del self.permissions[key]
        self._changed(AccessChange("user", (name,), None))
        return True

    def change_password(self, name: str, password: str | None) -> User:
        """None clears the password."""
        user = self.users[name]
        if password is None:
            changed = replace(user, password_hash="")
        else:
            changed = replace(user, password_hash=hash_password(password), hashing_algorithm=SHA256)
        self.put_user(changed)
        return changed

    def set_tags(self, name: str, tags: Iterable[str]) -> User:
        changed = replace(self.users[name], tags=tuple(tags))
        self.put_user(changed)
        return changed

    def authenticate(self, name: str, password: str) -> User | None:
        user = self.users.get(name)
        if user is None or not user.check_password(password):
            return None
        return user

    # ------------------------------------------------------------------ permissions
    def set_permissions(self, user: str, vhost: str, permission: Permission) -> None:
        self.permissions[(user, vhost)] = permission
        self._changed(AccessChange("permission", (user, vhost), permission))

    def clear_permissions(self, user: str, vhost: str) -> bool:
        if self.permissions.pop((user, vhost), None) is None:
            return False
        self._changed(AccessChange("permission", (user, vhost), None))
        return True

    def vhost_deleted(self, vhost: str) -> None:
        """Forget every permission on a deleted vhost (the store drops its rows with it)."""
        for key in [k for k in self.permissions if k[1] == vhost]:
            del self.permissions[key]

    def permission(self, user: str, vhost: str) -> Permission | None:
        return self.permissions.get((user, vhost))

    def may_access(self, user: User | str, vhost: str) -> bool:
        name = user if isinstance(user, str) else user.name
        return (name, vhost) in self.permissions

    def may_see(self, user: User, vhost: str) -> bool:
        """Whether the management API shows `user` the objects of `vhost`."""
        return user.is_monitor or self.may_access(user, vhost)

    def allowed(self, user: str, vhost: str, access: Access, kind: str, name: str) -> bool:
        permission = self.permissions.get((user, vhost))
        return permission is not None and permission.allows(access, resource_name(kind, name))

    def authorizer(self, user: str | None, vhost: str) -> Authorize | None:
        """The check for one user in one vhost, for the engine to call; None for no user."""
        if user is None:
            return None

        def check(access: Access, kind: str, name: str) -> None:
            self.authorize(user, vhost, access, kind, name)

        return check

    def authorize(self, user: str | None, vhost: str, access: Access, kind: str, name: str) -> None:
        """Raise RabbitMQ's 403 unless `user` has `access` to the resource. No user (an
        internal caller) may do anything."""
        if user is None or self.allowed(user, vhost, access, kind, name):
            return
        raise access_refused(
            f"access to {kind} '{resource_name(kind, name)}' in vhost '{vhost}' "
            f"refused for user '{user}'"
        )
