"""One restart scenario, run the same way against rabbitish and a real RabbitMQ: `populate`
creates every kind of durable (and some transient) thing a client can make, `observe` looks at
what a restart left, as plain data two brokers' runs can be compared by.

Everything the scenario needs on disk before a kill is confirmed first: publishes through
publisher confirms, and after acks, gets and dead-lettering a confirmed "barrier" publish to the
same queue (a queue writes its changes in order, so the barrier's confirm covers them)."""

from __future__ import annotations

import datetime
import decimal
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import pika
import pika.exceptions
from pamqp import commands

from tests.support.queues import message_count
from tests.support.raw_amqp import RawClient
from tests.support.raw_messages import (
    content_header,
    raw_get,
    raw_publish,
    wide_table,
)
from tests.support.waiting import wait_until

P = pika.BasicProperties(delivery_mode=2)
T = pika.BasicProperties(delivery_mode=1)
SHORT_TTL_MS = 2000  # expires while the broker is down (the restart waits for it)
LONG_TTL_MS = 600_000

DLX = "rs.dlx"
AE = "rs.ae"
EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers")

# Durable queues and their arguments (the arguments are also re-checked one by one).
QUEUES: dict[str, dict[str, Any]] = {
    "rs.q.plain": {},
    "rs.q.fan": {},
    "rs.q.topic": {},
    "rs.q.e2e": {},
    "rs.q.hdr-all": {},
    "rs.q.hdr-any": {},
    "rs.q.hdr-typed": {},
    "rs.q.ae": {},
    "rs.q.order": {},
    "rs.q.props": {},
    "rs.q.unacked": {},
    "rs.q.msg-ttl": {},
    "rs.q.tx": {},
    "rs.q.txack": {},
    "rs.q.dead": {},
    "rs.q.expired": {},
    "rs.q.dead-overflow": {},
    "rs.q.ttl": {"x-message-ttl": LONG_TTL_MS},
    "rs.q.ttl-short": {"x-message-ttl": SHORT_TTL_MS},
    "rs.q.expires": {"x-expires": LONG_TTL_MS},
    "rs.q.maxlen": {"x-max-length": 3},
    "rs.q.maxlen-head": {"x-max-length": 2, "x-overflow": "drop-head"},
    "rs.q.maxbytes-reject": {"x-max-length-bytes": 10, "x-overflow": "reject-publish"},
    "rs.q.dlx-reject": {
        "x-max-length": 1,
        "x-overflow": "reject-publish-dlx",
        "x-dead-letter-exchange": DLX,
        "x-dead-letter-routing-key": "overflow",
    },
    "rs.q.dl-src": {"x-dead-letter-exchange": DLX, "x-dead-letter-routing-key": "rejected"},
    "rs.q.ttl-dlx": {
        "x-message-ttl": 100,
        "x-dead-letter-exchange": DLX,
        "x-dead-letter-routing-key": "expired",
    },
    "rs.q.prio": {"x-max-priority": 10},
    "rs.q.classic": {"x-queue-type": "classic"},
    "rs.q.misc": {"x-queue-mode": "lazy", "x-single-active-consumer": True},
}
# A quorum queue (rabbitish runs it as a classic one). Left out of the kill -9 runs: after a
# crash RabbitMQ's quorum queue answers basic.get only once its log is replayed (541 until then).
QUORUM = {"rs.q.quorum": {"x-queue-type": "quorum"}}
AUTO_DELETE_QUEUE = "rs.q.autodel"
GONE_QUEUES = ("rs.q.exclusive", "rs.q.transient")
SERVER_NAMED = "<server-named>"

# Every field type, beyond the shared table: unsigned byte, unsigned short, unsigned int,
# nested tables and arrays in arrays, a decimal, a timestamp, a byte array.
PROPS_TABLE = wide_table(b"\1")
PROPS_BODY = bytes(range(256)) * 600  # several frames


