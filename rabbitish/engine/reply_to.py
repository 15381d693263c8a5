"""Direct reply-to (`amq.rabbitmq.reply-to`): pseudo-queue names handed to reply consumers and the
targets publishes to those names reach. Names look like RabbitMQ's: base64 of an Erlang
external-term pid on a pseudo node "reply@<digits>", a dot, then base64 of a random 16-byte key,
because RabbitMQ decodes the pid part of a name it is given and clients may too."""

from __future__ import annotations

import base64
import binascii
import itertools
import os
import struct

from rabbitish.engine.errors import ConnectionError_

REPLY_TO = "amq.rabbitmq.reply-to"
REPLY_TO_PREFIX = REPLY_TO + "."

_REPLY_NODE = f"reply@{int.from_bytes(os.urandom(4)) % 100_000_000:08d}".encode()
_reply_ids = itertools.count(1)


def new_reply_to_name() -> str:
    # NEW_PID_EXT: node atom (ATOM_UTF8_EXT), id, serial, creation
    node = b"v" + struct.pack(">H", len(_REPLY_NODE)) + _REPLY_NODE
    pid = b"\x83X" + node + struct.pack(">II", next(_reply_ids) & 0x7FFF, 0) + os.urandom(4)
    key = base64.b64encode(os.urandom(16)).decode()
    return f"{REPLY_TO_PREFIX}{base64.b64encode(pid).decode()}.{key}"


def is_reply_to_address(exchange: str, routing_key: str) -> bool:
    return exchange == "" and routing_key.startswith(REPLY_TO_PREFIX)


def check_decodable(name: str) -> None:
    """A reply-to name must carry a pid term RabbitMQ could decode (base64 of an external term
    format binary); RabbitMQ's connection crashes on one it can't (541, no text). An unknown
    but well-formed one is just dropped."""
    pid, _, _key = name[len(REPLY_TO_PREFIX) :].partition(".")
    try:
        if base64.b64decode(pid, validate=True).startswith(b"\x83"):
            return
    except (binascii.Error, ValueError):
        pass
    raise ConnectionError_(541, "").at(0, 0)
