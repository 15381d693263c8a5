"""Connections, channels and consumers as RabbitMQ's management API lists them. Connection names
follow RabbitMQ ("127.0.0.1:54321 -> 127.0.0.1:5672"); channels are "<connection> (<number>)"."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from rabbitish.management.format import NODE, jsonable


@dataclass(frozen=True)
class Endpoint:
    """Where one client connection comes from and arrives at."""

    name: str
    peer_host: str
    peer_port: int
    host: str
    port: int


def _address(value: Any) -> tuple[str, int]:
    if isinstance(value, str):  # the protocol keeps str(peername)
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value, 0
    if isinstance(value, tuple) and len(value) >= 2:
        return str(value[0]), int(value[1])
    return "", 0


def endpoints(protocols: Any, fallback_port: int) -> dict[int, Endpoint]:
    """id(protocol Connection) -> its Endpoint, from the broker's socket-level connections."""
    found: dict[int, Endpoint] = {}
    for proto in list(protocols):
        conn = getattr(proto, "conn", None)
        transport = getattr(proto, "transport", None)
        if conn is None:
            continue
        peer = _address(transport.get_extra_info("peername") if transport else conn.peer)
        local = _address(transport.get_extra_info("sockname") if transport else None)
        if not local[1]:
            local = ("127.0.0.1", fallback_port)
        name = f"{peer[0]}:{peer[1]} -> {local[0]}:{local[1]}"
        found[id(conn)] = Endpoint(name, peer[0], peer[1], local[0], local[1])
    return found


def endpoint_of(conn: Any, known: dict[int, Endpoint]) -> Endpoint:
    endpoint = known.get(id(conn))
    if endpoint is None:
        host, port = _address(getattr(conn, "peer", ""))
        endpoint = Endpoint(f"{host}:{port}", host, port, "", 0)
    return endpoint


def connection_json(conn: Any, endpoint: Endpoint) -> dict[str, Any]:
    vhost = conn.vhost.name if conn.vhost is not None else None
    return {
        "channel_max": conn.channel_max,
        "channels": len(conn.channels),
        "client_properties": jsonable(conn.client_properties),
        "frame_max": conn.frame_max,
        "host": endpoint.host,
        "name": endpoint.name,
        "node": NODE,
        "peer_host": endpoint.peer_host,
        "peer_port": endpoint.peer_port,
        "port": endpoint.port,
        "protocol": "AMQP 0-9-1",
        "ssl": False,
        "state": "running",
        "timeout": conn.heartbeat,
        "type": "network",
        "user": conn.user,
        "vhost": vhost,
    }


def channel_json(conn: Any, channel: Any, endpoint: Endpoint) -> dict[str, Any]:
    tx = channel.tx
    return {
        "acks_uncommitted": tx.staged_deliveries if tx is not None else 0,
        "confirm": channel.mode == "confirm",
        "connection_details": {
            "name": endpoint.name,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
        },
        "consumer_count": len(channel.consumers),
        "global_prefetch_count": channel.global_prefetch,
        "messages_unacknowledged": len(channel.unacked),
        "messages_uncommitted": len(tx.publishes) if tx is not None else 0,
        "name": f"{endpoint.name} ({channel.id})",
        "node": NODE,
        "number": channel.id,
        "prefetch_count": channel.prefetch_count,
        "state": "closing" if channel.closing else "running",
        "transactional": channel.mode == "tx",
        "user": conn.user,
        "vhost": conn.vhost.name if conn.vhost is not None else None,
    }


def consumer_json(consumer: Any, queue: Any, endpoint: Endpoint | None) -> dict[str, Any]:
    channel = getattr(consumer, "channel", None)
    channel_details: dict[str, Any] = {}
    if channel is not None and endpoint is not None:
        channel_details = {
            "connection_name": endpoint.name,
            "name": f"{endpoint.name} ({channel.id})",
            "node": NODE,
            "number": channel.id,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
            "user": channel.conn.user,
        }
    return {
        "ack_required": not consumer.no_ack,
        "active": True,
        "activity_status": "up",
        "arguments": jsonable(getattr(consumer, "arguments", {})),
        "channel_details": channel_details,
        "consumer_tag": consumer.tag,
        "exclusive": consumer.exclusive,
        "prefetch_count": getattr(consumer, "prefetch", 0),
        "queue": {"name": queue.name, "vhost": queue.vhost.name},
    }
