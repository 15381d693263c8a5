"""SASL as 0-9-1 speaks it in connection.start-ok: the mechanisms offered (PLAIN, AMQPLAIN, and
EXTERNAL on TLS connections to a listener that verifies client certificates), AMQPLAIN's
response (a field table without its length prefix), parsed as strictly as RabbitMQ parses it,
and the texts RabbitMQ answers with. Who logs in, and the loopback rule, are the same for every
protocol: rabbitish/frontend/sasl.py."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from rabbitish.engine.auth import Peer, UserDatabase
from rabbitish.frontend.sasl import (
    EXTERNAL,
    PLAIN,
    Authenticator,
    Login,
    plain_response,
    with_external,
)
from rabbitish.protocol.field_tables import decode_table

PASSWORD_MECHANISMS = (PLAIN, "AMQPLAIN")


class MalformedResponse(Exception):
    """A mechanism we did not offer, or a response that does not parse: RabbitMQ closes the
    socket without a word."""


def offered(peer: Peer) -> tuple[str, ...]:
    return with_external(PASSWORD_MECHANISMS, peer)


def login(
    users: UserDatabase,
    peer: Peer,
    mechanism: str,
    response: str | bytes,
    loopback_users: Iterable[str] = (),
) -> Login:
    """Who a start-ok logs in as, or why not."""
    if mechanism not in offered(peer):
        raise MalformedResponse(f"unknown authentication mechanism '{mechanism}'")
    authenticator = Authenticator(users, peer, loopback_users)
    if mechanism == EXTERNAL:
        return authenticator.external()
    credentials = parse_response(mechanism, response)
    if credentials is None:
        raise MalformedResponse(f"malformed {mechanism} response")
    return authenticator.password(*credentials)


def refused_text(mechanism: str) -> str:
    """The 403's reply text, for clients that announced authentication_failure_close."""
    return (
        f"Login was refused using authentication mechanism {mechanism}. "
        "For details see the broker logfile."
    )


def parse_response(mechanism: str, response: str | bytes) -> tuple[str, str] | None:
    """(username, password), or None when the response is malformed (RabbitMQ then closes
    the socket without a word; wrong credentials get a 403)."""
    raw = response.encode("utf-8") if isinstance(response, str) else response
    if mechanism == PLAIN:
        return _plain(raw)
    if mechanism == "AMQPLAIN":
        try:
            return _amqplain(raw)
        except (UnicodeDecodeError, ValueError, struct.error, IndexError):
            return None
    return None


def _plain(raw: bytes) -> tuple[str, str] | None:
    """RabbitMQ takes no authorization identity: the response starts with the NUL."""
    response = plain_response(raw)
    if response is None or response.authzid:
        return None
    return response.username, response.password


def _amqplain(raw: bytes) -> tuple[str, str] | None:
    """LOGIN and PASSWORD must both be long strings."""
    table = decode_table(raw)
    login, password = table.get("LOGIN"), table.get("PASSWORD")
    if isinstance(login, bytes):
        login = login.decode()
    if isinstance(password, bytes):
        password = password.decode()
    if isinstance(login, str) and isinstance(password, str):
        return login, password
    return None