@dataclass
class Context:
    """What populate leaves for observe: the server-chosen name, the raw message sent, and the
    connections kept open across the restart (unacked deliveries, an open transaction)."""

    queues: dict[str, dict[str, Any]] = field(default_factory=dict)  # durable: arguments
    server_named: str = ""
    props_header: bytes = b""
    expired_by: float = 0.0  # monotonic time by which the short TTLs have run out
    held: list[Any] = field(default_factory=list)

    def drop(self) -> None:
        for conn in self.held:
            with suppress(Exception):
                conn.close()
        self.held.clear()


def _publish(ch: Any, exchange: str, key: str, body: bytes, props: Any = P) -> str:
    """A confirmed publish; how the broker answered."""
    try:
        ch.basic_publish(exchange, key, body, props, mandatory=True)
    except pika.exceptions.NackError:
        return "nack"
    except pika.exceptions.UnroutableError:
        return "returned"
    return "ack"


def _barrier(ch: Any, queue: str) -> None:
    assert _publish(ch, "", queue, b"barrier") == "ack"


def populate(url: str, quorum: bool = True) -> tuple[Context, dict[str, Any]]:
    """Create the durable world; returns the context and the publish outcomes seen."""
    ctx = Context(queues={**QUEUES, **(QUORUM if quorum else {})})
    outcomes: dict[str, Any] = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ctx.held.append(conn)
    ch = conn.channel()
    ch.confirm_delivery()
    ch.exchange_declare(AE, "fanout", durable=True)
    ch.exchange_declare(DLX, "direct", durable=True)
    for type_ in EXCHANGE_TYPES:
        ch.exchange_declare(
            f"rs.x.{type_}", type_, durable=True, arguments={"alternate-exchange": AE}
        )
    ch.exchange_declare("rs.x.internal", "topic", durable=True, internal=True)
    ch.exchange_declare("rs.x.autodel", "direct", durable=True, auto_delete=True)
    ch.exchange_declare("rs.x.transient", "direct", durable=False)
    for name, args in ctx.queues.items():
        ch.queue_declare(name, durable=True, arguments=args)
    ch.queue_declare(AUTO_DELETE_QUEUE, durable=True, auto_delete=True)
    ch.queue_declare("rs.q.exclusive", durable=True, exclusive=True)
    ch.queue_declare("rs.q.transient", durable=False)
    ctx.server_named = ch.queue_declare("", durable=True).method.queue

    ch.queue_bind("rs.q.ae", AE)
    ch.queue_bind("rs.q.plain", "rs.x.direct", "plain")
    ch.queue_bind(ctx.server_named, "rs.x.direct", "server-named")
    ch.queue_bind("rs.q.fan", "rs.x.fanout")
    ch.queue_bind("rs.q.topic", "rs.x.topic", "a.*.c")
    ch.exchange_bind("rs.x.internal", "rs.x.topic", "e2e.#", arguments={"note": "e2e", "n": 7})
    ch.queue_bind("rs.q.e2e", "rs.x.internal", "e2e.*.x")
    ch.queue_bind("rs.q.hdr-all", "rs.x.headers", arguments={"x-match": "all", "a": 1, "b": "two"})
    ch.queue_bind("rs.q.hdr-any", "rs.x.headers", arguments={"x-match": "any", "a": 1, "c": "3"})
    ch.queue_bind("rs.q.hdr-typed", "rs.x.headers", arguments=TYPED_BINDING)
    ch.queue_bind("rs.q.plain", "rs.x.autodel", "ad")
    ch.queue_bind("rs.q.plain", "rs.x.transient", "tr")
    ch.queue_bind("rs.q.transient", "rs.x.direct", "plain")
    for key in ("rejected", "expired", "overflow"):
        target = {"rejected": "rs.q.dead", "expired": "rs.q.expired"}.get(key, "rs.q.dead-overflow")
        ch.queue_bind(target, DLX, key)

    # Messages: order with transient ones between, limits, priorities, every queue type.
    for i in range(12):
        _publish(ch, "", "rs.q.order", b"o%d" % i, P if i % 3 else T)
    for name in ("rs.q.ttl", "rs.q.expires", "rs.q.classic", "rs.q.misc", *QUORUM):
        if name not in ctx.queues:
            continue
        _publish(ch, "", name, name.encode())
    _publish(ch, "", ctx.server_named, b"server-named")
    _publish(ch, "", AUTO_DELETE_QUEUE, b"auto-delete")
    _publish(ch, "", "rs.q.transient", b"transient queue")
    for i in range(5):
        _publish(ch, "", "rs.q.maxlen", b"len%d" % i)
        _publish(ch, "", "rs.q.maxlen-head", b"head%d" % i)
    outcomes["maxbytes"] = [
        _publish(ch, "", "rs.q.maxbytes-reject", body) for body in (b"12345", b"67890", b"x")
    ]
    outcomes["dlx-reject"] = [_publish(ch, "", "rs.q.dlx-reject", b"dr%d" % i) for i in range(2)]
    for prio, body in ((1, b"p1"), (5, b"p5a"), (3, b"p3"), (9, b"p9"), (0, b"p0"), (5, b"p5b")):
        _publish(ch, "", "rs.q.prio", body, pika.BasicProperties(delivery_mode=2, priority=prio))
    _publish(ch, "", "rs.q.prio", b"pnone")

    with RawClient(url).open() as raw:  # every property and field type, sent as raw frames
        raw.open_channel(1)
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        ctx.props_header = content_header(len(PROPS_BODY), PROPS_TABLE)
        raw_publish(raw, "", "rs.q.props", ctx.props_header, PROPS_BODY)

    # Dead-lettering: rejected, expired, overflowed; each arrival waited for, then a barrier.
    _publish(ch, "", "rs.q.dl-src", b"to reject")
    _publish(ch, "", "rs.q.dl-src", b"stays")
    method, _, _ = ch.basic_get("rs.q.dl-src", auto_ack=False)
    ch.basic_reject(method.delivery_tag, requeue=False)
    _publish(ch, "", "rs.q.ttl-dlx", b"to expire")
    wait_until(lambda: message_count(conn, "rs.q.dead") == 1, timeout=10)
    wait_until(lambda: message_count(conn, "rs.q.expired") == 1, timeout=10)
    wait_until(lambda: message_count(conn, "rs.q.dead-overflow") == 1, timeout=10)
    for name in ("rs.q.dl-src", "rs.q.dead", "rs.q.expired", "rs.q.dead-overflow"):
        _barrier(ch, name)

    # Unacked deliveries held across the restart (one of three acked), then a barrier.
    for i in range(6):
        _publish(ch, "", "rs.q.unacked", b"u%d" % i)
    holder = pika.BlockingConnection(pika.URLParameters(url))
    ctx.held.append(holder)
    hch = holder.channel()
    tags = [hch.basic_get("rs.q.unacked", auto_ack=False)[0].delivery_tag for _ in range(3)]
    hch.basic_ack(tags[1])
    # Transactions: one committed, one left open (publishes and an ack) at the restart.
    _publish(ch, "", "rs.q.txack", b"t0")
    _publish(ch, "", "rs.q.txack", b"t1")
    tch = holder.channel()
    tch.tx_select()
    tch.basic_publish("", "rs.q.tx", b"committed-1", P)
    tch.basic_publish("", "rs.q.tx", b"committed-2", P)
    tch.tx_commit()
    tch.basic_publish("", "rs.q.tx", b"open-1", P)
    got = tch.basic_get("rs.q.txack", auto_ack=False)[0]
    tch.basic_ack(got.delivery_tag)
    for name in ("rs.q.unacked", "rs.q.tx", "rs.q.txack"):
        _barrier(ch, name)

    # Expiry counted across the restart: these run out while the broker is down.
    _publish(ch, "", "rs.q.msg-ttl", b"short", _expiring(SHORT_TTL_MS))
    _publish(ch, "", "rs.q.msg-ttl", b"long", _expiring(LONG_TTL_MS))
    _publish(ch, "", "rs.q.msg-ttl", b"no ttl")
    _publish(ch, "", "rs.q.ttl-short", b"queue ttl")
    ctx.expired_by = time.monotonic() + SHORT_TTL_MS / 1000 + 0.5
    return ctx, outcomes


