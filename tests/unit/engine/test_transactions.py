"""Transactions through the engine API, driven directly (no protocol, no socket): identity and
state, all-or-nothing commits, mandatory returns and staged acquisitions."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.delivery import Outcome
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.transactions import TxState
from tests.support.engine import bodies, message


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


def test_only_a_commit_that_publishes_waits_for_the_store(node, vhost):
    """Settlements alone are journaled in order but not waited for (docs/transactions.md):
    RabbitMQ does not sync an ack-only commit either. A publish to a queue waits; one routed
    nowhere put nothing anywhere, so there is nothing to wait for."""
    queue = vhost.declare_queue("q", owner=None)
    for body in (b"1", b"2"):
        vhost.publish("", "q", message(body))
    acked, rejected = queue.get(settled=False), queue.get(settled=False)
    acks = node.transactions.begin(owner=None)
    acks.stage_settle([acked], Outcome.ACK)
    acks.stage_settle([rejected], Outcome.DISCARD)
    result = acks.commit()
    assert result.queues_touched == 1 and not result.published and not result.needs_sync

    publishes = node.transactions.begin(owner=None)
    vhost.publish("", "q", message(b"3"), tx=publishes)
    assert publishes.commit().needs_sync

    unroutable = node.transactions.begin(owner=None)
    vhost.publish("", "nowhere", message(b"4", "nowhere"), tx=unroutable)
    assert not unroutable.commit().needs_sync


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


def _prepare_marker(txn: str) -> Any:
    return message(b"", "prepare", "amq.rabbitish.txn", headers={"x-half-txn": txn})


def test_a_staged_prepare_makes_the_commit_a_prepare(node, vhost):
    queue = vhost.declare_queue("q", owner=None)
    tx = node.transactions.begin(owner=None)
    vhost.publish("", "q", message(b"a"), tx=tx)
    vhost.publish("amq.rabbitish.txn", "prepare", _prepare_marker("P"), tx=tx)
    vhost.publish("amq.rabbitish.txn", "prepare", _prepare_marker("P"), tx=tx)  # same id: fine
    with pytest.raises(AMQPError, match="already prepares 'P'"):
        vhost.publish("amq.rabbitish.txn", "prepare", _prepare_marker("Q"), tx=tx)
    result = tx.commit()
    assert result.prepared == "P" and result.needs_sync and tx.state is TxState.PREPARED
    assert node.transactions.prepared == 1 and len(node.transactions) == 0
    assert queue.message_count == 0 and queue.half == 1
    assert vhost.half.decide("P", True) and bodies(queue) == [b"a"]


def test_a_rolled_back_transaction_forgets_its_staged_prepare(node, vhost):
    vhost.declare_queue("q", owner=None)
    tx = node.transactions.begin(owner=None)
    vhost.publish("amq.rabbitish.txn", "prepare", _prepare_marker("P"), tx=tx)
    tx.rollback()
    assert tx.prepare_as is None and vhost.half.list() == []
