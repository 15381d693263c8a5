"""The SASL layer in front of an AMQP 1.0 connection: which mechanisms are offered and who a
sasl-init authenticates as. PLAIN checks the broker's users; ANONYMOUS (and a connection that
skips SASL altogether) logs in as the configured anonymous user, guest by default, as RabbitMQ's
1.0 plugin does with its `default_user`; with no anonymous user both are refused."""

from __future__ import annotations

from dataclasses import dataclass

from rabbitish.engine.auth import Peer, UserDatabase, may_log_in_from

PLAIN = "PLAIN"
ANONYMOUS = "ANONYMOUS"
EXTERNAL = "EXTERNAL"  # the TLS client certificate's CN names the user (on TLS listeners that
# verify client certificates)

# sasl-code values (security.xml)
OK = 0
AUTH = 1  # authentication failed: bad credentials
SYS_PERM = 3  # the system refuses for good (here: the mechanism is not offered)


def mechanisms(anonymous_user: str | None, peer: Peer | None = None) -> list[str]:
    offered = [ANONYMOUS, PLAIN] if anonymous_user else [PLAIN]
    return [*offered, EXTERNAL] if peer is not None and peer.cert_auth else offered


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
    loopback_users: tuple[str, ...] = (),
) -> Outcome:
    """The outcome of a sasl-init. PLAIN's response is [authzid] NUL authcid NUL passwd. A
    loopback user (guest) from another host is refused as bad credentials."""
    outcome = _authenticate(users, anonymous_user, mechanism, response, peer or Peer())
    if outcome.user is not None and not may_log_in_from(
        outcome.user, peer or Peer(), loopback_users
    ):
        return Outcome(AUTH)
    return outcome


def _authenticate(
    users: UserDatabase,
    anonymous_user: str | None,
    mechanism: str,
    response: bytes | None,
    peer: Peer,
) -> Outcome:
    if mechanism == ANONYMOUS:
        return login_anonymously(users, anonymous_user)
    if mechanism == EXTERNAL and peer.cert_auth:
        known = peer.cert_user is not None and peer.cert_user in users.users
        return Outcome(OK, peer.cert_user) if known else Outcome(AUTH)
    if mechanism != PLAIN:
        return Outcome(SYS_PERM)
    parts = (response or b"").split(b"\x00")
    if len(parts) != 3:
        return Outcome(AUTH)
    try:
        name, password = parts[1].decode(), parts[2].decode()
    except UnicodeDecodeError:
        return Outcome(AUTH)
    user = users.authenticate(name, password)
    return Outcome(OK, user.name) if user is not None else Outcome(AUTH)


def login_anonymously(users: UserDatabase, anonymous_user: str | None) -> Outcome:
    if anonymous_user and anonymous_user in users.users:
        return Outcome(OK, anonymous_user)
    return Outcome(SYS_PERM)
