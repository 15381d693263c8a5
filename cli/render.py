"""Rich renderings of what the management API returns: tables for lists, a readable view of
peeked messages (properties, headers, body as text, pretty JSON or a hex dump)."""

from __future__ import annotations

import base64
import json
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

HEX_LIMIT = 512  # bytes of a binary body shown as a hex dump
TEXT_LIMIT = 8192  # characters of a text body shown


def _flags(item: dict[str, Any], names: dict[str, str]) -> str:
    return " ".join(short for key, short in names.items() if item.get(key))


def _args(arguments: dict[str, Any] | None) -> str:
    if not arguments:
        return ""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())


def _rate(item: dict[str, Any], *path: str) -> str:
    value: Any = item
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return f"{value:.1f}/s" if isinstance(value, int | float) else ""


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for header, justify in columns:
        # numbers never wrap; text folds when the terminal is narrow
        table.add_column(
            header,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold",
            no_wrap=justify == "right",
        )
    return table


def queues_table(queues: list[dict[str, Any]], title: str = "Queues") -> Table:
    table = _table(
        title,
        [
            ("vhost", "left"),
            ("name", "left"),
            ("ready", "right"),
            ("unacked", "right"),
            ("consumers", "right"),
            ("in", "right"),
            ("out", "right"),
            ("flags", "left"),
            ("arguments", "left"),
        ],
    )
    flags = {"durable": "D", "auto_delete": "AD", "exclusive": "Excl"}
    for q in queues:
        table.add_row(
            q["vhost"],
            q["name"],
            str(q.get("messages_ready", 0)),
            str(q.get("messages_unacknowledged", 0)),
            str(q.get("consumers", 0)),
            _rate(q, "message_stats", "publish_details", "rate"),
            _rate(q, "message_stats", "deliver_get_details", "rate"),
            _flags(q, flags),
            _args(q.get("arguments")),
        )
    return table


def exchanges_table(exchanges: list[dict[str, Any]]) -> Table:
    table = _table(
        "Exchanges",
        [
            ("vhost", "left"),
            ("name", "left"),
            ("type", "left"),
            ("flags", "left"),
            ("arguments", "left"),
        ],
    )
    flags = {"durable": "D", "auto_delete": "AD", "internal": "I"}
    for e in exchanges:
        name = e["name"] or "(AMQP default)"
        table.add_row(e["vhost"], name, e["type"], _flags(e, flags), _args(e.get("arguments")))
    return table


def bindings_table(bindings: list[dict[str, Any]]) -> Table:
    table = _table(
        "Bindings",
        [
            ("vhost", "left"),
            ("source", "left"),
            ("destination", "left"),
            ("type", "left"),
            ("routing key", "left"),
            ("arguments", "left"),
        ],
    )
    for b in bindings:
        table.add_row(
            b["vhost"],
            b["source"] or "(AMQP default)",
            b["destination"],
            b["destination_type"],
            b["routing_key"],
            _args(b.get("arguments")),
        )
    return table


def connections_table(connections: list[dict[str, Any]]) -> Table:
    table = _table(
        "Connections",
        [
            ("name", "left"),
            ("user", "left"),
            ("vhost", "left"),
            ("protocol", "left"),
            ("channels", "right"),
            ("client", "left"),
        ],
    )
    for c in connections:
        props = c.get("client_properties") or {}
        client = " ".join(str(props[k]) for k in ("product", "version") if props.get(k))
        table.add_row(
            c["name"],
            c.get("user") or "",
            c.get("vhost") or "",
            c.get("protocol") or "",
            str(c["channels"]),
            client,
        )
    return table


def transactions_table(transactions: list[dict[str, Any]]) -> Table:
    table = _table(
        "Open transactions",
        [
            ("id", "left"),
            ("state", "left"),
            ("client (channel)", "left"),
            ("protocol", "left"),
            ("age", "right"),
            ("publishes", "right"),
            ("settlements", "right"),
            ("acquisitions", "right"),
        ],
    )
    for tx in transactions:
        table.add_row(
            tx.get("id") or "",
            tx.get("state") or "",
            f"{tx.get('connection') or ''} ({tx.get('channel')})",
            tx.get("protocol") or "",
            f"{tx.get('age_seconds', 0):.1f}s",
            str(tx.get("staged_publishes", 0)),
            str(tx.get("staged_settlements", 0)),
            str(tx.get("staged_acquisitions", 0)),
        )
    return table


def half_transactions_table(transactions: list[dict[str, Any]]) -> Table:
    """Half transactions; an `acks` column (deliveries locked by settlements) when any of them
    is a prepared transaction."""
    with_acks = any(txn.get("prepared") for txn in transactions)
    columns = [("id", "left"), ("vhost", "left"), ("messages", "right")]
    if with_acks:
        columns.append(("acks", "right"))
    columns += [("queues", "left"), ("age", "right"), ("checks sent", "right")]
    table = _table(
        "Half transactions (prepared, awaiting a decision)",
        [*columns, ("check queue", "left")],
    )
    for txn in transactions:
        cells = [txn.get("id") or "", txn.get("vhost") or "", str(txn.get("messages", 0))]
        if with_acks:
            cells.append(str(txn.get("acks", 0)))
        table.add_row(
            *cells,
            ", ".join(txn.get("queues") or []),
            f"{txn.get('age_seconds', 0):.1f}s",
            str(txn.get("checks_sent", 0)),
            txn.get("check_queue") or "",
        )
    return table


