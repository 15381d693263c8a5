"""Dead-lettering: the x-death header exactly as RabbitMQ 3.10 writes it (fields, their order
and wire types, counts, record order, x-first-death-*), the reasons (rejected, expired, maxlen),
dead-letter routing keys and CC, and cycle detection. Every test runs against rabbitish and a
real RabbitMQ (`amqp_url`); only the time values are compared loosely."""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

RECORD_FIELDS = ["count", "reason", "queue", "time", "exchange", "routing-keys"]
SORTED_FIELDS = sorted(RECORD_FIELDS)


@contextmanager
def channel(url: str) -> Iterator[Any]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        yield ch
    finally:
        if conn.is_open:
            conn.close()


def get(ch: Any, queue: str, timeout: float = 5.0, ack: bool = True) -> tuple[Any, Any, bytes]:
    """The next message of a queue; dead-lettering is asynchronous in RabbitMQ."""
    deadline = time.monotonic() + timeout
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=ack)
        if method is not None:
            return method, props, body
        assert time.monotonic() < deadline, f"nothing arrived in {queue}"
        ch.connection.process_data_events(0.01)


def dlx_pair(ch: Any, uid: str, **arguments: Any) -> tuple[str, str]:
    """A source queue dead-lettering to a fanout exchange, and the queue bound to it."""
    dlx, source, target = uid + "-dlx", uid + "-src", uid + "-dead"
    ch.exchange_declare(dlx, "fanout", auto_delete=True)
    ch.queue_declare(target, exclusive=True)
    ch.queue_bind(target, dlx)
    ch.queue_declare(source, exclusive=True, arguments={"x-dead-letter-exchange": dlx, **arguments})
    return source, target


def check_time(value: Any) -> None:
    assert isinstance(value, datetime.datetime)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    stamp = (
        value.replace(tzinfo=None)
        if value.tzinfo is None
        else value.astimezone(datetime.UTC).replace(tzinfo=None)
    )
    assert abs((now - stamp).total_seconds()) < 60


def without_time(record: dict[str, Any]) -> dict[str, Any]:
    check_time(record["time"])
    return {k: v for k, v in record.items() if k != "time"}


# ---------------------------------------------------------------------- the first death
def test_rejected_message_gets_an_x_death_record(amqp_url, uid):
    with channel(amqp_url) as ch:
        source, target = dlx_pair(ch, uid)
        props = pika.BasicProperties(
            content_type="text/plain",
            headers={"zeta": 1, "Alpha": "a"},
            expiration="60000",
            priority=3,
            delivery_mode=2,
        )
        ch.basic_publish("", source, b"body", props)
        method, _props, _body = get(ch, source, ack=False)
        ch.basic_reject(method.delivery_tag, requeue=False)
        method, props, body = get(ch, target)
    assert (method.exchange, method.routing_key, body) == (uid + "-dlx", source, b"body")
    assert (props.content_type, props.priority, props.delivery_mode) == ("text/plain", 3, 2)
    assert props.expiration is None
    headers = props.headers
    # RabbitMQ leaves the table it edited sorted by key bytes
    assert list(headers) == [
        "Alpha",
        "x-death",
        "x-first-death-exchange",
        "x-first-death-queue",
        "x-first-death-reason",
        "zeta",
    ]
    assert (headers["zeta"], headers["Alpha"]) == (1, "a")
    assert headers["x-first-death-exchange"] == ""
    assert headers["x-first-death-queue"] == source
    assert headers["x-first-death-reason"] == "rejected"
    (record,) = headers["x-death"]
    assert list(record) == [*RECORD_FIELDS, "original-expiration"]
    assert without_time(record) == {
        "count": 1,
        "reason": "rejected",
        "queue": source,
        "exchange": "",
        "routing-keys": [source],
        "original-expiration": "60000",
    }
    assert type(record["count"]).__name__ == "long"  # pika's name for the 'l' field type


