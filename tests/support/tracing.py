"""Reading firehose trace messages (`amq.rabbitmq.trace`) with every header's wire type kept:
pika decodes a signed int and a long long alike, so the tests take the trace queue's messages
with raw basic.get frames and decode the headers with their types."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pika
from pamqp import commands

from rabbitish.engine.message import FieldValue
from rabbitish.protocol.properties import decode_all, typed_headers
from tests.support.management import Api
from tests.support.raw_amqp import RawClient

TRACE_EXCHANGE = "amq.rabbitmq.trace"


@dataclass
class Traced:
    """One trace message as a consumer of the trace queue gets it."""

    routing_key: str
    exchange: str
    headers: dict[str, Any]  # (type, value) pairs, nested: see `plain_typed`
    properties: dict[str, Any]  # every property but the headers, decoded
    body: bytes


def plain_typed(value: FieldValue) -> Any:
    """A typed header value as comparable plain data: (type, value), arrays and tables typed all
    the way down; longstr bytes as text when they are UTF-8."""
    if value.kind == "table":
        return ("table", {k: plain_typed(v) for k, v in value.value.items()})
    if value.kind == "array":
        return ("array", [plain_typed(v) for v in value.value])
    if value.kind == "longstr" and isinstance(value.value, bytes):
        try:
            return ("longstr", value.value.decode())
        except UnicodeDecodeError:
            return ("longstr", value.value)
    return (value.kind, value.value)


def untyped(value: Any) -> Any:
    """`plain_typed` data without the types, for assertions that only read values."""
    kind, inner = value
    if kind == "table":
        return {k: untyped(v) for k, v in inner.items()}
    if kind == "array":
        return [untyped(v) for v in inner]
    return inner


def drain(url: str, queue: str, timeout: float = 5.0) -> list[Traced]:
    """Every message in `queue`, taken with basic.get (no-ack) until get-empty."""
    out: list[Traced] = []
    with RawClient(url, timeout=timeout) as client:
        client.open()
        client.open_channel(1)
        while True:
            client.send_method(1, commands.Basic.Get(queue=queue, no_ack=True))
            got = client.read_frame(timeout)
            assert got is not None, "connection closed during basic.get"
            method = got[1]
            if method.name == "Basic.GetEmpty":
                return out
            assert method.name == "Basic.GetOk", method
            header = client.read_raw_frame(timeout)
            assert header is not None and header[0] == 2
            payload = header[2]
            (size,) = struct.unpack_from(">Q", payload, 4)
            raw = payload[12:]
            body = b""
            while len(body) < size:
                frame = client.read_raw_frame(timeout)
                assert frame is not None and frame[0] == 3
                body += frame[2]
            properties = decode_all(raw)
            properties.pop("headers", None)
            out.append(
                Traced(
                    method.routing_key,
                    method.exchange,
                    {k: plain_typed(v) for k, v in typed_headers(raw).items()},
                    properties,
                    body,
                )
            )


def vhost_url(amqp_url: str, vhost: str) -> str:
    """The same broker's AMQP URL for another vhost."""
    base = amqp_url.rsplit("/", 1)[0]
    return f"{base}/{quote(vhost, safe='')}"


@contextlib.contextmanager
def traced_vhost(api: Api, name: str, queue: str = "firehose") -> Iterator[str]:
    """A fresh vhost with tracing turned on through the management API (as RabbitMQ's does),
    guest allowed in, and `queue` bound to its trace exchange with '#'; yields its AMQP URL and
    deletes the vhost afterwards."""
    path = f"/api/vhosts/{quote(name, safe='')}"
    api.ok("PUT", path, {"tracing": True})
    url = vhost_url(api.amqp_url, name)
    try:
        permissions = {"configure": ".*", "write": ".*", "read": ".*"}
        api.ok("PUT", f"/api/permissions/{quote(name, safe='')}/guest", permissions)
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        channel.queue_declare(queue)
        channel.queue_bind(queue, TRACE_EXCHANGE, "#")
        connection.close()
        yield url
    finally:
        api.call("PUT", path, {"tracing": False})
        api.call("DELETE", path)
