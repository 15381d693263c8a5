"""Connections, channels and consumers as RabbitMQ's management API lists them. Connection names
follow RabbitMQ ("127.0.0.1:54321 -> 127.0.0.1:5672"); channels are "<connection> (<number>)"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rabbitish.management.format import NODE, jsonable
from rabbitish.management.rates import Rates
from rabbitish.management.stats import details, with_details

if TYPE_CHECKING:
    from rabbitish.engine.consumer import Consumer
    from rabbitish.engine.sessions import (
        ConnectionView,
        FrontEndConnection,
        LinkView,
        SessionView,
    )
    from rabbitish.engine.transactions import Transaction


@dataclass(frozen=True)
class Endpoint:
    """Where one client connection comes from and arrives at."""

    name: str
    peer_host: str
    peer_port: int
    host: str
    port: int
    # Socket statistics kept by the I/O layer: bytes and reads/writes each way, accept time.
    recv_oct: int = 0
    recv_cnt: int = 0
    send_oct: int = 0
    send_cnt: int = 0
    connected_at: int | None = None
    owner: FrontEndConnection | None = None  # the connection (the key its rates are kept under)


def endpoint_of(conn: FrontEndConnection, amqp_port: int) -> Endpoint:
    """Where `conn` comes from and arrives at, with its socket's statistics now; a socket whose
    own address has no port is named after the AMQP listener's."""
    socket = conn.socket
    host, port = (socket.host, socket.port) if socket.port else ("127.0.0.1", amqp_port)
    return Endpoint(
        f"{socket.peer_host}:{socket.peer_port} -> {host}:{port}",
        socket.peer_host,
        socket.peer_port,
        host,
        port,
        socket.recv_oct,
        socket.recv_cnt,
        socket.send_oct,
        socket.send_cnt,
        socket.connected_at,
        conn,
    )


def connection_json(view: ConnectionView, endpoint: Endpoint, rates: Rates) -> dict[str, Any]:
    io = {
        "recv_cnt": endpoint.recv_cnt,
        "recv_oct": endpoint.recv_oct,
        "send_cnt": endpoint.send_cnt,
        "send_oct": endpoint.send_oct,
    }
    rate = rates.sample(endpoint.owner, io) if endpoint.owner is not None else {}
    name = view.client_properties.get("connection_name")
    doc = {
        "auth_mechanism": view.auth_mechanism,
        "channel_max": view.channel_max,
        "channels": len(view.sessions),
        "client_properties": jsonable(view.client_properties),
        "connected_at": endpoint.connected_at,
        "frame_max": view.frame_max,
        "host": endpoint.host,
        "name": endpoint.name,
        "node": NODE,
        "peer_cert_issuer": None,
        "peer_cert_subject": None,
        "peer_cert_validity": None,
        "peer_host": endpoint.peer_host,
        "peer_port": endpoint.peer_port,
        "port": endpoint.port,
        "protocol": view.protocol,
        "recv_cnt": io["recv_cnt"],
        "recv_oct": io["recv_oct"],
        "recv_oct_details": details(rate.get("recv_oct", 0.0)),
        "send_cnt": io["send_cnt"],
        "send_oct": io["send_oct"],
        "send_oct_details": details(rate.get("send_oct", 0.0)),
        "send_pend": 0,
        "ssl": False,
        "ssl_cipher": None,
        "ssl_hash": None,
        "ssl_key_exchange": None,
        "ssl_protocol": None,
        "state": "running",
        "timeout": view.heartbeat,
        "type": "network",
        "user": view.user,
        "vhost": view.vhost,
    }
    if name is not None:
        doc["user_provided_name"] = jsonable(name)
    return doc


def channel_json(
    view: ConnectionView, session: SessionView, endpoint: Endpoint, rates: Rates
) -> dict[str, Any]:
    """A 0-9-1 channel, or a 1.0 session (RabbitMQ's 3.x plugin shows those as channels too)."""
    txs = session.transactions
    counters = dict(session.message_stats)
    if counters:
        counters["deliver_get"] = sum(
            counters.get(k, 0) for k in ("deliver", "deliver_no_ack", "get", "get_no_ack")
        )
    doc: dict[str, Any] = {
        "acks_uncommitted": sum(tx.staged_deliveries for tx in txs),
        "confirm": session.confirm,
        "connection_details": {
            "name": endpoint.name,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
        },
        "consumer_count": session.consumer_count,
        "global_prefetch_count": session.global_prefetch_count,
        "messages_unacknowledged": session.unacked,
        "messages_unconfirmed": session.unconfirmed,
        "messages_uncommitted": sum(len(tx.publishes) for tx in txs),
        "name": channel_name(endpoint, session.number),
        "node": NODE,
        "number": session.number,
        "pending_raft_commands": 0,
        "prefetch_count": session.prefetch_count,
        "protocol": view.protocol,  # rabbitish's own: tells 1.0 sessions from 0-9-1 channels
        "state": session.state,
        "transactional": session.transactional,
        "user": view.user,
        "vhost": view.vhost,
    }
    if endpoint.owner is not None and counters:  # 1.0 sessions keep no such counters
        rate = rates.sample(endpoint.owner, counters, session.number)
        doc["message_stats"] = with_details(counters, rate)
        idle = rates.idle_since(endpoint.owner, session.number)
        if idle is not None:
            doc["idle_since"] = idle
    return doc


