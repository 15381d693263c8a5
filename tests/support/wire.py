"""Helpers for the raw-socket wire tests: how a connection ended (the close method or a dropped
socket), opened raw clients, method payloads, and a witness connection that must keep working."""

from __future__ import annotations

import struct
from collections.abc import Callable

from pamqp import commands

from tests.support.raw_amqp import (
    RawClient,
)

DROPPED = "socket closed without a close method"

Outcome = tuple[str, int, str, int, int] | str

Scenario = Callable[[RawClient], None]


def outcome(client: RawClient, timeout: float = 5.0) -> Outcome:
    closed = client.wait_closed(timeout=timeout)
    if closed is None:
        return DROPPED
    return closed.scope, closed.reply_code, closed.reply_text, closed.class_id, closed.method_id


def conn(code: int, text: str, class_id: int = 0, method_id: int = 0) -> Outcome:
    return "connection", code, text, class_id, method_id


def publish_start(c: RawClient, channel: int = 1) -> None:
    c.send_method(channel, commands.Basic.Publish(exchange="", routing_key="nowhere"))


def opened(c: RawClient, **tune: int) -> RawClient:
    c.open(**tune)
    c.open_channel(1)
    return c


def method_payload(class_id: int, method_id: int, fields: bytes = b"") -> bytes:
    return struct.pack(">HH", class_id, method_id) + fields


def witness_client(url: str) -> RawClient:
    """Another connection, open before the bad one and used after it."""
    return opened(RawClient(url))


def still_works(witness: RawClient) -> None:
    witness.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
    assert witness.expect("Queue.DeclareOk").queue.startswith("amq.gen-")
    witness.send_method(
        0, commands.Connection.Close(reply_code=200, reply_text="", class_id=0, method_id=0)
    )
    witness.expect("Connection.CloseOk")
