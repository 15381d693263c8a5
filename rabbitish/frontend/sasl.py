"""Who a client logs in as, whatever protocol it speaks, sans-IO: the mechanisms both protocols
share (PLAIN's response, EXTERNAL from the TLS client certificate, a configured user for clients
that bring no credentials), RabbitMQ's loopback_users rule applied to every login alike, and why
a login was refused. The wire differs (0-9-1's start-ok answered by tune or a 403, 1.0's
sasl-init answered by a sasl-outcome code): protocol/sasl.py and bridge/sasl.py offer their
mechanisms, parse what only they have, and map a `Login` onto their wire."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from rabbitish.engine.auth import Peer, UserDatabase, may_log_in_from

PLAIN = "PLAIN"
EXTERNAL = "EXTERNAL"  # the user named by the TLS client certificate (rabbitmq_auth_mechanism_ssl)


class Refusal(enum.Enum):
    NOT_OFFERED = "the mechanism is not available"
    BAD_CREDENTIALS = "bad credentials"
    LOOPBACK_ONLY = "the user can only connect via localhost"


@dataclass(frozen=True)
class Login:
    """The outcome of one login: the user, or why there is none (and, refused by the loopback
    rule, which user it was: RabbitMQ's log names it)."""

    user: str | None = None
    refusal: Refusal | None = None
    refused_user: str | None = None


@dataclass(frozen=True)
class PlainResponse:
    """PLAIN's response, [authzid] NUL authcid NUL passwd (RFC 4616). The authorization
    identity stays bytes: no protocol uses it, 0-9-1 refuses one that is there."""

    authzid: bytes
    username: str
    password: str


def plain_response(raw: bytes) -> PlainResponse | None:
    """The three parts of a PLAIN response; None unless there are exactly three and the name
    and password are UTF-8."""
    parts = raw.split(b"\x00")
    if len(parts) != 3:
        return None
    try:
        return PlainResponse(parts[0], parts[1].decode(), parts[2].decode())
    except UnicodeDecodeError:
        return None


def with_external(mechanisms: tuple[str, ...], peer: Peer) -> tuple[str, ...]:
    """EXTERNAL is offered after a protocol's own mechanisms on TLS connections to a listener
    that verifies client certificates, as RabbitMQ offers it on every such connection."""
    return (*mechanisms, EXTERNAL) if peer.cert_auth else mechanisms


@dataclass(frozen=True)
class Authenticator:
    """Logs one client in: checks what it presents against the broker's users, then the
    loopback rule (a loopback user, guest by default, only from a loopback address)."""

    users: UserDatabase
    peer: Peer
    loopback_users: Iterable[str] = ()

    def password(self, username: str, password: str) -> Login:
        user = self.users.authenticate(username, password)
        return self._admit(user.name) if user is not None else _BAD_CREDENTIALS

    def external(self) -> Login:
        """The user the client certificate names; without one (or an unknown one) the login
        is refused like bad credentials, as RabbitMQ refuses it."""
        name = self.peer.cert_user
        if not name or name not in self.users.users:
            return _BAD_CREDENTIALS
        return self._admit(name)

    def configured(self, name: str | None) -> Login:
        """The configured user of clients that bring no credentials (1.0's anonymous user);
        not there or not configured, the mechanism is not available."""
        if not name or name not in self.users.users:
            return Login(refusal=Refusal.NOT_OFFERED)
        return self._admit(name)

    def _admit(self, name: str) -> Login:
        if not may_log_in_from(name, self.peer, self.loopback_users):
            return Login(refusal=Refusal.LOOPBACK_ONLY, refused_user=name)
        return Login(name)


_BAD_CREDENTIALS = Login(refusal=Refusal.BAD_CREDENTIALS)