def channel_name(endpoint: Endpoint, number: int) -> str:
    return f"{endpoint.name} ({number})"


def consumer_json(consumer: Consumer, queue: Any, endpoint: Endpoint | None) -> dict[str, Any]:
    session = consumer.session
    channel_details: dict[str, Any] = {}
    if session is not None and endpoint is not None:
        channel_details = {
            "connection_name": endpoint.name,
            "name": channel_name(endpoint, session.number),
            "node": NODE,
            "number": session.number,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
            "user": session.user,
        }
    return {
        "ack_required": not consumer.settled_on_delivery,
        "active": True,
        "activity_status": "up",
        "arguments": jsonable(consumer.arguments),
        "channel_details": channel_details,
        "consumer_tag": consumer.tag,
        "exclusive": consumer.exclusive,
        "prefetch_count": consumer.prefetch,
        "queue": {"name": queue.name, "vhost": queue.vhost.name},
    }


def transaction_json(
    tx: Transaction,
    endpoint: Endpoint | None,
    number: int | None,
    now: float,
    view: ConnectionView | None = None,
) -> dict[str, Any]:
    """An open transaction (rabbitish's own endpoint: RabbitMQ has none to mirror). `channel`
    is the 0-9-1 channel or the 1.0 session that declared it."""
    return {
        "id": tx.id,
        "state": tx.state.value,
        "created_at": tx.created_at,
        "age_seconds": round(max(0.0, now - tx.created_at), 3),
        "connection": endpoint.name if endpoint is not None else None,
        "channel": number,
        "protocol": view.protocol if view is not None else None,
        "vhost": view.vhost if view is not None else None,
        **{f"staged_{name}": count for name, count in tx.counts().items()},
    }


def transactions_json(
    connections: list[tuple[ConnectionView, Endpoint]], now: float
) -> list[dict[str, Any]]:
    """The open transactions of these connections' sessions, oldest first (each once, should
    two sessions of a 1.0 connection both list it)."""
    found: dict[str, dict[str, Any]] = {}
    for view, endpoint in connections:
        for session in view.sessions:
            for tx in session.transactions:
                found.setdefault(tx.id, transaction_json(tx, endpoint, session.number, now, view))
    return sorted(found.values(), key=lambda t: t["created_at"])


# ---------------------------------------------------------------------- AMQP 1.0 links
def link_json(
    view: ConnectionView, session: SessionView, link: LinkView, endpoint: Endpoint
) -> dict[str, Any]:
    """One 1.0 link in `/api/links` (rabbitish's own listing): where it is and what it holds."""
    return {
        "connection": endpoint.name,
        "connection_details": {
            "name": endpoint.name,
            "peer_host": endpoint.peer_host,
            "peer_port": endpoint.peer_port,
        },
        "channel": channel_name(endpoint, session.number),
        "session": session.number,
        "user": view.user,
        "vhost": view.vhost,
        "name": link.name,
        "handle": link.handle,
        "role": link.role,
        "direction": "outgoing" if link.role == "sender" else "incoming",
        "address": link.address,
        "queue": link.queue,
        "exchange": link.exchange,
        "credit": link.credit,
        "delivery_count": link.delivery_count,
        "unsettled": link.unsettled,
        "snd_settle_mode": link.settle_mode,
        "coordinator": link.coordinator,
    }


def links_json(connections: list[tuple[ConnectionView, Endpoint]]) -> list[dict[str, Any]]:
    """Every 1.0 link of these connections, by connection, session and handle."""
    return [
        link_json(view, session, link, endpoint)
        for view, endpoint in sorted(connections, key=lambda c: c[1].name)
        for session in view.sessions
        for link in session.links
    ]


def session_json(session: SessionView) -> dict[str, Any]:
    """A 1.0 session as RabbitMQ 4.x's `/api/connections/{name}/sessions` shows it, with the
    fields rabbitish can fill (no window counters)."""
    incoming = [link for link in session.links if link.role == "receiver"]
    outgoing = [link for link in session.links if link.role == "sender"]
    return {
        "channel_number": session.number,
        "outgoing_unsettled_deliveries": session.unacked,
        "incoming_links": [
            {
                "handle": link.handle,
                "link_name": link.name,
                "target_address": link.address,
                "delivery_count": link.delivery_count,
                "credit": link.credit,
                "snd_settle_mode": link.settle_mode,
                "coordinator": link.coordinator,
            }
            for link in incoming
        ],
        "outgoing_links": [
            {
                "handle": link.handle,
                "link_name": link.name,
                "source_address": link.address,
                "queue_name": link.queue or "",
                "delivery_count": link.delivery_count,
                "credit": link.credit,
                "send_settled": link.settle_mode == "settled",
            }
            for link in outgoing
        ],
    }
