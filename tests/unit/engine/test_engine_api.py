"""The engine API a front end uses, driven directly (no protocol, no socket): the one publish
entry point, deliveries and their outcomes, consumer credit and drain, and transactions with
identity, all-or-nothing commits and staged acquisitions."""

from __future__ import annotations

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.consumer import Consumer
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.node import Node
from rabbitish.engine.transactions import TxState
from rabbitish.engine.vhost import VirtualHost
from rabbitish.protocol.codec import CODEC


class Recorder(Consumer):
    """A consumer that keeps what it is given; its credit is set by the test."""

    __slots__ = ("got", "limit")

    def __init__(self, queue, tag="c", *, settled=False, limit=1 << 30) -> None:
        super().__init__(queue, tag, settled_on_delivery=settled)
        self.got: list[Delivery] = []
        self.limit = limit

    @property
    def credit(self) -> int:
        return self.limit - len([d for d in self.got if not d.settled])

    def delivered(self, delivery: Delivery) -> None:
        self.got.append(delivery)


class Quiet(Consumer):
    """A consumer with the engine's own credit (its prefetch) that takes deliveries silently."""

    __slots__ = ()

    def delivered(self, delivery: Delivery) -> None:
        pass


def message(body: bytes, routing_key: str = "q"):
    return CODEC.new_message("", routing_key, b"\x00\x00", body)


@pytest.fixture
def node() -> Node:
    return Node(ManualScheduler(), codec=CODEC)


@pytest.fixture
def vhost(node: Node) -> VirtualHost:
    return node.vhosts["/"]


def bodies(queue) -> list[bytes]:
    return [entry.message.body for entry in queue.ready.clear()]


# ---------------------------------------------------------------------- publish
def test_publish_reports_routing_and_mandatory_outcome(vhost):
    queue = vhost.declare_queue("q", owner=None)
    routed = vhost.publish("", "q", message(b"a"), mandatory=True)
    assert (routed.routed, routed.accepted, routed.returned) == (True, True, False)
    lost = vhost.publish("", "nowhere", message(b"b"), mandatory=True)
    assert (lost.routed, lost.returned) == (False, True)
    assert not vhost.publish("", "nowhere", message(b"c")).returned
    assert bodies(queue) == [b"a"]


def test_publish_refused_by_reject_publish_is_not_accepted(vhost):
    vhost.declare_queue(
        "q", owner=None, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    assert vhost.publish("", "q", message(b"a")).accepted
    refused = vhost.publish("", "q", message(b"b"))
    assert (refused.routed, refused.accepted) == (True, False)


def test_publish_follows_cc_headers_and_alternate_exchanges(vhost):
    a = vhost.declare_queue("a", owner=None)
    b = vhost.declare_queue("b", owner=None)
    vhost.declare_exchange("ae", "fanout")
    vhost.declare_exchange("x", "direct", arguments={"alternate-exchange": "ae"})
    vhost.add_binding("queue", "b", "ae", "", {}, {}, None)
    raw = CODEC.from_json({"headers": {"CC": ["b"]}})
    assert vhost.publish("", "a", CODEC.new_message("", "a", raw, b"cc")).routed
    assert vhost.publish("x", "unbound", message(b"via ae", "unbound")).routed
    assert bodies(a) == [b"cc"]
    assert bodies(b) == [b"cc", b"via ae"]


def test_publish_to_a_missing_exchange_is_404(vhost):
    with pytest.raises(AMQPError) as info:
        vhost.publish("missing", "k", message(b"x"))
    assert info.value.reply_code == 404


# ---------------------------------------------------------------------- settlement
def test_outcomes(vhost):
    vhost.declare_exchange("dlx", "fanout")
    dead = vhost.declare_queue("dead", owner=None)
    vhost.add_binding("queue", "dead", "dlx", "", {}, {}, None)
    queue = vhost.declare_queue("q", owner=None, arguments={"x-dead-letter-exchange": "dlx"})
    for body in (b"1", b"2", b"3", b"4", b"5"):
        vhost.publish("", "q", message(body))
    got = [queue.get(settled=False) for _ in range(5)]
    assert queue.unacked == 5 and queue.message_count == 0
    settle([got[0]], Outcome.ACK)
    settle([got[1]], Outcome.REQUEUE)
    settle([got[2]], Outcome.RELEASED)
    settle([got[3]], Outcome.MODIFIED, delivery_failed=True, undeliverable_here=True)
    settle([got[4]], Outcome.MODIFIED, delivery_failed=False)
    assert queue.unacked == 0
    again = [queue.get(settled=False) for _ in range(3)]
    assert [d.entry.message.body for d in again] == [b"2", b"3", b"5"]
    assert [d.redelivered for d in again] == [True, False, False]
    assert [d.delivery_count for d in again] == [2, 1, 1]
    assert [e.message.body for e in dead.ready.clear()] == [b"4"]


def test_settling_twice_or_after_the_queue_went_changes_nothing(vhost):
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"a"))
    delivery = queue.get(settled=False)
    settle([delivery], Outcome.REQUEUE)
    settle([delivery], Outcome.REQUEUE)
    assert queue.message_count == 1 and queue.unacked == 0
    again = queue.get(settled=False)
    vhost.delete_queue("q", owner=None)
    settle([again], Outcome.REQUEUE)
    assert again.settled and queue.message_count == 0


