"""SASL as AMQP 1.0 speaks it: the mechanisms offered in sasl-mechanisms and the sasl-outcome
code a sasl-init earns. PLAIN checks the broker's users; ANONYMOUS (and a connection that skips
SASL altogether) logs in as the configured anonymous user, guest by default, as RabbitMQ's 1.0
plugin does with its `default_user`; with no anonymous user both are refused. Who logs in, and
the loopback rule, are the same for every protocol: rabbitish/frontend/sasl.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rabbitish.engine.auth import Peer, UserDatabase
from rabbitish.frontend.sasl import (
    EXTERNAL,
    PLAIN,
    Authenticator,
    Login,
    Refusal,
    plain_response,
    with_external,
)

ANONYMOUS = "ANONYMOUS"

# sasl-code values (security.xml)
OK = 0
AUTH = 1  # authentication failed: bad credentials (a loopback user from another host too)
SYS_PERM = 3  # the system refuses for good (here: the mechanism is not offered)


def mechanisms(anonymous_user: str | None, peer: Peer | None = None) -> list[str]:
    offered = (ANONYMOUS, PLAIN) if anonymous_user else (PLAIN,)
    return list(with_external(offered, peer or Peer()))


@dataclass(frozen=True)
class Outcome:
    code: int
    user: str | None = None  # who logged in when code is OK


def authenticate(
    users: UserDatabase,
    anonymous_user: str | None,
    mechanism: str,
    response: bytes | None,
    peer: Peer | None = None,
    loopback_users: Iterable[str] = (),
) -> Outcome:
    """The outcome of a sasl-init; a client that skips SASL is authenticated as ANONYMOUS. Any
    authorization identity in PLAIN's response is ignored, a malformed response is refused as
    bad credentials."""
    authenticator = Authenticator(users, peer or Peer(), loopback_users)
    login = _login(authenticator, anonymous_user, mechanism, response)
    if login.user is not None:
        return Outcome(OK, login.user)
    return Outcome(SYS_PERM if login.refusal is Refusal.NOT_OFFERED else AUTH)


def _login(
    authenticator: Authenticator, anonymous_user: str | None, mechanism: str, response: bytes | None
) -> Login:
    if mechanism == ANONYMOUS:
        return authenticator.configured(anonymous_user)
    if mechanism == EXTERNAL and authenticator.peer.cert_auth:
        return authenticator.external()
    if mechanism != PLAIN:
        return Login(refusal=Refusal.NOT_OFFERED)
    plain = plain_response(response or b"")
    if plain is None:
        return Login(refusal=Refusal.BAD_CREDENTIALS)
    return authenticator.password(plain.username, plain.password)
