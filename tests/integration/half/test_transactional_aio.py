"""rabbitish.transactional.AsyncTransactionProducer (aio-pika) over TCP: COMMIT, ROLLBACK and
UNKNOWN resolved by the checker, coroutine callbacks, and a producer that dies after step 2
resolved by a new instance's checker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aio_pika
import pytest

from rabbitish.app import Broker
from rabbitish.testing import call_in_loop, running_broker
from rabbitish.transactional import (
    AsyncTransactionProducer,
    HalfTransactionError,
    LocalTransactionState,
)
from tests.support.waiting import wait_until_async

COMMIT, ROLLBACK, UNKNOWN = (
    LocalTransactionState.COMMIT,
    LocalTransactionState.ROLLBACK,
    LocalTransactionState.UNKNOWN,
)
INTERVAL = 0.05
IMMUNITY = 0.1


class ProducerDied(Exception):
    """Stands for a producer process that stops between steps 2 and 4."""


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with running_broker(half_check_interval=INTERVAL, half_check_max=200) as running:
        yield running


def held(broker: Broker, txn_id: str) -> Any:
    return call_in_loop(broker, broker.node.vhosts["/"].half.get, txn_id)


async def drain(queue: aio_pika.abc.AbstractQueue) -> list[bytes]:
    found = []
    while (message := await queue.get(fail=False, no_ack=True)) is not None:
        found.append(message.body)
    return found


async def test_commit_rollback_and_coroutine_callbacks(broker, uid):
    async with await aio_pika.connect(broker.url) as conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid, durable=True, auto_delete=True)

        visible: list[int] = []

        async def local(txn_id: str, body: bytes) -> LocalTransactionState:
            declared = await ch.declare_queue(uid, passive=True)
            visible.append(declared.declaration_result.message_count)
            return COMMIT if body == [b"a", b"b"] else ROLLBACK

        async with AsyncTransactionProducer(conn, f"{uid}-checks") as producer:
            committed = await producer.send("", uid, [b"a", b"b"], local)
            dropped = await producer.send("", uid, b"c", local, {"content_type": "text/plain"})
        assert (committed.state, dropped.state) == (COMMIT, ROLLBACK)
        assert visible == [0, 2]  # each ID's messages held while its local transaction ran
        assert held(broker, committed.txn_id) is None and held(broker, dropped.txn_id) is None
        message = await queue.get(no_ack=True)
        assert message.body == b"a" and message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        assert message.headers["x-half-txn"] == committed.txn_id
        assert await drain(queue) == [b"b"]
        assert not conn.is_closed  # a connection given to the producer stays open
        await ch.queue_delete(f"{uid}-checks")


async def test_unknown_is_resolved_by_the_checker(broker, uid):
    ledger: dict[str, LocalTransactionState] = {}
    asked: list[str] = []

    async def checker(txn_id: str) -> LocalTransactionState:
        asked.append(txn_id)
        return ledger.get(txn_id, UNKNOWN)

    producer = AsyncTransactionProducer(
        broker.url, f"{uid}-checks", checker=checker, check_immunity=IMMUNITY
    )
    async with producer:
        assert producer.channel is not None
        queue = await producer.channel.declare_queue(uid, durable=True, auto_delete=True)
        result = await producer.send("", uid, b"maybe", lambda _id, _body: UNKNOWN)
        assert result.state is UNKNOWN and held(broker, result.txn_id).messages == 1
        await wait_until_async(lambda: asked, message="no status check arrived")
        assert await drain(queue) == []
        ledger[result.txn_id] = COMMIT
        await wait_until_async(lambda: held(broker, result.txn_id) is None)
        assert set(asked) == {result.txn_id}
        assert await drain(queue) == [b"maybe"]
        await producer.channel.queue_delete(f"{uid}-checks")


@pytest.mark.parametrize("outcome", [COMMIT, ROLLBACK])
async def test_a_producer_that_dies_after_step_2_is_resolved_by_the_next_ones_checker(
    broker, uid, outcome
):
    ledger: dict[str, LocalTransactionState] = {}
    first = AsyncTransactionProducer(broker.url, f"{uid}-checks", check_immunity=IMMUNITY)
    await first.start()
    assert first.channel is not None and first.connection is not None
    await first.channel.declare_queue(uid, durable=True)

    def local(txn_id: str, body: bytes) -> LocalTransactionState:
        ledger[txn_id] = outcome
        raise ProducerDied

    with pytest.raises(ProducerDied):
        await first.send("", uid, b"order", local)
    await first.connection.close()  # gone without deciding
    [txn_id] = ledger
    assert held(broker, txn_id) is not None
    async with AsyncTransactionProducer(broker.url, f"{uid}-checks", checker=ledger.get) as new:
        await wait_until_async(lambda: held(broker, txn_id) is None, message="never resolved")
        assert new.channel is not None
        queue = await new.channel.declare_queue(uid, durable=True)
        assert await drain(queue) == ([b"order"] if outcome is COMMIT else [])
        await new.channel.queue_delete(uid)
        await new.channel.queue_delete(f"{uid}-checks")


async def test_no_queue_reached_and_late_decisions_raise(broker, uid):
    ran: list[str] = []
    async with AsyncTransactionProducer(broker.url, f"{uid}-checks") as producer:
        with pytest.raises(HalfTransactionError, match="reached no queue"):
            await producer.send("", f"{uid}-none", b"x", lambda i, _b: ran.append(i) or COMMIT)
        with pytest.raises(HalfTransactionError, match="holds no half transaction"):
            await producer.decide("never-held", COMMIT)
        assert producer.channel is not None
        await producer.channel.queue_delete(f"{uid}-checks")
    assert ran == []
