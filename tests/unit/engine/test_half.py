"""The half-transaction registry on a scheduler whose time the test moves: check-back timing,
counts and the rollback after the last check, decisions remembered up to a bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rabbitish.engine import half as half_module
from rabbitish.engine.delivery import Outcome
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.half import HalfSettings
from rabbitish.engine.message import Message
from rabbitish.engine.transactions import Transaction, TxState
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import CODEC, NO_PROPERTIES, Taker, bodies, message


class _Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SteppedScheduler:
    """Time stands still until `advance` moves it, firing the timers that fall due."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.timers: list[tuple[float, _Timer, Callable[[], None]]] = []

    def now(self) -> float:
        return self.time

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer()
        self.timers.append((self.time + delay, timer, callback))
        return timer

    def advance(self, seconds: float) -> None:
        end = self.time + seconds
        while True:
            due = sorted((t for t in self.timers if t[0] <= end), key=lambda t: t[0])
            if not due:
                break
            self.timers.remove(due[0])
            self.time = max(self.time, due[0][0])
            if not due[0][1].cancelled:
                due[0][2]()
        self.time = end


def _half(txn: str, **headers: Any) -> Message:
    raw = CODEC.encode(headers={"x-half-txn": txn, **headers})
    return Message("", "work", raw, b"job", CODEC)


@pytest.fixture
def clock() -> SteppedScheduler:
    return SteppedScheduler()


@pytest.fixture
def vhost(clock: SteppedScheduler) -> VirtualHost:
    vhost = VirtualHost("/", clock, half_settings=HalfSettings(check_interval=5, check_max=2))
    vhost.declare_queue("work", owner=None)
    vhost.declare_queue("checks", owner=None)
    return vhost


def _checks(vhost: VirtualHost) -> list[tuple[Any, Any, Any]]:
    got = []
    while (delivery := vhost.queues["checks"].get(settled=True)) is not None:
        message = delivery.entry.message
        fields = CODEC.to_fields(message.raw_properties)
        headers = fields["headers"]  # typed: FieldValue(kind, value)
        half_id, count = headers["x-half-txn"], headers["x-check-count"]
        assert half_id.kind == "longstr" and count.kind in ("long", "signedint")
        got.append((half_id.value.decode(), count.value, fields["correlation_id"]))
    return got


def test_checks_after_immunity_then_every_interval_then_rollback(vhost, clock):
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks", "x-check-immunity": 10}))
    work = vhost.queues["work"]
    assert (work.message_count, work.half) == (0, 1)
    clock.advance(9.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 1, "T")]
    clock.advance(4.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 2, "T")]
    assert vhost.half.get("T").checks_sent == 2
    clock.advance(5)  # the last check went unanswered: rolled back
    assert _checks(vhost) == [] and vhost.half.list() == []
    assert (work.message_count, work.half) == (0, 0)
    assert vhost.half.decide("T", False) is True  # the same decision again: a no-op
    assert vhost.half.decide("T", True) is False


def test_default_immunity_is_sixty_seconds_and_a_decision_stops_the_checks(vhost, clock):
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks"}))
    clock.advance(59.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 1, "T")]
    assert vhost.half.decide("T", True) is True
    clock.advance(60)
    assert _checks(vhost) == []
    assert vhost.queues["work"].message_count == 1


def test_a_check_queue_named_later_starts_the_timer_from_the_first_message(vhost, clock):
    vhost.publish("", "work", _half("T"))
    clock.advance(30)
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks", "x-check-immunity": 20}))
    assert vhost.half.get("T").messages == 2
    clock.advance(0)  # 30 s since the first message already exceed the immunity
    assert _checks(vhost) == [("T", 1, "T")]


def test_decisions_are_remembered_up_to_a_bound(vhost, monkeypatch):
    monkeypatch.setattr(half_module, "DECIDED_KEEP", 2)
    for txn in ("a", "b", "c"):
        vhost.publish("", "work", _half(txn))
        assert vhost.half.decide(txn, True)
    assert list(vhost.half.decided) == ["b", "c"]
    assert vhost.half.decide("a", True) is False
    assert vhost.half.decide("c", True) is True


# ---------------------------------------------------------------------- prepared transactions
def _prepared(vhost: VirtualHost, txn_id: str, outcome: Outcome = Outcome.ACK, **kwargs: Any):
    """Two messages on `work`: the first delivered to a consumer and settled with `outcome`
    in a transaction that also publishes `out`, prepared as `txn_id`."""
    work = vhost.queues["work"]
    for body in (b"m1", b"m2"):
        vhost.publish("", "work", message(body, "work"))
    consumer = Taker(work, prefetch=1)
    work.add_consumer(consumer)
    [first] = consumer.deliveries
    tx = Transaction("tx-1", None, 0.0, None)
    vhost.publish("", "work", message(b"out", "work"), tx=tx)
    tx.stage_settle([first], outcome)
    prepared = vhost.half.prepare(txn_id, tx, **kwargs)
    return work, consumer, first, tx, prepared