def _expiring(ms: int) -> Any:
    return pika.BasicProperties(delivery_mode=2, expiration=str(ms))


# ---------------------------------------------------------------------- observing
def _attempt(conn: Any, ctx: Context, action: Any) -> Any:
    """Run `action(channel)` on a fresh channel: its result, or the (code, text) it closed
    the channel with (server-chosen names replaced)."""
    ch = conn.channel()
    try:
        result = action(ch)
    except pika.exceptions.ChannelClosedByBroker as err:
        return ["closed", err.reply_code, err.reply_text.replace(ctx.server_named, SERVER_NAMED)]
    with suppress(Exception):
        ch.close()
    return result if isinstance(result, bool | int | str | list) else "ok"


def _props(props: Any) -> dict[str, str]:
    """Decoded properties as comparable text; the time of each x-death entry is dropped."""
    found = {k: v for k, v in vars(props).items() if v is not None}
    headers = dict(found.get("headers") or {})
    if "x-death" in headers:
        headers["x-death"] = [
            {k: v for k, v in entry.items() if k != "time"} for entry in headers["x-death"]
        ]
    if headers:
        found["headers"] = headers
    return {k: repr(v) for k, v in sorted(found.items())}


def _drain(ch: Any, queue: str) -> list[list[Any]]:
    got = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append([body.decode(errors="replace"), method.redelivered, _props(props)])


