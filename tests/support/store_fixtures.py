"""Data dirs written by every store schema the project has had (tests/fixtures/store/): what goes
into one and how a broker is checked against it.

`populate` runs real clients against a broker of any version (tests/fixtures/store/
make_fixture.py starts it from that version's code) and returns the fixture's manifest: every
durable thing it made, as plain JSON. A fixture carries its manifest, so it checks itself: what
`populate` adds for a later version changes nothing an older fixture expects. Things a version
could not keep are left out by the features it had (`features`).

Argument tables are kept as typed JSON (`typed`): an int stays apart from a bool, a decimal from
a float, bytes from a string, so a value that comes back as another type fails the check."""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import struct
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions
import pika.frame
from pamqp import commands

from tests.support.queues import message_count
from tests.support.raw_amqp import RawClient, raw_frame
from tests.support.raw_messages import (
    content_header,
    longstr,
    raw_publish,
    shortstr,
    table,
    wide_table,
)
from tests.support.waiting import wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store"
MANIFEST = "manifest.json"
ARCHIVE = "data.tar.gz"

TXN_EXCHANGE = "amq.rabbitish.txn"
VHOST = "/"
ACCESS_VHOST = "ug-vh"
ACCESS_USER, ACCESS_PASSWORD = "ug-user", "ug-secret"


def features(schema_version: int) -> list[str]:
    """What a store of this schema keeps beyond wiring and messages."""
    found = []
    if schema_version >= 2:
        found.append("half")  # half messages and decisions (schema 2)
    if schema_version >= 3:
        found.append("access")  # vhosts, users, permissions, policies (schema 3)
        # Doubles and byte arrays in argument tables: stored losslessly since the last
        # schema-3 release (before, a double became a 32-bit float and bytes were refused).
        found.append("lossless_tables")
    if schema_version >= 4:
        found.append("prepared")  # prepared transactions with locked acks (schema 4)
    return found


# ---------------------------------------------------------------------- typed JSON
def typed(value: Any) -> Any:
    """A field-table value as JSON that keeps its Python type."""
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, decimal.Decimal):
        return ["decimal", str(value)]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, bytes | bytearray | memoryview):
        return ["bytes", bytes(value).hex()]
    if isinstance(value, datetime.datetime):
        when = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return ["timestamp", int(when.timestamp())]
    if value is None:
        return ["void"]
    if isinstance(value, list | tuple):
        return ["array", [typed(v) for v in value]]
    if isinstance(value, dict):
        return ["table", {str(k): typed(v) for k, v in sorted(value.items())}]
    raise TypeError(f"no field-table type for {value!r}")


def typed_table(table_: dict[str, Any] | None) -> dict[str, Any]:
    return {str(k): typed(v) for k, v in sorted((table_ or {}).items())}


# ---------------------------------------------------------------------- messages
def message_entry(
    body: bytes, header: bytes | None, delivered: bool = False, **extra: Any
) -> dict[str, Any]:
    """One stored message as the manifest has it: the body (hex, or its digest when long), the
    raw content header payload the client sent (None when the broker made the header, as for a
    dead-lettered copy) and whether it had been delivered when the broker stopped."""
    entry: dict[str, Any] = {"delivered": delivered}
    if len(body) <= 64:
        entry["body"] = body.hex()
    else:
        entry["size"] = len(body)
        entry["sha256"] = hashlib.sha256(body).hexdigest()
    entry["header"] = None if header is None else header.hex()
    entry.update(extra)
    return entry


def body_matches(entry: dict[str, Any], body: bytes) -> bool:
    if "body" in entry:
        return body.hex() == entry["body"]
    return len(body) == entry["size"] and hashlib.sha256(body).hexdigest() == entry["sha256"]


