"""rabbitish.transactional.TransactionProducer (pika) over TCP: the seed's flow with COMMIT,
ROLLBACK and UNKNOWN (resolved by the checker through a status check), a producer that dies
after step 2 resolved by a new instance's checker, and the refusals (no queue reached, a local
transaction that raises)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pika
import pytest

from rabbitish.app import Broker
from rabbitish.testing import call_in_loop, running_broker
from rabbitish.transactional import (
    HalfTransactionError,
    LocalTransactionState,
    TransactionProducer,
)
from tests.support.clients import pika_channel
from tests.support.waiting import wait_until

COMMIT, ROLLBACK, UNKNOWN = (
    LocalTransactionState.COMMIT,
    LocalTransactionState.ROLLBACK,
    LocalTransactionState.UNKNOWN,
)
INTERVAL = 0.05  # seconds between status checks
IMMUNITY = 0.1  # seconds before the first check


class ProducerDied(Exception):
    """Stands for a producer process that stops between steps 2 and 4."""


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with running_broker(half_check_interval=INTERVAL, half_check_max=200) as running:
        yield running


@pytest.fixture
def channel(broker) -> Iterator[Any]:
    with pika_channel(broker.url) as ch:
        yield ch


def held(broker: Broker, txn_id: str) -> Any:
    """The broker's view of an undecided ID (None once decided)."""
    return call_in_loop(broker, broker.node.vhosts["/"].half.get, txn_id)


def bodies_of(channel: Any, queue: str) -> list[bytes]:
    found = []
    while (got := channel.basic_get(queue, auto_ack=True))[0] is not None:
        found.append(got[2])
    return found


def test_commit_makes_the_message_visible(broker, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    seen: list[tuple[str, bytes, Any]] = []

    def local(txn_id: str, body: bytes) -> LocalTransactionState:
        seen.append((txn_id, body, channel.queue_declare(uid, passive=True).method.message_count))
        return COMMIT

    with TransactionProducer(broker.url, f"{uid}-checks") as producer:
        result = producer.send("", uid, b"order-1", local)
    assert result.state is COMMIT and len(result.txn_id) == 32
    assert seen == [(result.txn_id, b"order-1", 0)]  # held, invisible, while the local work ran
    _method, props, body = channel.basic_get(uid, auto_ack=True)
    assert body == b"order-1" and props.delivery_mode == 2
    assert props.headers["x-half-txn"] == result.txn_id
    assert props.headers["x-check-queue"] == f"{uid}-checks"
    assert held(broker, result.txn_id) is None
    channel.queue_delete(f"{uid}-checks")


def test_rollback_discards_every_message_of_the_id(broker, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    with TransactionProducer(broker.url, f"{uid}-checks") as producer:
        result = producer.send("", uid, [b"a", b"b"], lambda _id, _body: ROLLBACK)
        kept = producer.send("", uid, [b"c", b"d"], lambda _id, _body: "commit")
    assert (result.state, kept.state) == (ROLLBACK, COMMIT)
    assert held(broker, result.txn_id) is None
    assert bodies_of(channel, uid) == [b"c", b"d"]
    channel.queue_delete(f"{uid}-checks")


def test_unknown_is_resolved_by_the_checker(broker, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    ledger: dict[str, LocalTransactionState] = {}
    asked: list[str] = []

    def checker(txn_id: str) -> LocalTransactionState:
        asked.append(txn_id)
        return ledger.get(txn_id, UNKNOWN)

    with TransactionProducer(
        broker.url, f"{uid}-checks", checker=checker, check_immunity=IMMUNITY
    ) as producer:
        result = producer.send("", uid, b"maybe", lambda _id, _body: UNKNOWN)
        assert result.state is UNKNOWN
        view = held(broker, result.txn_id)
        assert view is not None and view.messages == 1 and view.check_queue == f"{uid}-checks"
        wait_until(lambda: asked, message="no status check arrived")  # asked: still UNKNOWN
        assert bodies_of(channel, uid) == []
        ledger[result.txn_id] = COMMIT  # the local transaction's outcome becomes known
        wait_until(lambda: held(broker, result.txn_id) is None, message="check never resolved")
    assert set(asked) == {result.txn_id}
    assert bodies_of(channel, uid) == [b"maybe"]
    channel.queue_delete(f"{uid}-checks")


@pytest.mark.parametrize("outcome", [COMMIT, ROLLBACK])
def test_a_producer_that_dies_after_step_2_is_resolved_by_the_next_ones_checker(
    broker, channel, uid, outcome
):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    ledger: dict[str, LocalTransactionState] = {}  # the local database both instances share
    first = TransactionProducer(broker.url, f"{uid}-checks", check_immunity=IMMUNITY)

    def local(txn_id: str, body: bytes) -> LocalTransactionState:
        ledger[txn_id] = outcome  # step 3 done locally ...
        raise ProducerDied  # ... and the process is gone before step 4

    with pytest.raises(ProducerDied):
        first.send("", uid, b"order", local)
    first.connection.close()  # nothing decided: the ID stays held
    [txn_id] = ledger
    assert held(broker, txn_id) is not None
    with TransactionProducer(broker.url, f"{uid}-checks", checker=ledger.get):
        wait_until(lambda: held(broker, txn_id) is None, message="the check never resolved it")
    assert bodies_of(channel, uid) == ([b"order"] if outcome is COMMIT else [])
    channel.queue_delete(f"{uid}-checks")


def test_a_half_message_that_reaches_no_queue_runs_no_local_transaction(broker, uid):
    ran: list[str] = []
    with TransactionProducer(broker.url, f"{uid}-checks") as producer:
        with pytest.raises(HalfTransactionError, match="reached no queue"):
            producer.send("", f"{uid}-missing", b"x", lambda i, _b: ran.append(i) or COMMIT)
        producer.channel.queue_delete(f"{uid}-checks")
    assert ran == []


def test_a_late_decision_for_an_id_the_broker_dropped_raises(broker, channel, uid):
    with TransactionProducer(broker.url, f"{uid}-checks") as producer:
        producer.decide("never-held", ROLLBACK, mandatory=False)  # dropped quietly
        with pytest.raises(HalfTransactionError, match="holds no half transaction"):
            producer.decide("never-held", COMMIT)
        assert producer.channel.is_open
    channel.queue_delete(f"{uid}-checks")


def test_properties_and_headers_are_kept(broker, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    props = pika.BasicProperties(content_type="text/plain", headers={"order": 7})
    with TransactionProducer(broker.url, f"{uid}-checks") as producer:
        result = producer.send("", uid, b"x", lambda _i, _b: COMMIT, props)
    _method, got, _body = channel.basic_get(uid, auto_ack=True)
    assert got.content_type == "text/plain"
    assert got.headers == {
        "order": 7,
        "x-half-txn": result.txn_id,
        "x-check-queue": f"{uid}-checks",
    }
    assert props.headers == {"order": 7}  # the caller's properties are not changed
    channel.queue_delete(f"{uid}-checks")
