"""SASL responses of connection.start-ok: PLAIN (\\0user\\0pass) and AMQPLAIN (a field table
without its length prefix), parsed as strictly as RabbitMQ parses them, and EXTERNAL (the user
named by the TLS client certificate's CN, as rabbitmq_auth_mechanism_ssl does), offered on TLS
connections to a listener that verifies client certificates; without a certificate it is
refused like bad credentials, as RabbitMQ refuses it."""

from __future__ import annotations

import struct

from rabbitish.engine.auth import Peer, User, UserDatabase
from rabbitish.protocol.field_tables import decode_table

PASSWORD_MECHANISMS = ("PLAIN", "AMQPLAIN")
EXTERNAL = "EXTERNAL"


class MalformedResponse(Exception):
    """A mechanism we did not offer, or a response that does not parse: RabbitMQ closes the
    socket without a word."""


def offered(peer: Peer) -> tuple[str, ...]:
    return (*PASSWORD_MECHANISMS, EXTERNAL) if peer.cert_auth else PASSWORD_MECHANISMS


def login(users: UserDatabase, peer: Peer, mechanism: str, response: str | bytes) -> User | None:
    """The user a start-ok authenticates as, or None for refused credentials."""
    if mechanism not in offered(peer):
        raise MalformedResponse(f"unknown authentication mechanism '{mechanism}'")
    if mechanism == EXTERNAL:
        return users.users.get(peer.cert_user) if peer.cert_user else None
    credentials = parse_response(mechanism, response)
    if credentials is None:
        raise MalformedResponse(f"malformed {mechanism} response")
    return users.authenticate(*credentials)


def parse_response(mechanism: str, response: str | bytes) -> tuple[str, str] | None:
    """(username, password), or None when the response is malformed (RabbitMQ then closes
    the socket without a word; wrong credentials get a 403)."""
    raw = response.encode("utf-8") if isinstance(response, str) else response
    try:
        if mechanism == "PLAIN":
            return _plain(raw)
        if mechanism == "AMQPLAIN":
            return _amqplain(raw)
    except (UnicodeDecodeError, ValueError, struct.error, IndexError):
        return None
    return None


def _plain(raw: bytes) -> tuple[str, str] | None:
    """RabbitMQ takes no authorization identity: the response starts with the NUL."""
    parts = raw.split(b"\x00")
    if len(parts) != 3 or parts[0]:
        return None
    return parts[1].decode(), parts[2].decode()


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
