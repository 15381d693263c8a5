"""SASL responses of connection.start-ok: PLAIN (\\0user\\0pass) and AMQPLAIN (a field table
without its length prefix), parsed as strictly as RabbitMQ parses them."""

from __future__ import annotations

import struct

from rabbitish.protocol.field_tables import decode_table


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