def channels_table(channels: list[dict[str, Any]], title: str = "Channels") -> Table:
    table = _table(
        title,
        [
            ("client (channel)", "left"),
            ("user", "left"),
            ("protocol", "left"),
            ("mode", "left"),
            ("consumers", "right"),
            ("prefetch", "right"),
            ("unacked", "right"),
            ("tx msgs", "right"),
            ("tx acks", "right"),
        ],
    )
    for ch in channels:
        mode = "tx" if ch.get("transactional") else "confirm" if ch.get("confirm") else ""
        peer = ch.get("connection_details") or {}
        name = f"{peer.get('peer_host')}:{peer.get('peer_port')} ({ch.get('number')})"
        table.add_row(
            name,
            ch.get("user") or "",
            ch.get("protocol") or "",
            mode,
            str(ch.get("consumer_count", 0)),
            str(ch.get("prefetch_count", 0)),
            str(ch.get("messages_unacknowledged", 0)),
            str(ch.get("messages_uncommitted", 0)),
            str(ch.get("acks_uncommitted", 0)),
        )
    return table


def links_table(links: list[dict[str, Any]]) -> Table:
    """AMQP 1.0 links; "in" is a link the client sends on, "out" one it receives from."""
    table = _table(
        "AMQP 1.0 links",
        [
            ("client (session)", "left"),
            ("handle", "right"),
            ("name", "left"),
            ("dir", "left"),
            ("address", "left"),
            ("queue / exchange", "left"),
            ("credit", "right"),
            ("delivered", "right"),
            ("unsettled", "right"),
            ("settle", "left"),
        ],
    )
    for link in links:
        if link.get("coordinator"):
            address, target = "(transaction coordinator)", ""
        else:
            address = link.get("address") or ""
            target = _link_target(link)
        peer = link.get("connection_details") or {}
        table.add_row(
            f"{peer.get('peer_host')}:{peer.get('peer_port')} ({link.get('session')})",
            str(link.get("handle")),
            link.get("name") or "",
            "in" if link.get("direction") == "incoming" else "out",
            address,
            target,
            str(link.get("credit", 0)),
            str(link.get("delivery_count", 0)),
            str(link.get("unsettled", 0)),
            link.get("snd_settle_mode") or "",
        )
    return table


def _link_target(link: dict[str, Any]) -> str:
    exchange = link.get("exchange")
    if exchange:  # a named exchange: published to, or a receiver's private queue bound to it
        return f"exchange {exchange}"
    queue = link.get("queue")
    return f"queue {queue}" if queue else ""


# ---------------------------------------------------------------------- peek
def body_bytes(message: dict[str, Any]) -> bytes:
    payload = message.get("payload", "")
    if message.get("payload_encoding") == "base64":
        return base64.b64decode(payload)
    return str(payload).encode()


def readable_body(message: dict[str, Any]) -> RenderableType:
    """Text as text, JSON pretty-printed, anything else as a hex dump."""
    text = str(message.get("payload", ""))
    if message.get("payload_encoding") != "base64" and _printable(text):
        try:
            parsed = json.loads(text)
        except ValueError:
            return Text(_clip(text))
        if isinstance(parsed, dict | list):
            return Text(_clip(json.dumps(parsed, indent=2, ensure_ascii=False)))
        return Text(_clip(text))
    return Text(hexdump(body_bytes(message)))


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... {len(text) - limit} more characters"


def _printable(text: str) -> bool:
    return all(ch.isprintable() or ch in "\n\r\t" for ch in text)


def hexdump(data: bytes, limit: int = HEX_LIMIT) -> str:
    lines = []
    for offset in range(0, min(len(data), limit), 16):
        chunk = data[offset : offset + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        chars = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<47}  {chars}")
    if len(data) > limit:
        lines.append(f"... {len(data) - limit} more bytes")
    return "\n".join(lines) or "(empty body)"


def message_panel(index: int, message: dict[str, Any]) -> Panel:
    props = message.get("properties") or {}
    headers = props.get("headers") if isinstance(props, dict) else None
    meta = Table.grid(padding=(0, 2))
    meta.add_column(style="bold")
    meta.add_column()
    meta.add_row("exchange", message.get("exchange") or "(AMQP default)")
    meta.add_row("routing key", str(message.get("routing_key", "")))
    meta.add_row("redelivered", str(message.get("redelivered", False)).lower())
    meta.add_row("size", f"{message.get('payload_bytes', 0)} bytes")
    for key, value in props.items() if isinstance(props, dict) else []:
        if key != "headers":
            meta.add_row(key, str(value))
    parts: list[RenderableType] = [meta]
    if headers:
        table = Table("header", "value", box=box.MINIMAL, show_edge=False)
        for key, value in headers.items():
            table.add_row(key, json.dumps(value, ensure_ascii=False))
        parts.append(table)
    parts.append(Text("body:", style="bold"))
    parts.append(readable_body(message))
    return Panel(Group(*parts), title=f"message {index}", title_align="left")


def access_table(title: str, columns: list[str], items: list[dict[str, Any]]) -> Table:
    """Users, permissions or vhosts: the named fields, lists (tags) comma-separated."""
    table = _table(title, [(column, "left") for column in columns])
    for item in items:
        cells = [item.get(column, "") for column in columns]
        table.add_row(*(", ".join(c) if isinstance(c, list) else str(c) for c in cells))
    return table
