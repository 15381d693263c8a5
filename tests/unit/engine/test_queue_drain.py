"""Consumer credit and drain, driven directly (no protocol, no socket): a drain delivers up to
n within the consumer's credit and says whether the queue ran dry."""

from __future__ import annotations

from tests.support.engine import Recorder, message


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