def _queue_checks(conn: Any, ctx: Context) -> dict[str, Any]:
    """Passive declares, then each argument left out of a redeclare in turn (the broker names
    the first one that differs), and durable flipped."""
    found: dict[str, Any] = {}
    names = [*ctx.queues, AUTO_DELETE_QUEUE, *GONE_QUEUES, ctx.server_named]
    for name in names:
        label = SERVER_NAMED if name == ctx.server_named else name
        found[f"{label} passive"] = _attempt(
            conn, ctx, lambda ch, n=name: ch.queue_declare(n, passive=True).method.message_count
        )
    for name, args in ctx.queues.items():
        found[f"{name} same"] = _attempt(
            conn,
            ctx,
            lambda ch, n=name, a=args: bool(ch.queue_declare(n, durable=True, arguments=a)),
        )
        for key in args:
            rest = {k: v for k, v in args.items() if k != key}
            found[f"{name} without {key}"] = _attempt(
                conn, ctx, lambda ch, n=name, a=rest: ch.queue_declare(n, durable=True, arguments=a)
            )
    found["rs.q.plain transient"] = _attempt(
        conn, ctx, lambda ch: ch.queue_declare("rs.q.plain", durable=False)
    )
    found["autodel flipped"] = _attempt(
        conn, ctx, lambda ch: ch.queue_declare(AUTO_DELETE_QUEUE, durable=True)
    )
    return found


def _exchange_checks(conn: Any, ctx: Context) -> dict[str, Any]:
    found: dict[str, Any] = {}
    ae = {"alternate-exchange": AE}
    for type_ in EXCHANGE_TYPES:
        name = f"rs.x.{type_}"
        other = "fanout" if type_ != "fanout" else "direct"
        found[f"{name} same"] = _attempt(
            conn,
            ctx,
            lambda ch, n=name, t=type_: bool(ch.exchange_declare(n, t, durable=True, arguments=ae)),
        )
        found[f"{name} type"] = _attempt(
            conn,
            ctx,
            lambda ch, n=name, t=other: ch.exchange_declare(n, t, durable=True, arguments=ae),
        )
        found[f"{name} no ae"] = _attempt(
            conn, ctx, lambda ch, n=name, t=type_: ch.exchange_declare(n, t, durable=True)
        )
    found["internal same"] = _attempt(
        conn,
        ctx,
        lambda ch: bool(ch.exchange_declare("rs.x.internal", "topic", durable=True, internal=True)),
    )
    found["internal flipped"] = _attempt(
        conn, ctx, lambda ch: ch.exchange_declare("rs.x.internal", "topic", durable=True)
    )
    found["autodel flipped"] = _attempt(
        conn, ctx, lambda ch: ch.exchange_declare("rs.x.autodel", "direct", durable=True)
    )
    for name in (AE, DLX, "rs.x.autodel", "rs.x.transient"):
        found[f"{name} passive"] = _attempt(
            conn, ctx, lambda ch, n=name: bool(ch.exchange_declare(n, passive=True))
        )
    return found


