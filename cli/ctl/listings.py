"""The list_* verbs as data: for each, the management API resource it reads, its banner, its
info items (column name -> how to read it off the API's JSON), its default columns, and whether
rabbitmqctl streams it (an empty stream prints no header; an empty list prints an empty line).

The API has no Erlang pids: a connection's, channel's or queue's pid is made from its name, the
same every time it is listed, so `close_connection` finds the connection by the pid it printed."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rabbitish.cli.client import segment
from rabbitish.cli.ctl.terms import Rendered, erlang_atom

BROKER_NODE = "rabbitish@localhost"  # the node name the management API reports

Item = Callable[[dict[str, Any]], Any]


def _pid(kind: int, key: str, serial: int = 0) -> Rendered:
    number = zlib.crc32(key.encode()) & 0x7FFFFFF
    return Rendered(f"<{BROKER_NODE}.{kind}.{number}.{serial}>", f"#PID<{kind}.{number}.{serial}>")


def connection_pid(name: str) -> Rendered:
    return _pid(1, name)


def channel_pid(connection: str, number: int) -> Rendered:
    return _pid(1, connection, number)


def _queue_pid(queue: dict[str, Any]) -> Rendered:
    return _pid(2, f"{queue.get('vhost', '/')}/{queue['name']}")


def _address(host: Any) -> Any:
    """An IP address: text in tables, the address tuple as a list in JSON."""
    if not isinstance(host, str):
        return host
    if host.count(".") == 3 and host.replace(".", "").isdigit():
        return Rendered(host, [int(part) for part in host.split(".")])
    return host


def _protocol(connection: dict[str, Any]) -> Rendered:
    text = str(connection.get("protocol", ""))
    version = [int(p) for p in text.split()[-1].split("-") if p.isdigit()] if text else []
    if text.endswith("1.0"):
        version = [1, 0]
    return Rendered("{" + ",".join(map(str, version)) + "}", version)


def _blank(key: str) -> Item:
    """An item the API may leave out or null: printed empty, as RabbitMQ prints ''."""
    return lambda obj: "" if obj.get(key) is None else obj[key]


def _zero(key: str) -> Item:
    return lambda obj: obj.get(key, 0)


def _nothing(_obj: dict[str, Any]) -> Any:
    return ""


def _cluster_state(vhost: dict[str, Any]) -> Rendered:
    states = vhost.get("cluster_state") or {BROKER_NODE: "running"}
    text = ", ".join(f"{{{erlang_atom(n)}, {erlang_atom(s)}}}" for n, s in states.items())
    return Rendered(f"[{text}]", states)


def _vhost_tags(vhost: dict[str, Any]) -> Any:
    """RabbitMQ 3.10's `add_vhost --tags a,b` keeps the text as given and prints it so ("" for
    none); the default vhost's tags are a list ("[]"). The API keeps only the list, so every
    vhost but / prints as one made by rabbitmqctl."""
    tags = vhost.get("tags") or []
    return tags if vhost.get("name") == "/" else ",".join(tags)


def _definition(policy: dict[str, Any]) -> str:
    return json.dumps(policy.get("definition", {}), sort_keys=True, separators=(",", ":"))


def _consumer_channel(consumer: dict[str, Any]) -> Rendered:
    details = consumer.get("channel_details") or {}
    return channel_pid(str(details.get("connection_name", "")), int(details.get("number", 0)))


def _channel_connection(channel: dict[str, Any]) -> Rendered:
    return connection_pid(str((channel.get("connection_details") or {}).get("name", "")))


def _channel_pid(channel: dict[str, Any]) -> Rendered:
    connection = str((channel.get("connection_details") or {}).get("name", ""))
    return channel_pid(connection, int(channel.get("number", 0)))


def _same(key: str) -> Item:
    return lambda obj: obj.get(key)


QUEUE_ITEMS: dict[str, Item] = {
    "name": _same("name"),
    "durable": _same("durable"),
    "auto_delete": _same("auto_delete"),
    "arguments": lambda q: q.get("arguments") or {},
    "policy": _blank("policy"),
    "pid": _queue_pid,
    "owner_pid": _nothing,
    "exclusive": _same("exclusive"),
    "exclusive_consumer_pid": _nothing,
    "exclusive_consumer_tag": _blank("exclusive_consumer_tag"),
    "messages_ready": _zero("messages_ready"),
    "messages_unacknowledged": _zero("messages_unacknowledged"),
    "messages": _zero("messages"),
    "messages_ready_ram": _zero("messages_ready_ram"),
    "messages_unacknowledged_ram": _zero("messages_unacknowledged_ram"),
    "messages_ram": _zero("messages_ram"),
    "messages_persistent": _zero("messages_persistent"),
    "message_bytes": _zero("message_bytes"),
    "message_bytes_ready": _zero("message_bytes_ready"),
    "message_bytes_unacknowledged": _zero("message_bytes_unacknowledged"),
    "message_bytes_ram": _zero("message_bytes_ram"),
    "message_bytes_persistent": _zero("message_bytes_persistent"),
    "head_message_timestamp": _blank("head_message_timestamp"),
    "disk_reads": _zero("disk_reads"),
    "disk_writes": _zero("disk_writes"),
    "consumers": _zero("consumers"),
    "consumer_utilisation": _blank("consumer_utilisation"),
    "consumer_capacity": _blank("consumer_capacity"),
    "memory": _zero("memory"),
    "slave_pids": _nothing,
    "synchronised_slave_pids": _nothing,
    "state": _same("state"),
    "type": _same("type"),
    "leader": _nothing,
    "members": _nothing,
    "online": _nothing,
}
EXCHANGE_ITEMS: dict[str, Item] = {
    "name": _same("name"),
    "type": _same("type"),
    "durable": _same("durable"),
    "auto_delete": _same("auto_delete"),
    "internal": _same("internal"),
    "arguments": lambda e: e.get("arguments") or {},
    "policy": _blank("policy"),
}
BINDING_ITEMS: dict[str, Item] = {
    "source_name": _same("source"),
    "source_kind": lambda _b: "exchange",
    "destination_name": _same("destination"),
    "destination_kind": _same("destination_type"),
    "routing_key": _same("routing_key"),
    # RabbitMQ keeps a binding's arguments sorted by key (rabbit_misc:sort_field_table)
    "arguments": lambda b: dict(sorted((b.get("arguments") or {}).items())),
}
CONNECTION_ITEMS: dict[str, Item] = {
    "pid": lambda c: connection_pid(c["name"]),
    "name": _same("name"),
    "port": _same("port"),
    "host": lambda c: _address(c.get("host")),
    "peer_port": _same("peer_port"),
    "peer_host": lambda c: _address(c.get("peer_host")),
    "ssl": _same("ssl"),
    "ssl_protocol": _blank("ssl_protocol"),
    "ssl_key_exchange": _blank("ssl_key_exchange"),
    "ssl_cipher": _blank("ssl_cipher"),
    "ssl_hash": _blank("ssl_hash"),
    "peer_cert_subject": _blank("peer_cert_subject"),
    "peer_cert_issuer": _blank("peer_cert_issuer"),
    "peer_cert_validity": _blank("peer_cert_validity"),
    "state": _same("state"),
    "channels": _zero("channels"),
    "protocol": _protocol,
    "auth_mechanism": _same("auth_mechanism"),
    "user": _same("user"),
    "vhost": _same("vhost"),
    "timeout": _zero("timeout"),
    "frame_max": _zero("frame_max"),
    "channel_max": _zero("channel_max"),
    "client_properties": lambda c: c.get("client_properties") or {},
    "recv_oct": _zero("recv_oct"),
    "recv_cnt": _zero("recv_cnt"),
    "send_oct": _zero("send_oct"),
    "send_cnt": _zero("send_cnt"),
    "send_pend": _zero("send_pend"),
    "connected_at": _same("connected_at"),
}
CHANNEL_ITEMS: dict[str, Item] = {
    "pid": _channel_pid,
    "connection": _channel_connection,
    "name": _same("name"),
    "number": _same("number"),
    "user": _same("user"),
    "vhost": _same("vhost"),
    "transactional": _same("transactional"),
    "confirm": _same("confirm"),
    "consumer_count": _zero("consumer_count"),
    "messages_unacknowledged": _zero("messages_unacknowledged"),
    "messages_uncommitted": _zero("messages_uncommitted"),
    "acks_uncommitted": _zero("acks_uncommitted"),
    "messages_unconfirmed": _zero("messages_unconfirmed"),
    "prefetch_count": _zero("prefetch_count"),
    "global_prefetch_count": _zero("global_prefetch_count"),
}
CONSUMER_ITEMS: dict[str, Item] = {
    "queue_name": lambda c: (c.get("queue") or {}).get("name"),
    "channel_pid": _consumer_channel,
    "consumer_tag": _same("consumer_tag"),
    "ack_required": _same("ack_required"),
    "prefetch_count": _zero("prefetch_count"),
    "active": _same("active"),
    "activity_status": _same("activity_status"),
    "arguments": lambda c: c.get("arguments") or {},
}
VHOST_ITEMS: dict[str, Item] = {
    "name": _same("name"),
    "description": lambda v: v.get("description") or "",
    "tags": _vhost_tags,
    # rabbitish keeps no default queue type (the API answers "classic" for every vhost); a
    # RabbitMQ vhost made without one prints `undefined`
    "default_queue_type": lambda _v: "undefined",
    "tracing": lambda v: bool(v.get("tracing")),
    "cluster_state": _cluster_state,
}
USER_ITEMS: dict[str, Item] = {"user": _same("name"), "tags": lambda u: u.get("tags") or []}
PERMISSION_ITEMS: dict[str, Item] = {
    "user": _same("user"),
    "configure": _same("configure"),
    "write": _same("write"),
    "read": _same("read"),
}
USER_PERMISSION_ITEMS: dict[str, Item] = {
    "vhost": _same("vhost"),
    "configure": _same("configure"),
    "write": _same("write"),
    "read": _same("read"),
}
POLICY_ITEMS: dict[str, Item] = {
    "vhost": _same("vhost"),
    "name": _same("name"),
    "pattern": _same("pattern"),
    "apply-to": _same("apply-to"),
    "definition": _definition,
    "priority": _same("priority"),
}


def _binding_order(bindings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RabbitMQ lists the default exchange's bindings first (in its queues' order), then the
    others in its route table's order: source, routing key, destination kind and name."""
    implicit = [b for b in bindings if b.get("source") == ""]
    explicit = sorted(
        (b for b in bindings if b.get("source") != ""),
        key=lambda b: (
            b.get("source", ""),
            b.get("routing_key", ""),
            b.get("destination_type", ""),
            b.get("destination", ""),
            json.dumps(b.get("arguments") or {}, sort_keys=True),
        ),
    )
    return implicit + explicit