async def test_nacked_message_with_aio_pika(amqp_url, uid):
    conn = await aio_pika.connect(amqp_url)
    async with conn:
        ch = await conn.channel()
        dlx = await ch.declare_exchange(uid + "-dlx", aio_pika.ExchangeType.TOPIC, auto_delete=True)
        target = await ch.declare_queue(uid + "-dead", exclusive=True)
        await target.bind(dlx, routing_key="#")
        source = await ch.declare_queue(
            uid + "-src", exclusive=True, arguments={"x-dead-letter-exchange": dlx.name}
        )
        await ch.default_exchange.publish(aio_pika.Message(b"m"), routing_key=source.name)
        message = await source.get(timeout=5)
        await message.nack(requeue=False)
        dead = None
        deadline = time.monotonic() + 5
        while dead is None:
            assert time.monotonic() < deadline
            dead = await target.get(no_ack=True, fail=False)
        assert (dead.exchange, dead.routing_key) == (dlx.name, source.name)
        (record,) = dead.headers["x-death"]
        assert list(record) == RECORD_FIELDS
        assert without_time(record) == {
            "count": 1,
            "reason": "rejected",
            "queue": source.name,
            "exchange": "",
            "routing-keys": [source.name],
        }


def test_expired_by_queue_ttl_with_a_dead_letter_routing_key(amqp_url, uid):
    """The routing key replaces the message's keys and CC goes; x-death still lists them."""
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-dlx", "direct", auto_delete=True)
        ch.queue_declare(uid + "-dead", exclusive=True)
        ch.queue_bind(uid + "-dead", uid + "-dlx", "new-key")
        ch.queue_declare(
            uid + "-src",
            exclusive=True,
            arguments={
                "x-dead-letter-exchange": uid + "-dlx",
                "x-dead-letter-routing-key": "new-key",
                "x-message-ttl": 20,
            },
        )
        ch.queue_bind(uid + "-src", "amq.direct", uid + "-k1")
        ch.queue_bind(uid + "-src", "amq.direct", uid + "-k2")
        props = pika.BasicProperties(headers={"CC": [uid + "-k2", "other"], "b": True})
        ch.basic_publish("amq.direct", uid + "-k1", b"m", props)
        method, props, _body = get(ch, uid + "-dead")
    assert (method.exchange, method.routing_key) == (uid + "-dlx", "new-key")
    assert list(props.headers) == [
        "b",
        "x-death",
        "x-first-death-exchange",
        "x-first-death-queue",
        "x-first-death-reason",
    ]
    (record,) = props.headers["x-death"]
    assert without_time(record) == {
        "count": 1,
        "reason": "expired",
        "queue": uid + "-src",
        "exchange": "amq.direct",
        "routing-keys": [uid + "-k1", uid + "-k2", "other"],
    }


