"""SASL responses of connection.start-ok: PLAIN (\0user\0pass) and AMQPLAIN (a field table
without its length prefix)."""

from __future__ import annotations

import struct

from pamqp import decode


def parse_response(mechanism: str, response: str | bytes) -> tuple[str, str] | None:
    """(username, password), or None when the response is malformed."""
    raw = response.encode("utf-8") if isinstance(response, str) else response
    try:
        if mechanism == "PLAIN":
            parts = raw.split(b"\x00")
            if len(parts) != 3:
                return None
            return parts[1].decode(), parts[2].decode()
        if mechanism == "AMQPLAIN":
            _size, table = decode.field_table(struct.pack(">I", len(raw)) + raw)
            login, password = table.get("LOGIN"), table.get("PASSWORD")
            if isinstance(login, bytes):
                login = login.decode()
            if isinstance(password, bytes):
                password = password.decode()
            if isinstance(login, str) and isinstance(password, str):
                return login, password
    except (UnicodeDecodeError, ValueError, struct.error, IndexError):
        return None
    return None