def test_prepare_locks_settled_deliveries_and_frees_their_consumer(vhost):
    work, consumer, first, tx, prepared = _prepared(vhost, "P")
    assert tx.state is TxState.PREPARED and tx.publishes == [] and tx.settlements == []
    assert prepared.locked == [first] and first.consumer is None
    work.dispatch()  # as a front end does for the deliveries a prepare locked
    assert (work.prepared, work.unacked, work.half) == (1, 1, 1)  # m2 went to the consumer
    assert [d.entry.message.body for d in consumer.deliveries] == [b"m1", b"m2"]
    [view] = vhost.half.list()
    assert (view.id, view.messages, view.acks, view.prepared) == ("P", 1, 1, True)
    with pytest.raises(AMQPError, match="already held"):
        vhost.half.prepare("P", Transaction("tx-2", None, 0.0, None))
    with pytest.raises(AMQPError, match="is prepared: no work can join it"):
        vhost.publish("", "work", _half("P"))


def test_commit_applies_publishes_then_settlements(vhost):
    work, consumer, _, _, _ = _prepared(vhost, "P")
    work.remove_consumer(consumer)
    assert vhost.half.decide("P", True)
    assert (work.prepared, work.half) == (0, 0)
    assert bodies(work) == [b"m2", b"out"]  # m1 acked
    with pytest.raises(AMQPError, match="already decided"):
        vhost.half.prepare("P", Transaction("tx-2", None, 0.0, None))


def test_rollback_puts_locked_messages_back_in_place_redelivered(vhost):
    work, consumer, _, _, _ = _prepared(vhost, "P")
    work.remove_consumer(consumer)
    assert vhost.half.decide("P", False)
    entries = work.ready.clear()
    assert [(e.message.body, e.delivery_count) for e in entries] == [(b"m1", 1), (b"m2", 0)]


def test_a_staged_reject_is_dead_lettered_at_commit(vhost):
    vhost.declare_queue("dlq", owner=None)
    vhost.delete_queue("work", owner=None)
    vhost.declare_queue(
        "work",
        owner=None,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"},
    )
    _work, _, _, _, _ = _prepared(vhost, "P", Outcome.DISCARD)
    assert vhost.half.decide("P", True)
    assert bodies(vhost.queues["dlq"]) == [b"m1"]


def test_check_back_rolls_a_prepared_transaction_back(vhost, clock):
    work, consumer, _, _, _ = _prepared(vhost, "P", check_queue="checks", immunity=1)
    work.remove_consumer(consumer)
    clock.advance(1 + 5 * 3)
    assert [c[1] for c in _checks(vhost)] == [1, 2]
    assert vhost.half.list() == [] and work.prepared == 0
    assert [e.message.body for e in work.ready.clear()] == [b"m1", b"m2"]


def test_a_prepare_publish_needs_a_transaction_and_an_id(vhost):
    prepare = CODEC.encode(headers={"x-half-txn": "P"})
    with pytest.raises(AMQPError, match="prepare needs a transaction"):
        vhost.publish("amq.rabbitish.txn", "prepare", Message("", "", prepare, b"", CODEC))
    with pytest.raises(AMQPError, match="prepare needs an x-half-txn header"):
        vhost.publish("amq.rabbitish.txn", "prepare", Message("", "", NO_PROPERTIES, b"", CODEC))


# ---------------------------------------------------------------------- reading a prepared one
def _read(txn_id: str | None, reply_to: str | None) -> Message:
    headers = {} if txn_id is None else {"x-half-txn": txn_id}
    fields: dict[str, Any] = {"headers": headers}
    if reply_to is not None:
        fields["reply_to"] = reply_to
    return message(b"", "read", "amq.rabbitish.txn", **fields)


def test_read_copies_locked_messages_to_the_reply_queue_and_decides_nothing(vhost):
    work, _consumer, first, _tx, _result = _prepared(vhost, "P")
    vhost.declare_queue("copies", owner=None)
    result = vhost.publish("amq.rabbitish.txn", "read", _read("P", "copies"), mandatory=True)
    assert result.routed and not result.returned
    copies = vhost.queues["copies"]
    assert [(e.message.body, e.message.routing_key) for e in copies.ready] == [(b"m1", "work")]
    assert next(iter(copies.ready)).message is not first.entry.message  # the original: locked
    [view] = vhost.half.list()
    assert (view.id, view.acks, work.prepared) == ("P", 1, 1)
    vhost.half.decide("P", True)
    assert work.prepared == 0


def test_read_of_an_unknown_id_is_unroutable_and_bad_reads_are_refused(vhost):
    vhost.declare_queue("copies", owner=None)
    result = vhost.publish("amq.rabbitish.txn", "read", _read("nobody", "copies"), mandatory=True)
    assert not result.routed and result.returned
    with pytest.raises(AMQPError, match="read needs an x-half-txn header"):
        vhost.publish("amq.rabbitish.txn", "read", _read(None, "copies"))
    with pytest.raises(AMQPError, match="read needs a reply_to property naming a queue"):
        vhost.publish("amq.rabbitish.txn", "read", _read("P", None))
    with pytest.raises(AMQPError, match="no queue 'gone' in vhost '/'") as raised:
        vhost.publish("amq.rabbitish.txn", "read", _read("P", "gone"))
    assert raised.value.reply_code == 404
