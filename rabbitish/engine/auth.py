"""Users and vhost access. Mechanism parsing (PLAIN, AMQPLAIN) is wire format and lives in the
protocol; this module only answers "may this user in, and to which vhosts"."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field


@dataclass
class User:
    name: str
    password: str
    tags: tuple[str, ...] = ("administrator",)
    vhosts: frozenset[str] | None = None  # None: every vhost


@dataclass
class UserDatabase:
    users: dict[str, User] = field(default_factory=dict)

    @classmethod
    def with_default(cls) -> UserDatabase:
        return cls({"guest": User("guest", "guest")})

    def authenticate(self, name: str, password: str) -> User | None:
        user = self.users.get(name)
        if user is None or not hmac.compare_digest(user.password.encode(), password.encode()):
            return None
        return user

    @staticmethod
    def may_access(user: User, vhost: str) -> bool:
        return user.vhosts is None or vhost in user.vhosts