def expand(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs (`count` messages whose bodies follow `body_format`) as single entries."""
    out = []
    for entry in entries:
        if "count" not in entry:
            out.append(entry)
            continue
        for i in range(entry["count"]):
            body = (entry["body_format"] % i).encode()
            out.append(message_entry(body, bytes.fromhex(entry["header"]), entry["delivered"]))
    return out


def pika_header(body: bytes, props: pika.BasicProperties) -> bytes:
    """The content header payload pika sends for `props` (what the broker must give back)."""
    return pika.frame.Header(1, len(body), props).marshal()[7:-1]


# Every basic property and every field type, sent as raw frames (tests/support/raw_messages.py),
# plus the unsigned and nested types.
ALL_TYPES_TABLE = wide_table(b"1")


def large_body(i: int, size: int) -> bytes:
    """A body several frames long that compresses well (fixtures stay small)."""
    unit = b"large-%d|" % i + bytes(range(256))
    return (unit * (size // len(unit) + 1))[:size]


# ---------------------------------------------------------------------- populate
@dataclass
class World:
    """What `populate` builds, recorded as it goes."""

    schema_version: int
    features: list[str]
    exchanges: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    queues: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    bindings: dict[str, list[list[Any]]] = field(default_factory=dict)
    absent: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    half: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    decided: dict[str, dict[str, str]] = field(default_factory=dict)
    access: dict[str, Any] = field(default_factory=dict)
    held: list[Any] = field(default_factory=list)  # connections kept open at the stop

    def exchange(self, ch: Any, name: str, type_: str, vhost: str = VHOST, **kw: Any) -> None:
        args = kw.pop("arguments", None) or {}
        ch.exchange_declare(name, type_, durable=True, arguments=args, **kw)
        self.exchanges.setdefault(vhost, {})[name] = {
            "type": type_,
            "auto_delete": kw.get("auto_delete", False),
            "internal": kw.get("internal", False),
            "arguments": typed_table(args),
        }

    def queue(self, ch: Any, name: str, vhost: str = VHOST, **kw: Any) -> str:
        args = kw.pop("arguments", None) or {}
        name = ch.queue_declare(name, durable=True, arguments=args, **kw).method.queue
        self.queues.setdefault(vhost, {})[name] = {
            "auto_delete": kw.get("auto_delete", False),
            "arguments": typed_table(args),
            "messages": [],
        }
        return name

    def bind(
        self, ch: Any, dest: str, source: str, key: str = "", vhost: str = VHOST, **kw: Any
    ) -> None:
        args = kw.get("arguments") or {}
        kind = "exchange" if kw.pop("to_exchange", False) else "queue"
        if kind == "exchange":
            ch.exchange_bind(dest, source, key, arguments=args)
        else:
            ch.queue_bind(dest, source, key, arguments=args)
        self.bindings.setdefault(vhost, []).append([source, kind, dest, key, typed_table(args)])

    def messages(self, queue: str, vhost: str = VHOST) -> list[dict[str, Any]]:
        return self.queues[vhost][queue]["messages"]

    def manifest(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "features": self.features,
            "exchanges": self.exchanges,
            "queues": self.queues,
            "bindings": self.bindings,
            "absent": self.absent,
            "half": self.half,
            "decided": self.decided,
            "access": self.access,
        }


P = pika.BasicProperties(delivery_mode=2)
T = pika.BasicProperties(delivery_mode=1)


def _publish(
    ch: Any,
    world: World,
    exchange: str,
    queue: str,
    key: str,
    body: bytes,
    props: pika.BasicProperties = P,
    vhost: str = VHOST,
) -> None:
    """A confirmed persistent publish that lands on `queue` (recorded there)."""
    ch.basic_publish(exchange, key, body, props, mandatory=True)
    world.messages(queue, vhost).append(message_entry(body, pika_header(body, props)))


def _arguments() -> dict[str, Any]:
    """Arguments of every type pika sends, which every schema keeps exactly."""
    args: dict[str, Any] = {
        "x-note": "note",
        "x-int": 7,
        "x-big": 2**40 + 1,
        "x-negative": -12,
        "x-flag": True,
        "x-off": False,
        "x-table": {"a": 1, "b": "two", "c": {"d": False}},
        "x-list": [1, "two", {"three": 3}],
        "x-dec": decimal.Decimal("2.5"),  # pika sends 2.50 as 2.5
        "x-when": datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    }
    return args


# Values pika cannot send (doubles, byte arrays): declared as raw frames, with what the broker
# must decode them to.
LOSSLESS_RAW = table(
    [
        ("x-double", b"d" + struct.pack(">d", 2.25)),
        ("x-precise", b"d" + struct.pack(">d", 0.1)),
        ("x-float", b"f" + struct.pack(">f", 1.5)),
        ("x-bytes", b"x" + longstr(b"\x00\xff\x10")),
        ("x-scaled", b"D\x02" + struct.pack(">i", 250)),
        ("x-nested", b"F" + table([("d", b"d" + struct.pack(">d", -1e300))])),
    ]
)
LOSSLESS = {
    "x-double": 2.25,
    "x-precise": 0.1,
    "x-float": 1.5,
    "x-bytes": b"\x00\xff\x10",
    "x-scaled": decimal.Decimal("2.50"),
    "x-nested": {"d": -1e300},
}


def _raw_method(client: RawClient, class_id: int, method_id: int, payload: bytes, ok: str) -> None:
    client.send(raw_frame(1, 1, struct.pack(">HH", class_id, method_id) + payload))
    client.expect(ok)


def _lossless(url: str, world: World) -> None:
    """Wiring whose arguments hold doubles and byte arrays, declared as raw frames."""
    durable = 0b00010  # exchange.declare / queue.declare bits: passive, durable, ...
    with RawClient(url).open() as raw:
        raw.open_channel(1)
        name, queue, key = "ug.x.lossless", "ug.q.lossless", "k"
        _raw_method(
            raw,
            40,
            10,
            b"\0\0" + shortstr(name) + shortstr("direct") + bytes([durable]) + LOSSLESS_RAW,
            "Exchange.DeclareOk",
        )
        _raw_method(
            raw,
            50,
            10,
            b"\0\0" + shortstr(queue) + bytes([durable]) + LOSSLESS_RAW,
            "Queue.DeclareOk",
        )
        _raw_method(
            raw,
            50,
            20,
            b"\0\0" + shortstr(queue) + shortstr(name) + shortstr(key) + b"\0" + LOSSLESS_RAW,
            "Queue.BindOk",
        )
    world.exchanges[VHOST][name] = {
        "type": "direct",
        "auto_delete": False,
        "internal": False,
        "arguments": typed_table(LOSSLESS),
    }
    world.queues[VHOST][queue] = {
        "auto_delete": False,
        "arguments": typed_table(LOSSLESS),
        "messages": [],
    }
    world.bindings[VHOST].append([name, "queue", queue, key, typed_table(LOSSLESS)])


def populate(url: str, management_url: str, schema_version: int) -> World:
    """Build the durable world in the broker at `url` (AMQP) / `management_url`
    (http://user:password@host:port); the connections it holds must stay open until the stop."""
    world = World(schema_version, features(schema_version))
    conn = pika.BlockingConnection(pika.URLParameters(url))
    world.held.append(conn)
    ch = conn.channel()
    ch.confirm_delivery()
    _wiring(ch, world)
    _messages(conn, ch, world, url)
    if "lossless_tables" in world.features:
        _lossless(url, world)
    if "half" in world.features:
        _half(ch, world)
    if "prepared" in world.features:
        _prepared(url, ch, world)
    if "access" in world.features:
        _access(url, management_url, world)
    _held_at_stop(url, ch, world)
    return world


def _wiring(ch: Any, world: World) -> None:
    args = _arguments()
    world.exchange(ch, "ug.ae", "fanout")
    world.exchange(ch, "ug.dlx", "direct")
    for type_ in ("direct", "fanout", "topic", "headers"):
        world.exchange(ch, f"ug.x.{type_}", type_, arguments={"alternate-exchange": "ug.ae"})
    world.exchange(ch, "ug.x.internal", "topic", internal=True)
    world.exchange(ch, "ug.x.autodel", "direct", auto_delete=True)
    world.exchange(ch, "ug.x.args", "direct", arguments=args)
    ch.exchange_declare("ug.x.transient", "direct", durable=False)
    queue_args = {
        "x-message-ttl": 86_400_000,
        "x-max-length": 100_000,
        "x-dead-letter-exchange": "ug.dlx",
        "x-dead-letter-routing-key": "dead",
        "x-queue-mode": "lazy",
        **args,
    }
    for name, qargs in (
        ("ug.q.plain", {}),
        ("ug.q.args", queue_args),
        ("ug.q.prio", {"x-max-priority": 10}),
        ("ug.q.props", {}),
        ("ug.q.large", {}),
        ("ug.q.long", {}),
        ("ug.q.unacked", {}),
        ("ug.q.tx", {}),
        ("ug.q.txack", {}),
        ("ug.q.mixed", {}),
        ("ug.q.expiring", {}),
        (
            "ug.q.dlsrc",
            {"x-dead-letter-exchange": "ug.dlx", "x-dead-letter-routing-key": "rejected"},
        ),
        ("ug.q.dead", {}),
    ):
        world.queue(ch, name, arguments=qargs)
    world.queue(ch, "ug.q.autodel", auto_delete=True)
    server_named = world.queue(ch, "")
    ch.queue_declare("ug.q.exclusive", durable=True, exclusive=True)
    ch.queue_declare("ug.q.transient", durable=False)
    world.absent[VHOST] = {
        "queues": ["ug.q.exclusive", "ug.q.transient"],
        "exchanges": ["ug.x.transient"],
    }
    headers_all = {"x-match": "all", "a": 1, "b": "two", "dec": decimal.Decimal("1.5")}
    world.bind(ch, "ug.q.plain", "ug.x.direct", "plain")
    world.bind(ch, server_named, "ug.x.direct", "server-named")
    world.bind(ch, "ug.q.plain", "ug.x.fanout")
    world.bind(ch, "ug.q.plain", "ug.x.topic", "a.*.c")
    world.bind(
        ch,
        "ug.x.internal",
        "ug.x.topic",
        "e2e.#",
        arguments={"note": "e2e", "n": 7},
        to_exchange=True,
    )
    world.bind(ch, "ug.q.args", "ug.x.internal", "e2e.*.x")
    world.bind(ch, "ug.q.plain", "ug.x.headers", arguments=headers_all)
    world.bind(ch, "ug.q.args", "ug.x.headers", arguments={"x-match": "any", "c": "3"})
    world.bind(ch, "ug.q.plain", "ug.ae")
    world.bind(ch, "ug.q.dead", "ug.dlx", "rejected")
    world.bind(ch, "ug.q.plain", "ug.x.autodel", "ad")
    world.bind(ch, "ug.q.args", "ug.x.args", "args", arguments=args)
    ch.queue_bind("ug.q.plain", "ug.x.transient", "tr")


def _messages(conn: Any, ch: Any, world: World, url: str) -> None:
    # Routed through every kind of exchange and binding.
    _publish(ch, world, "ug.x.direct", "ug.q.plain", "plain", b"direct")
    _publish(ch, world, "ug.x.fanout", "ug.q.plain", "any", b"fanout")
    _publish(ch, world, "ug.x.topic", "ug.q.plain", "a.b.c", b"topic")
    _publish(ch, world, "ug.x.topic", "ug.q.args", "e2e.a.x", b"e2e")
    headers = pika.BasicProperties(
        delivery_mode=2, headers={"a": 1, "b": "two", "dec": decimal.Decimal("1.5")}
    )
    _publish(ch, world, "ug.x.headers", "ug.q.plain", "", b"headers", headers)
    _publish(ch, world, "ug.x.direct", "ug.q.plain", "nowhere", b"alternate")
    server_named = next(n for n in world.queues[VHOST] if n.startswith("amq.gen-"))
    _publish(ch, world, "ug.x.direct", server_named, "server-named", b"server-named")
    _publish(ch, world, "", "ug.q.autodel", "ug.q.autodel", b"auto-delete")
    # Properties of pika's kinds, then every property and field type as raw frames.
    rich = pika.BasicProperties(
        content_type="text/plain",
        content_encoding="utf-8",
        delivery_mode=2,
        priority=3,
        correlation_id="corr",
        reply_to="replies",
        expiration="86400000",
        message_id="m-1",
        timestamp=1_700_000_000,
        type="kind",
        user_id="guest",
        app_id="fixture",
        headers={"s": "x", "i": 5, "t": True, "l": [1, 2], "n": {"k": "v"}, "v": None},
    )
    _publish(ch, world, "", "ug.q.props", "ug.q.props", b"pika properties", rich)
    with RawClient(url).open() as raw:
        raw.open_channel(1)
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        for size in (300_000, 0):
            body = large_body(9, size)
            header = content_header(len(body), ALL_TYPES_TABLE)
            raw_publish(raw, "", "ug.q.props", header, body)
            world.messages("ug.q.props").append(message_entry(body, header))
    # Large bodies (several frames), a queue past the pager's in-memory limit.
    for i in range(2):
        _publish(ch, world, "", "ug.q.large", "ug.q.large", large_body(i, 700_000))
    tx = conn.channel()
    tx.tx_select()
    for i in range(1100):
        tx.basic_publish("", "ug.q.long", b"long-%05d" % i, P)
    tx.tx_commit()
    tx.close()
    world.messages("ug.q.long").append(
        {
            "count": 1100,
            "body_format": "long-%05d",
            "header": pika_header(b"long-00000", P).hex(),
            "delivered": False,
        }
    )
    # Priorities: stored in publish order, delivered highest first.
    prio = world.messages("ug.q.prio")
    for level, body in (
        (1, b"p1"),
        (5, b"p5a"),
        (3, b"p3"),
        (9, b"p9"),
        (0, b"p0"),
        (5, b"p5b"),
        (None, b"pnone"),
    ):
        props = pika.BasicProperties(delivery_mode=2, priority=level)
        ch.basic_publish("", "ug.q.prio", body, props, mandatory=True)
        prio.append(message_entry(body, pika_header(body, props), priority=level or 0))
    prio.sort(key=lambda e: -e["priority"])
    # Transient messages between persistent ones (only the persistent come back).
    _publish(ch, world, "", "ug.q.mixed", "ug.q.mixed", b"persistent-1")
    ch.basic_publish("", "ug.q.mixed", b"transient", T, mandatory=True)
    _publish(ch, world, "", "ug.q.mixed", "ug.q.mixed", b"persistent-2")
    # Expiry: a day away, per message and per queue.
    _publish(
        ch,
        world,
        "",
        "ug.q.expiring",
        "ug.q.expiring",
        b"a day",
        pika.BasicProperties(delivery_mode=2, expiration="86400000"),
    )
    _publish(ch, world, "", "ug.q.args", "ug.q.args", b"queue ttl")
    # Dead-lettering: the copy carries the broker's x-death header.
    _publish(ch, world, "", "ug.q.dlsrc", "ug.q.dlsrc", b"to reject")
    _publish(ch, world, "", "ug.q.dlsrc", "ug.q.dlsrc", b"stays")
    method, _, _ = ch.basic_get("ug.q.dlsrc", auto_ack=False)
    ch.basic_reject(method.delivery_tag, requeue=False)
    world.messages("ug.q.dlsrc").pop(0)
    world.messages("ug.q.dead").append(
        message_entry(b"to reject", None, x_death={"reason": "rejected", "queue": "ug.q.dlsrc"})
    )
    wait_until(lambda: message_count(conn, "ug.q.dead") == 1, timeout=10)
    for name in ("ug.q.dlsrc", "ug.q.dead"):
        _publish(ch, world, "", name, name, b"barrier")


def _half(ch: Any, world: World) -> None:
    """Half messages: one transaction held, one committed, one rolled back."""
    started = time.time()
    world.queue(ch, "ug.q.half")
    world.queue(ch, "ug.q.checks")
    check = {"x-check-queue": "ug.q.checks", "x-check-immunity": 86400}
    held = []
    for body in (b"held-1", b"held-2"):
        props = pika.BasicProperties(
            delivery_mode=2, headers={"x-half-txn": "ug-half-open", **check}
        )
        ch.basic_publish("", "ug.q.half", body, props, mandatory=True)
        held.append(message_entry(body, pika_header(body, props)))
    for txn, outcome, body in (
        ("ug-half-done", "commit", b"committed"),
        ("ug-half-rolled", "rollback", b"rolled"),
    ):
        props = pika.BasicProperties(delivery_mode=2, headers={"x-half-txn": txn})
        ch.basic_publish("", "ug.q.half", body, props, mandatory=True)
        decision = pika.BasicProperties(headers={"x-half-txn": txn})
        ch.basic_publish(TXN_EXCHANGE, outcome, b"", decision, mandatory=True)
        if outcome == "commit":
            world.messages("ug.q.half").append(message_entry(body, pika_header(body, props)))
        world.decided.setdefault(VHOST, {})[txn] = outcome
    world.half.setdefault(VHOST, {})["ug-half-open"] = {
        "prepared": False,
        "check_queue": "ug.q.checks",
        "publishes": {"ug.q.half": held},
        "locked": {},
        "created_between": [started - 1, time.time() + 1],
    }


def _prepared(url: str, ch: Any, world: World) -> None:
    """A prepared transaction: a publish and an ack, locked until its decision."""
    world.queue(ch, "ug.q.prep")
    world.queue(ch, "ug.q.prepack")
    for body in (b"acked-if-committed", b"free"):
        _publish(ch, world, "", "ug.q.prepack", "ug.q.prepack", body)
    started = time.time()
    conn = pika.BlockingConnection(pika.URLParameters(url))
    tx = conn.channel()
    tx.tx_select()
    method, _, _ = tx.basic_get("ug.q.prepack", auto_ack=False)
    tx.basic_publish("", "ug.q.prep", b"prepared publish", P)
    tx.basic_ack(method.delivery_tag)
    tx.basic_publish(
        TXN_EXCHANGE, "prepare", b"", pika.BasicProperties(headers={"x-half-txn": "ug-prep"})
    )
    tx.tx_commit()
    conn.close()
    locked = world.messages("ug.q.prepack").pop(0)
    world.half[VHOST]["ug-prep"] = {
        "prepared": True,
        "check_queue": None,
        "publishes": {
            "ug.q.prep": [message_entry(b"prepared publish", pika_header(b"prepared publish", P))]
        },
        "locked": {"ug.q.prepack": [locked["body"]]},
        "created_between": [started - 1, time.time() + 1],
    }


def _access(url: str, management_url: str, world: World) -> None:
    """A vhost, a user with its permissions, policies; wiring and a message in the vhost."""
    api = ManagementApi(management_url)
    api.put(f"/api/vhosts/{ACCESS_VHOST}", {"description": "upgrade fixture", "tags": "ug,fixture"})
    api.put(f"/api/users/{ACCESS_USER}", {"password": ACCESS_PASSWORD, "tags": "monitoring"})
    user_perms = {"configure": "^ug\\.", "write": ".*", "read": "^ug\\.q\\."}
    api.put(f"/api/permissions/{ACCESS_VHOST}/{ACCESS_USER}", user_perms)
    api.put(
        f"/api/permissions/{ACCESS_VHOST}/guest", {"configure": ".*", "write": ".*", "read": ".*"}
    )
    policy = {
        "pattern": "^ug\\.q\\.pol",
        "apply-to": "queues",
        "priority": 3,
        "definition": {"message-ttl": 3_600_000, "max-length": 500},
    }
    operator = {
        "pattern": "^ug\\.q\\.pol",
        "apply-to": "queues",
        "priority": 1,
        "definition": {"max-length": 1000},
    }
    api.put("/api/policies/%2F/ug-policy", policy)
    api.put("/api/operator-policies/%2F/ug-operator", operator)
    world.access = {
        "vhosts": {ACCESS_VHOST: {"description": "upgrade fixture", "tags": ["ug", "fixture"]}},
        "users": {ACCESS_USER: {"password": ACCESS_PASSWORD, "tags": ["monitoring"]}},
        "permissions": {f"{ACCESS_VHOST} {ACCESS_USER}": user_perms},
        "policies": {"/ ug-policy": policy},
        "operator_policies": {"/ ug-operator": operator},
    }
    vh_url = url.rsplit("/", 1)[0] + "/" + quote(ACCESS_VHOST, safe="")
    conn = pika.BlockingConnection(pika.URLParameters(vh_url))
    ch = conn.channel()
    ch.confirm_delivery()
    world.exchange(ch, "ug.x.vh", "topic", vhost=ACCESS_VHOST)
    world.queue(ch, "ug.q.vh", vhost=ACCESS_VHOST, arguments={"x-max-length": 50})
    world.bind(ch, "ug.q.vh", "ug.x.vh", "#", vhost=ACCESS_VHOST)
    _publish(ch, world, "ug.x.vh", "ug.q.vh", "k", b"in another vhost", vhost=ACCESS_VHOST)
    conn.close()
    root = pika.BlockingConnection(pika.URLParameters(url))
    world.queue(root.channel(), "ug.q.policy")  # the policies apply to it after the restart too
    root.close()


def _held_at_stop(url: str, ch: Any, world: World) -> None:
    """Deliveries unacked and a transaction open when the broker stops (a barrier publish
    after each: a queue writes its changes in order, so its confirm covers them)."""
    for i in range(6):
        _publish(ch, world, "", "ug.q.unacked", "ug.q.unacked", b"u%d" % i)
    holder = pika.BlockingConnection(pika.URLParameters(url))
    world.held.append(holder)
    hch = holder.channel()
    tags = [hch.basic_get("ug.q.unacked", auto_ack=False)[0].delivery_tag for _ in range(3)]
    hch.basic_ack(tags[1])
    unacked = world.messages("ug.q.unacked")
    unacked[0]["delivered"] = unacked[2]["delivered"] = True
    del unacked[1]
    _publish(ch, world, "", "ug.q.txack", "ug.q.txack", b"t0")
    _publish(ch, world, "", "ug.q.txack", "ug.q.txack", b"t1")
    tch = holder.channel()
    tch.tx_select()
    tch.basic_publish("", "ug.q.tx", b"committed-1", P)
    tch.basic_publish("", "ug.q.tx", b"committed-2", P)
    tch.tx_commit()
    for body in (b"committed-1", b"committed-2"):
        world.messages("ug.q.tx").append(message_entry(body, pika_header(body, P)))
    tch.basic_publish("", "ug.q.tx", b"open", P)  # never committed: never stored
    got = tch.basic_get("ug.q.txack", auto_ack=False)[0]
    tch.basic_ack(got.delivery_tag)  # staged in the open transaction: not applied
    world.messages("ug.q.txack")[0]["delivered"] = True
    for name in ("ug.q.unacked", "ug.q.tx", "ug.q.txack"):
        _publish(ch, world, "", name, name, b"barrier")


class ManagementApi:
    """The management API's PUTs (urllib: nothing beyond the standard library)."""

    def __init__(self, management_url: str) -> None:
        scheme, rest = management_url.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        self.base = f"{scheme}://{host}"
        self.auth = "Basic " + base64.b64encode(credentials.encode()).decode()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": self.auth, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            raw = reply.read()
        return json.loads(raw) if raw else None

    def put(self, path: str, body: Any) -> None:
        self.request("PUT", path, body)

    def get(self, path: str) -> Any:
        return self.request("GET", path)