def _zero_nine_one(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """list_connections and list_channels list AMQP 0-9-1's (RabbitMQ 3.10: "Lists AMQP 0.9.1
    connections for the node"); rabbitish's API lists 1.0 connections and sessions too."""
    return [obj for obj in found if str(obj.get("protocol", "AMQP 0-9-1")).startswith("AMQP 0-9")]


def _as_listed(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return found


@dataclass(frozen=True)
class Listing:
    """One list_* verb."""

    verb: str
    items: dict[str, Item]
    defaults: tuple[str, ...]
    path: Callable[[str], str]  # the vhost (or the verb's argument) -> API path
    banner: Callable[[str], str]
    stream: bool = True
    columns: bool = True  # whether the verb takes column arguments
    timeout_banner: bool = False
    order: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] = _as_listed

    def row(self, obj: dict[str, Any], columns: list[str]) -> list[Any]:
        return [self.items[column](obj) for column in columns]


LISTINGS = {
    listing.verb: listing
    for listing in (
        Listing(
            "list_queues",
            QUEUE_ITEMS,
            ("name", "messages"),
            lambda v: f"/api/queues/{segment(v)}",
            lambda v: f"Listing queues for vhost {v} ...",
            timeout_banner=True,
        ),
        Listing(
            "list_exchanges",
            EXCHANGE_ITEMS,
            ("name", "type"),
            lambda v: f"/api/exchanges/{segment(v)}",
            lambda v: f"Listing exchanges for vhost {v} ...",
        ),
        Listing(
            "list_bindings",
            BINDING_ITEMS,
            tuple(BINDING_ITEMS),
            lambda v: f"/api/bindings/{segment(v)}",
            lambda v: f"Listing bindings for vhost {v}...",
            order=_binding_order,
        ),
        Listing(
            "list_connections",
            CONNECTION_ITEMS,
            ("user", "peer_host", "peer_port", "state"),
            lambda _v: "/api/connections",
            lambda _v: "Listing connections ...",
            order=_zero_nine_one,
        ),
        Listing(
            "list_channels",
            CHANNEL_ITEMS,
            ("pid", "user", "consumer_count", "messages_unacknowledged"),
            lambda _v: "/api/channels",
            lambda _v: "Listing channels ...",
            order=_zero_nine_one,
        ),
        Listing(
            "list_consumers",
            CONSUMER_ITEMS,
            (
                "queue_name",
                "channel_pid",
                "consumer_tag",
                "ack_required",
                "prefetch_count",
                "active",
                "arguments",
            ),
            lambda v: f"/api/consumers/{segment(v)}",
            lambda v: f"Listing consumers in vhost {v} ...",
        ),
        Listing(
            "list_vhosts",
            VHOST_ITEMS,
            ("name",),
            lambda _v: "/api/vhosts",
            lambda _v: "Listing vhosts ...",
            stream=False,
        ),
        Listing(
            "list_users",
            USER_ITEMS,
            ("user", "tags"),
            lambda _v: "/api/users",
            lambda _v: "Listing users ...",
            stream=False,
            columns=False,
        ),
        Listing(
            "list_permissions",
            PERMISSION_ITEMS,
            tuple(PERMISSION_ITEMS),
            lambda v: f"/api/vhosts/{segment(v)}/permissions",
            lambda v: f'Listing permissions for vhost "{v}" ...',
            stream=False,
            columns=False,
        ),
        Listing(
            "list_user_permissions",
            USER_PERMISSION_ITEMS,
            tuple(USER_PERMISSION_ITEMS),
            lambda u: f"/api/users/{segment(u)}/permissions",
            lambda u: f'Listing permissions for user "{u}" ...',
            stream=False,
            columns=False,
        ),
        Listing(
            "list_policies",
            POLICY_ITEMS,
            tuple(POLICY_ITEMS),
            lambda v: f"/api/policies/{segment(v)}",
            lambda v: f'Listing policies for vhost "{v}" ...',
            stream=False,
            columns=False,
        ),
    )
}
