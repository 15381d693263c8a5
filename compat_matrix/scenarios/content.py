"""Message content: every property, header field types, user-id validation, body sizes."""

from __future__ import annotations

import datetime
import decimal

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import full, temp_queue
from compat_matrix.session import Delivery, Session


@scenario("content.all_properties", "content.properties")
def all_properties(s: Session) -> None:
    """Every basic property comes back as published, through get and through a consumer."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    props = {
        "content_type": "application/json",
        "content_encoding": "utf-8",
        "headers": {"h": "v"},
        "delivery_mode": 2,
        "priority": 7,
        "correlation_id": "corr",
        "reply_to": "somewhere",
        "expiration": "60000",
        "message_id": "mid",
        "timestamp": 1700000000,
        "type": "kind",
        "user_id": "guest",
        "app_id": "app",
        "cluster_id": "cluster",
    }
    s.publish(ch, "", q, "get me", **props)
    s.publish(ch, "", q, "consume me", **props)
    got = s.get(ch, q)
    s.log("via get", full(got) if got else None)
    box: list[Delivery] = []
    s.consumer(ch, q, box, auto_ack=True)
    s.receive(ch, box, 1, "consumed")
    s.log("via consumer", [full(d) for d in box])


@scenario("content.header_field_types", "content.properties")
def header_types(s: Session) -> None:
    """Header tables keep their values: strings, integers, booleans, decimals, timestamps,
    nested tables, arrays, bytes, void (pika cannot send floats; see aio.header_field_types)."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    headers = {
        "str": "text",
        "unicode": "café ☃",
        "int": 42,
        "negative": -7,
        "big": 2**40,
        "true": True,
        "false": False,
        "decimal": decimal.Decimal("3.14"),
        "time": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "table": {"inner": {"deep": 1}},
        "array": [1, "two", [3]],
        "bytes": b"\x00\x01\xff",
        "void": None,
    }
    s.publish(ch, "", q, "m", headers=headers)
    got = s.get(ch, q)
    delivered = dict(got.properties.headers) if got else {}
    s.log("headers", {k: [type(v).__name__, v] for k, v in sorted(delivered.items())})


@scenario("content.user_id_checked", "content.properties", "error.406")
def user_id(s: Session) -> None:
    """A user-id property other than the authenticated user closes the channel (406)."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    s.publish_confirmed(ch, "matching user", "", q, "ok", user_id="guest")
    s.publish_confirmed(ch, "other user", "", q, "bad", user_id="mallory")
    s.drain(s.channel(), q)


@scenario("content.bodies", "content.bodies")
def bodies(s: Session) -> None:
    """Empty, binary, non-ASCII and multi-frame (1 MB) bodies arrive intact."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    payloads = [b"", bytes(range(256)), "héllo ✓".encode(), b"0123456789" * 100_000]
    for body in payloads:
        s.publish(ch, "", q, body)
    same = []
    for body in payloads:
        _method, _props, got = ch.basic_get(q, auto_ack=True)
        same.append([len(got or b""), got == body])
    s.log("lengths and equality", same)


@scenario("content.persistent_flag_kept", "content.properties", "queue.declare")
def persistent(s: Session) -> None:
    """delivery_mode is delivered as published, on durable and transient queues alike."""
    ch = s.channel(confirm=True)
    durable = s.name("durable")
    ch.queue_declare(durable, durable=True)
    transient = temp_queue(s, ch, "transient")
    for q in (durable, transient):
        for mode in (1, 2, None):
            s.publish(ch, "", q, f"mode {mode}", delivery_mode=mode)
        out = []
        while (got := ch.basic_get(q, auto_ack=True))[0] is not None:
            out.append([got[2].decode(), got[1].delivery_mode])
        s.log("delivered", out)
    ch.queue_delete(durable)
