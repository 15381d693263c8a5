"""Deliveries and their outcomes, driven directly (no protocol, no socket): each outcome's
effect on the message, settling twice or after the queue went, and the credit it frees."""

from __future__ import annotations

from rabbitish.engine.delivery import Outcome, settle
from tests.support.engine import Quiet, message


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