def test_settlement_frees_consumer_credit(vhost):
    queue = vhost.declare_queue("q", owner=None)
    consumer = Quiet(queue, "c", prefetch=2)
    queue.add_consumer(consumer)
    for body in (b"1", b"2", b"3"):
        vhost.publish("", "q", message(body))
    assert (consumer.unsettled, consumer.credit, queue.message_count) == (2, 0, 1)
    settle(list(queue.outstanding), Outcome.ACK)
    assert consumer.unsettled == 0
    queue.dispatch()
    assert (consumer.unsettled, queue.message_count) == (1, 0)


# ---------------------------------------------------------------------- credit and drain
def test_drain_delivers_up_to_n_and_says_whether_the_queue_ran_dry(vhost):
    queue = vhost.declare_queue("q", owner=None)
    for body in (b"1", b"2", b"3"):
        vhost.publish("", "q", message(body))
    consumer = Recorder(queue, limit=0)  # no credit: the queue does not push
    queue.add_consumer(consumer)
    assert consumer.got == []
    consumer.limit = 10
    assert tuple(queue.drain(consumer, 2)) == (2, False)
    assert tuple(queue.drain(consumer, 5)) == (1, True)
    assert [d.entry.message.body for d in consumer.got] == [b"1", b"2", b"3"]


def test_drain_stops_at_the_consumers_credit(vhost):
    queue = vhost.declare_queue("q", owner=None)
    for body in (b"1", b"2"):
        vhost.publish("", "q", message(body))
    consumer = Recorder(queue, limit=1)
    assert tuple(queue.drain(consumer, 5)) == (1, False)


def test_a_queue_held_by_a_commit_is_not_dry(vhost):
    queue = vhost.declare_queue("q", owner=None)
    consumer = Recorder(queue)
    queue.suspend_dispatch()
    assert tuple(queue.drain(consumer, 5)) == (0, False)
    queue.resume_dispatch()
    assert tuple(queue.drain(consumer, 5)) == (0, True)


def test_settled_on_delivery_consumers_leave_nothing_outstanding(vhost):
    queue = vhost.declare_queue("q", owner=None)
    consumer = Recorder(queue, settled=True)
    queue.add_consumer(consumer)
    vhost.publish("", "q", message(b"a"))
    assert consumer.got[0].settled and queue.unacked == 0 and consumer.unsettled == 0


# ---------------------------------------------------------------------- transactions
def test_transactions_have_identity_state_and_a_home(node, vhost):
    registry = node.transactions
    queue = vhost.declare_queue("q", owner=None)
    tx = registry.begin(owner="session 1")
    assert tx.state is TxState.ACTIVE and registry.get(tx.id) is tx and len(registry) == 1
    vhost.publish("", "q", message(b"a"), tx=tx)
    vhost.publish("", "q", message(b"b"), tx=tx)
    assert tx.counts() == {"publishes": 2, "settlements": 0, "acquisitions": 0}
    assert queue.message_count == 0  # invisible until commit
    tx.prepare()
    assert tx.state is TxState.PREPARED
    tx.commit()
    assert tx.state is TxState.COMMITTED and registry.get(tx.id) is None
    assert bodies(queue) == [b"a", b"b"]
    second = registry.begin(owner="session 1")
    assert second.id != tx.id
    with pytest.raises(AMQPError):
        registry.begin(owner="other", txn_id=second.id)
    second.rollback()
    assert second.state is TxState.ROLLED_BACK and len(registry) == 0
    with pytest.raises(AMQPError):
        second.stage_publish(message(b"late"), [queue], False)


def test_a_refused_commit_applies_nothing(node, vhost):
    """x-overflow reject-publish would refuse the second staged publish: nothing of the commit
    happens, not even the parts the queues would have accepted."""
    full = vhost.declare_queue(
        "full", owner=None, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    other = vhost.declare_queue("other", owner=None)
    vhost.publish("", "other", message(b"held"))
    held = other.get(settled=False)
    tx = node.transactions.begin(owner=None)
    vhost.publish("", "other", message(b"o1"), tx=tx)
    vhost.publish("", "full", message(b"f1"), tx=tx)
    vhost.publish("", "full", message(b"f2"), tx=tx)
    tx.stage_settle([held], Outcome.ACK)
    with pytest.raises(AMQPError) as info:
        tx.commit()
    assert (info.value.reply_code, info.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - partial tx completion",
    )
    assert (full.message_count, other.message_count, other.unacked) == (0, 0, 1)
    assert tx.state is TxState.ACTIVE
    assert tx.rollback() == [held]


def test_commit_applies_publishes_then_settlements_and_returns_mandatory(node, vhost):
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"first"))
    first = queue.get(settled=False)
    tx = node.transactions.begin(owner=None)
    vhost.publish("", "q", message(b"second"), tx=tx)
    lost = message(b"lost", "nowhere")
    assert not vhost.publish("", "nowhere", lost, mandatory=True, tx=tx).returned
    tx.stage_settle([first], Outcome.REQUEUE)
    result = tx.commit()
    assert result.returned == [lost] and result.settled == [first]
    assert bodies(queue) == [b"first", b"second"]  # requeued in its original place


def test_rollback_releases_acquisitions_and_hands_back_settlements(node, vhost):
    queue = vhost.declare_queue("q", owner=None)
    for body in (b"1", b"2"):
        vhost.publish("", "q", message(body))
    settled_later = queue.get(settled=False)
    acquired = queue.get(settled=False)
    tx = node.transactions.begin(owner=None)
    tx.stage_acquire(acquired)
    tx.stage_settle([settled_later], Outcome.ACK)
    assert tx.rollback() == [settled_later]
    assert not settled_later.settled and settled_later in queue.outstanding
    assert acquired.settled and acquired.delivery_count == 0
    redelivered = queue.get(settled=False)
    assert redelivered.entry is acquired.entry and not redelivered.redelivered
