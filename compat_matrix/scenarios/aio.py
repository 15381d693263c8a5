"""Scenarios driven with aiormq (asyncio), the client underneath aio-pika."""

from __future__ import annotations

import asyncio

import aiormq
from aiormq.abc import DeliveredMessage

from compat_matrix.clients import attempt, connect, wait_for
from compat_matrix.registry import scenario
from compat_matrix.session import QUIET, Session


def _brief(message: DeliveredMessage) -> list[object]:
    return [message.body.decode(), message.redelivered]


@scenario("aio.consume.deliveries", "basic.consume")
async def consume_deliveries(s: Session) -> None:
    """An aiormq consumer gets its consume-ok and deliveries carrying its consumer tag."""
    conn = await connect(s)
    ch = await conn.channel()
    q = s.name("q")
    await ch.queue_declare(q)
    box: list[DeliveredMessage] = []

    async def on_message(message: DeliveredMessage) -> None:
        box.append(message)

    ok = await attempt(s, "consume", ch.basic_consume(q, on_message, no_ack=True))
    await ch.basic_publish(b"m", routing_key=q)
    await wait_for(s, box, 1)
    s.log("delivery tags", [m.consumer_tag == ok.consumer_tag for m in box])


@scenario("aio.get_ack_reject", "basic.get", "basic.ack", "basic.reject")
async def get_ack(s: Session) -> None:
    """basic.get with aiormq; reject with requeue marks the message redelivered."""
    conn = await connect(s)
    ch = await conn.channel()
    q = s.name("q")
    await ch.queue_declare(q)
    await ch.confirm_delivery()
    for body in (b"a", b"b"):
        await ch.basic_publish(body, routing_key=q)
    first = await ch.basic_get(q)
    s.log("first", [_brief(first), first.delivery.message_count])
    await ch.basic_reject(first.delivery_tag, requeue=True)
    again = await ch.basic_get(q)
    s.log("again", [_brief(again), again.delivery.message_count])
    await ch.basic_ack(again.delivery_tag)
    await attempt(s, "get last", ch.basic_get(q, no_ack=True))
    await attempt(s, "get empty", ch.basic_get(q, no_ack=True))


@scenario("aio.confirms.acks", "confirms")
async def confirm_acks(s: Session) -> None:
    """Every publish on a confirm channel is acked, routed or not."""
    conn = await connect(s)
    ch = await conn.channel()
    q = s.name("q")
    await ch.queue_declare(q)
    await attempt(s, "confirm.select", ch.confirm_delivery())
    for key in (q, s.name("nowhere"), q):
        confirmation = await ch.basic_publish(b"m", routing_key=key)
        s.log("confirmation", confirmation.name)


@scenario("aio.returns.mandatory", "returns", "confirms")
async def returned(s: Session) -> None:
    """A mandatory unroutable publish comes back as basic.return 312 NO_ROUTE."""
    conn = await connect(s)
    ch = await conn.channel(on_return_raises=True)
    await ch.confirm_delivery()
    key = s.name("nowhere")
    await attempt(s, "mandatory", ch.basic_publish(b"m", routing_key=key, mandatory=True))
    publish = ch.basic_publish(b"m", exchange="amq.direct", routing_key=key, mandatory=True)
    await attempt(s, "mandatory to amq.direct", publish)


@scenario("aio.exclusive_queue_other_connection", "queue.exclusive", "error.405")
async def exclusive_other(s: Session) -> None:
    """Another connection touching an exclusive queue gets 405 RESOURCE_LOCKED."""
    owner = await connect(s)
    q = s.name("q")
    await (await owner.channel()).queue_declare(q, exclusive=True)
    other = await connect(s)
    await attempt(s, "declare", (await other.channel()).queue_declare(q))
    await attempt(s, "consume", (await other.channel()).basic_consume(q, _ignore))
    await attempt(s, "get", (await other.channel()).basic_get(q))
    await attempt(s, "publish", (await other.channel()).basic_publish(b"m", routing_key=q))
    await attempt(s, "owner count", (await owner.channel()).queue_declare(q, passive=True))


async def _ignore(_message: DeliveredMessage) -> None:
    return None


@scenario("aio.qos.global_shared", "qos.global")
async def qos_global(s: Session) -> None:
    """qos(1, global) is one limit for all consumers of the channel."""
    conn = await connect(s)
    ch = await conn.channel()
    qa, qb = s.name("a"), s.name("b")
    for q in (qa, qb):
        await ch.queue_declare(q)
        for i in range(2):
            await ch.basic_publish(f"{q[-1]}{i}".encode(), routing_key=q)
    await attempt(s, "qos", ch.basic_qos(prefetch_count=1, global_=True))
    box: list[DeliveredMessage] = []

    async def on_message(message: DeliveredMessage) -> None:
        box.append(message)

    await ch.basic_consume(qa, on_message)
    await ch.basic_consume(qb, on_message)
    await wait_for(s, box, 1)
    await asyncio.sleep(QUIET)  # a window to show that no second delivery comes
    s.log("unacked deliveries", len(box))


@scenario("aio.cancel_notify", "basic.cancel", "queue.delete")
async def cancel_notify(s: Session) -> None:
    """The server's basic.cancel on queue deletion reaches an aiormq consumer."""
    conn = await connect(s)
    ch = await conn.channel()
    q = s.name("q")
    await ch.queue_declare(q)
    await ch.basic_consume(q, _ignore, consumer_tag="c1")
    other = await conn.channel()
    await attempt(s, "delete", other.queue_delete(q))
    box: list[str] = []
    for _ in range(100):
        if "c1" not in ch.consumers:
            box.append("cancelled")
            break
        await asyncio.sleep(0.01)
    s.log("consumer removed", box)


@scenario("aio.unknown_exchange_type", "exchange.declare", "error.503")
async def unknown_type(s: Session) -> None:
    """aiormq sees the 503 connection close for an unknown exchange type."""
    conn = await connect(s)
    ch = await conn.channel()
    await attempt(s, "declare", ch.exchange_declare(s.name("x"), exchange_type="x-nope"))
    s.log("connection closed", conn.is_closed)


@scenario("aio.passive_errors", "error.404", "queue.declare")
async def passive_errors(s: Session) -> None:
    """aiormq gets 404 for passive declares of missing queue and exchange."""
    conn = await connect(s)
    await attempt(s, "queue", (await conn.channel()).queue_declare(s.name("nope"), passive=True))
    await attempt(
        s, "exchange", (await conn.channel()).exchange_declare(s.name("nope"), passive=True)
    )
    s.log("connection open", not conn.is_closed)


@scenario("aio.header_field_types", "content.properties")
async def header_types(s: Session) -> None:
    """Header values as pamqp encodes them (floats, small integers) come back unchanged."""
    conn = await connect(s)
    ch = await conn.channel()
    q = s.name("q")
    await ch.queue_declare(q)
    await ch.confirm_delivery()
    headers = {"float": 1.5, "small": 5, "large": 70000, "neg": -3, "text": "t", "flag": True}
    props = aiormq.spec.Basic.Properties(headers=headers, message_id="fixed")
    await ch.basic_publish(b"m", routing_key=q, properties=props)
    got = await ch.basic_get(q, no_ack=True)
    delivered = got.header.properties.headers or {}
    s.log("headers", {k: [type(v).__name__, v] for k, v in sorted(delivered.items())})
