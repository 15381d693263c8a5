"""Status check-back over TCP with aio-pika, on a broker with short check intervals: checks
arrive on x-check-queue after x-check-immunity, counted, until a decision; an unanswered
transaction is rolled back after half_check_max checks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import aio_pika
import pytest

from rabbitish.app import Broker
from rabbitish.testing import call_in_loop, running_broker

TXN_EXCHANGE = "amq.rabbitish.txn"
INTERVAL = 0.05
MAX_CHECKS = 3


@pytest.fixture(scope="module")
def checking_broker() -> Iterator[Broker]:
    with running_broker(half_check_interval=INTERVAL, half_check_max=MAX_CHECKS) as broker:
        yield broker


async def _channel(broker: Broker) -> tuple[aio_pika.abc.AbstractConnection, aio_pika.Channel]:
    conn = await aio_pika.connect(broker.url)
    return conn, await conn.channel(publisher_confirms=True)


def _half(body: bytes, txn: str, **headers: object) -> aio_pika.Message:
    return aio_pika.Message(
        body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, headers={"x-half-txn": txn, **headers}
    )


async def _decide(ch: aio_pika.Channel, txn: str, outcome: str) -> None:
    exchange = await ch.get_exchange(TXN_EXCHANGE)
    await exchange.publish(aio_pika.Message(b"", headers={"x-half-txn": txn}), outcome)


async def _job(ch: aio_pika.Channel, uid: str, immunity: float) -> tuple[Any, Any]:
    """A work queue holding one half message of `uid` checked on a check queue."""
    work = await ch.declare_queue(f"{uid}-work", exclusive=True)
    checks = await ch.declare_queue(f"{uid}-checks", exclusive=True)
    headers = {"x-check-queue": checks.name, "x-check-immunity": immunity}
    await ch.default_exchange.publish(_half(b"job", uid, **headers), work.name)
    return work, checks


async def test_checks_are_sent_until_a_decision(checking_broker, uid):
    conn, ch = await _channel(checking_broker)
    async with conn:
        work, checks = await _job(ch, uid, 0.1)
        seen: list[tuple[object, object, object, bytes]] = []
        async with checks.iterator() as stream:
            async for message in stream:
                await message.ack()
                seen.append(
                    (
                        message.headers["x-half-txn"],
                        message.headers["x-check-count"],
                        message.correlation_id,
                        message.body,
                    )
                )
                if len(seen) == 2:
                    await _decide(ch, uid, "commit")
                    break
        assert seen == [(uid, 1, uid, b""), (uid, 2, uid, b"")]
        got = await work.get(timeout=5)
        assert got.body == b"job"
        await got.ack()
        # Decided: no more checks, even after several intervals.
        await asyncio.sleep(INTERVAL * 4)
        assert await checks.get(fail=False) is None


async def test_an_unanswered_transaction_is_rolled_back_after_the_last_check(checking_broker, uid):
    conn, ch = await _channel(checking_broker)
    async with conn:
        work, checks = await _job(ch, uid, 0)
        vhost = checking_broker.node.vhosts["/"]
        deadline = asyncio.get_running_loop().time() + 5
        while call_in_loop(checking_broker, vhost.half.get, uid) is not None:
            assert asyncio.get_running_loop().time() < deadline, "never rolled back"
            await asyncio.sleep(INTERVAL)
        counts = []
        while (message := await checks.get(fail=False)) is not None:
            counts.append(message.headers["x-check-count"])
            await message.ack()
        assert counts == list(range(1, MAX_CHECKS + 1))
        assert await work.get(fail=False) is None
        exchange = await ch.get_exchange(TXN_EXCHANGE)
        # Rolled back: a late commit finds nothing (mandatory: returned).
        returned = asyncio.get_running_loop().create_future()
        ch.return_callbacks.add(lambda _ch, message: returned.set_result(message))
        await exchange.publish(
            aio_pika.Message(b"", headers={"x-half-txn": uid}), "commit", mandatory=True
        )
        assert (await asyncio.wait_for(returned, 5)).headers["x-half-txn"] == uid


async def test_no_check_queue_no_checks(checking_broker, uid):
    conn, ch = await _channel(checking_broker)
    async with conn:
        work = await ch.declare_queue(f"{uid}-work", exclusive=True)
        await ch.default_exchange.publish(_half(b"x", uid, **{"x-check-immunity": 0}), work.name)
        await asyncio.sleep(INTERVAL * (MAX_CHECKS + 3))
        vhost = checking_broker.node.vhosts["/"]
        view = call_in_loop(checking_broker, vhost.half.get, uid)
        assert view is not None and view.checks_sent == 0
        await _decide(ch, uid, "rollback")


async def test_aio_pika_confirms_and_commits_half_messages(broker_url, uid):
    conn = await aio_pika.connect(broker_url)
    async with conn:
        ch = await conn.channel(publisher_confirms=True)
        queue = await ch.declare_queue(uid, durable=True, auto_delete=True)
        for n in range(3):
            await ch.default_exchange.publish(_half(str(n).encode(), uid), uid)
        declared = await ch.declare_queue(uid, passive=True)
        assert declared.declaration_result.message_count == 0
        await _decide(ch, uid, "commit")
        got = []
        for _ in range(3):
            message = await queue.get(timeout=5)
            got.append(message.body)
            await message.ack()
        assert got == [b"0", b"1", b"2"]