# A headers binding whose arguments are of the types a table can hold beyond ints and strings.
TYPED_HEADERS = {
    "bin": b"\x00\xff",
    "dec": decimal.Decimal("2.50"),
    "when": datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    "list": [1, "two", None],
    "nested": {"flag": True},
}
TYPED_BINDING = {"x-match": "all", **TYPED_HEADERS}

PROBES: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("rs.x.direct", "plain", None),
    ("rs.x.direct", "server-named", None),
    ("rs.x.direct", "nowhere", None),
    ("rs.x.fanout", "any", None),
    ("rs.x.topic", "a.b.c", None),
    ("rs.x.topic", "e2e.a.x", None),
    ("rs.x.topic", "zzz", None),
    ("rs.x.headers", "", {"a": 1, "b": "two"}),
    ("rs.x.headers", "", {"c": "3"}),
    ("rs.x.headers", "", {"d": 4}),
    ("rs.x.headers", "", TYPED_HEADERS),
    ("rs.x.autodel", "ad", None),
    ("rs.x.internal", "e2e.a.x", None),
    ("rs.x.transient", "tr", None),
    (DLX, "rejected", None),
)


def _routing(conn: Any, ctx: Context) -> dict[str, Any]:
    """Publish one probe per route, then see which queue holds which probe."""
    found: dict[str, Any] = {}
    for i, (exchange, key, headers) in enumerate(PROBES):
        props = pika.BasicProperties(delivery_mode=1, headers=headers)

        def send(ch: Any, e: str = exchange, k: str = key, p: Any = props, n: int = i) -> str:
            ch.confirm_delivery()
            return _publish(ch, e, k, b"probe-%d" % n, p)

        found[f"probe-{i} {exchange} {key} {headers}"] = _attempt(conn, ctx, send)
    ch = conn.channel()
    for name in [*ctx.queues, ctx.server_named]:
        label = SERVER_NAMED if name == ctx.server_named else name
        probes = [body for body, _, _ in _drain(ch, name)]
        if probes:
            found[f"into {label}"] = probes
    # The recovered binding is found by the arguments it was made with.
    ch.queue_unbind("rs.q.hdr-typed", "rs.x.headers", arguments=TYPED_BINDING)
    ch.confirm_delivery()
    props = pika.BasicProperties(headers=TYPED_HEADERS)
    found["typed after unbind"] = _publish(ch, "rs.x.headers", "", b"after unbind", props)
    found["into rs.q.hdr-typed after unbind"] = len(_drain(ch, "rs.q.hdr-typed"))
    ch.close()
    return found


def observe(url: str, ctx: Context) -> dict[str, Any]:
    """Everything the restart left, as data: queue contents in order (body, redelivered flag,
    properties), the raw message compared byte for byte, then declares and routes."""
    result: dict[str, Any] = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        with RawClient(url).open() as raw:
            raw.open_channel(1)
            _, header, body = raw_get(raw, "rs.q.props")
            result["props raw"] = {
                "header identical": header == ctx.props_header,
                "body identical": body == PROPS_BODY,
            }
        ch = conn.channel()
        contents = {}
        for name in [*ctx.queues, AUTO_DELETE_QUEUE, ctx.server_named]:
            label = SERVER_NAMED if name == ctx.server_named else name
            contents[label] = _drain(ch, name)
        ch.close()
        result["contents"] = contents
        result["queues"] = _queue_checks(conn, ctx)
        result["exchanges"] = _exchange_checks(conn, ctx)
        result["routing"] = _routing(conn, ctx)
    finally:
        with suppress(Exception):
            conn.close()
    return result


__all__ = ["Context", "observe", "populate"]