def test_without_a_routing_key_cc_is_kept_and_routes_again(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-dlx", "direct", auto_delete=True)
        for key in ("a", "b"):
            ch.queue_declare(f"{uid}-{key}", exclusive=True)
            ch.queue_bind(f"{uid}-{key}", uid + "-dlx", key)
        ch.queue_declare(
            uid + "-src", exclusive=True, arguments={"x-dead-letter-exchange": uid + "-dlx"}
        )
        ch.queue_bind(uid + "-src", "amq.direct", "a")
        ch.basic_publish("amq.direct", "a", b"m", pika.BasicProperties(headers={"CC": ["b"]}))
        method, _props, _body = get(ch, uid + "-src", ack=False)
        ch.basic_nack(method.delivery_tag, requeue=False)
        for key in ("a", "b"):
            method, props, _body = get(ch, f"{uid}-{key}")
            assert method.routing_key == "a"
            assert props.headers["CC"] == ["b"]
            assert props.headers["x-death"][0]["routing-keys"] == ["a", "b"]


def test_expired_per_message(amqp_url, uid):
    with channel(amqp_url) as ch:
        source, target = dlx_pair(ch, uid)
        ch.basic_publish("", source, b"m", pika.BasicProperties(expiration="00020"))
        _method, props, _body = get(ch, target)
    assert props.expiration is None
    (record,) = props.headers["x-death"]
    assert list(record) == [*RECORD_FIELDS, "original-expiration"]
    assert without_time(record) == {
        "count": 1,
        "reason": "expired",
        "queue": source,
        "exchange": "",
        "routing-keys": [source],
        "original-expiration": "00020",
    }
    assert props.headers["x-first-death-reason"] == "expired"


def test_max_length_drop_head_dead_letters_the_oldest(amqp_url, uid):
    with channel(amqp_url) as ch:
        source, target = dlx_pair(ch, uid, **{"x-max-length": 1})
        ch.basic_publish("", source, b"old")
        ch.basic_publish("", source, b"new")
        _method, props, body = get(ch, target)
        assert body == b"old"
        assert props.headers["x-death"][0]["reason"] == "maxlen"
        assert props.headers["x-first-death-reason"] == "maxlen"
        assert get(ch, source)[2] == b"new"


def test_reject_publish_dlx_nacks_and_dead_letters(amqp_url, uid):
    with channel(amqp_url) as ch:
        source, target = dlx_pair(
            ch, uid, **{"x-max-length": 1, "x-overflow": "reject-publish-dlx"}
        )
        ch.basic_publish("", source, b"kept")
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("", source, b"refused")
        _method, props, body = get(ch, target)
        assert body == b"refused"
        (record,) = props.headers["x-death"]
        assert without_time(record) == {
            "count": 1,
            "reason": "maxlen",
            "queue": source,
            "exchange": "",
            "routing-keys": [source],
        }
        assert get(ch, source)[2] == b"kept"


def test_dead_letter_to_the_default_exchange(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid + "-dead", exclusive=True)
        ch.queue_declare(
            uid + "-src",
            exclusive=True,
            arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": uid + "-dead"},
        )
        ch.basic_publish("", uid + "-src", b"m")
        method, _props, _body = get(ch, uid + "-src", ack=False)
        ch.basic_reject(method.delivery_tag, requeue=False)
        method, props, _body = get(ch, uid + "-dead")
        assert (method.exchange, method.routing_key) == ("", uid + "-dead")
        assert props.headers["x-death"][0]["queue"] == uid + "-src"


def test_missing_dead_letter_exchange_drops_the_message(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.queue_declare(uid, exclusive=True, arguments={"x-dead-letter-exchange": uid + "-none"})
        ch.basic_publish("", uid, b"m")
        method, _props, _body = get(ch, uid, ack=False)
        ch.basic_reject(method.delivery_tag, requeue=False)
        assert ch.queue_declare(uid, passive=True).method.message_count == 0
        assert ch.basic_get(uid)[0] is None


# ---------------------------------------------------------------------- repeated deaths
def test_counts_and_record_order_around_a_ring_of_queues(amqp_url, uid):
    """Three queues dead-lettering into each other by rejection: the record for the queue a
    message just died in comes first; existing records are regrouped (reversed) once there
    are two or more; the first record keeps RabbitMQ's field order, the rest are sorted."""
    queues = [f"{uid}-q{i}" for i in range(3)]
    exchanges = [f"{uid}-x{i}" for i in range(3)]
    with channel(amqp_url) as ch:
        for exchange in exchanges:
            ch.exchange_declare(exchange, "fanout", auto_delete=True)
        for i, queue in enumerate(queues):
            dlx = exchanges[(i + 1) % 3]
            ch.queue_declare(queue, exclusive=True, arguments={"x-dead-letter-exchange": dlx})
            ch.queue_bind(queue, exchanges[i])
        ch.basic_publish("", queues[0], b"m", pika.BasicProperties(headers={"h": 1}))
        seen = []
        for step in range(7):
            method, props, _body = get(ch, queues[step % 3], ack=False)
            deaths = (props.headers or {}).get("x-death", [])
            seen.append(
                [(d["queue"][len(uid) + 1 :], d["count"], list(d) == SORTED_FIELDS) for d in deaths]
            )
            if deaths:
                assert props.headers["x-first-death-queue"] == queues[0]
                assert props.headers["x-first-death-exchange"] == ""
            ch.basic_reject(method.delivery_tag, requeue=False)
    assert seen == [
        [],
        [("q0", 1, False)],
        [("q1", 1, True), ("q0", 1, False)],
        [("q2", 1, True), ("q0", 1, False), ("q1", 1, True)],
        [("q0", 2, True), ("q1", 1, True), ("q2", 1, True)],
        [("q1", 2, True), ("q2", 1, True), ("q0", 2, True)],
        [("q2", 2, True), ("q0", 2, True), ("q1", 2, True)],
    ]


def test_rejection_loops_are_allowed_and_counted(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-dlx", "fanout", auto_delete=True)
        ch.queue_declare(uid, exclusive=True, arguments={"x-dead-letter-exchange": uid + "-dlx"})
        ch.queue_bind(uid, uid + "-dlx")
        ch.basic_publish("", uid, b"m")
        counts = []
        for _ in range(3):
            method, props, _body = get(ch, uid, ack=False)
            counts.append([d["count"] for d in (props.headers or {}).get("x-death", [])])
            ch.basic_reject(method.delivery_tag, requeue=False)
        assert counts == [[], [1], [2]]


def test_automatic_cycles_are_dropped(amqp_url, uid):
    """A message expiring in a queue that dead-letters back into itself is not re-queued
    there; other queues bound to the dead-letter exchange still get it, once."""
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-dlx", "fanout", auto_delete=True)
        ch.queue_declare(
            uid,
            exclusive=True,
            arguments={"x-dead-letter-exchange": uid + "-dlx", "x-message-ttl": 20},
        )
        ch.queue_declare(uid + "-other", exclusive=True)
        ch.queue_bind(uid, uid + "-dlx")
        ch.queue_bind(uid + "-other", uid + "-dlx")
        ch.basic_publish("", uid, b"m")
        _method, props, _body = get(ch, uid + "-other")
        assert [d["queue"] for d in props.headers["x-death"]] == [uid]
        time.sleep(0.15)  # 7x the TTL: a copy re-queued in the source would have died again
        assert ch.basic_get(uid + "-other")[0] is None
        assert ch.queue_declare(uid, passive=True).method.message_count == 0


def test_a_rejection_in_the_loop_lets_the_message_go_round(amqp_url, uid):
    """Expired in q1 -> q2, rejected in q2 -> q1, expired in q1 again -> q2: not a cycle of
    automatic deaths, so it is delivered and the q1 record counts 2."""
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "-x1", "fanout", auto_delete=True)
        ch.exchange_declare(uid + "-x2", "fanout", auto_delete=True)
        ch.queue_declare(
            uid + "-q1",
            exclusive=True,
            arguments={"x-dead-letter-exchange": uid + "-x2", "x-message-ttl": 20},
        )
        ch.queue_declare(
            uid + "-q2", exclusive=True, arguments={"x-dead-letter-exchange": uid + "-x1"}
        )
        ch.queue_bind(uid + "-q1", uid + "-x1")
        ch.queue_bind(uid + "-q2", uid + "-x2")
        ch.basic_publish("", uid + "-q1", b"m")
        method, _props, _body = get(ch, uid + "-q2", ack=False)
        ch.basic_reject(method.delivery_tag, requeue=False)
        method, props, _body = get(ch, uid + "-q2")
        deaths = [(d["queue"], d["reason"], d["count"]) for d in props.headers["x-death"]]
        assert deaths == [(uid + "-q1", "expired", 2), (uid + "-q2", "rejected", 1)]


async def test_x_death_as_aiormq_decodes_it(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.exchange_declare(uid + "-dlx", exchange_type="fanout", auto_delete=True)
        await ch.queue_declare(uid + "-dead", exclusive=True)
        await ch.queue_bind(uid + "-dead", uid + "-dlx")
        args = {"x-dead-letter-exchange": uid + "-dlx", "x-max-length": 0}
        await ch.queue_declare(uid + "-src", exclusive=True, arguments=args)
        props = aiormq.spec.Basic.Properties(headers={"n": 5}, expiration="9000")
        await ch.basic_publish(b"m", routing_key=uid + "-src", properties=props)
        deadline = time.monotonic() + 5
        while True:
            got = await ch.basic_get(uid + "-dead", no_ack=True)
            if got.body:
                break
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        headers = got.header.properties.headers
        assert got.header.properties.expiration is None
        assert list(headers) == [
            "n",
            "x-death",
            "x-first-death-exchange",
            "x-first-death-queue",
            "x-first-death-reason",
        ]
        (record,) = headers["x-death"]
        assert list(record) == [*RECORD_FIELDS, "original-expiration"]
        assert without_time(record) == {
            "count": 1,
            "reason": "maxlen",
            "queue": uid + "-src",
            "exchange": "",
            "routing-keys": [uid + "-src"],
            "original-expiration": "9000",
        }
    finally:
        await conn.close()
