"""Consumers with a selection: each takes only what it accepts, the rest stays in the queue, in
order, for other consumers; each message is judged once per consumer; drain and priorities
honour it; a consumer without one is served as before."""

from __future__ import annotations

from rabbitish.engine.consumer import Selection
from rabbitish.engine.message import QueueEntry
from tests.support.engine import Recorder, bodies, message


def colour_is(colour: str, judged: list[bytes] | None = None) -> Selection:
    def accepts(entry: QueueEntry) -> bool:
        if judged is not None:
            judged.append(entry.message.body)
        return entry.message.headers.get("colour") == colour

    return Selection(accepts)


def publish(vhost, *colours: str, queue: str = "q") -> None:
    for i, colour in enumerate(colours):
        vhost.publish("", queue, message(f"{colour}{i}".encode(), headers={"colour": colour}))


def got(consumer) -> list[bytes]:
    return [d.entry.message.body for d in consumer.got]


def test_a_selecting_consumer_takes_only_what_it_accepts_and_leaves_the_rest_in_order(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, "red", "green", "blue", "green", "red")
    green = Recorder(queue, "green")
    green.selection = colour_is("green")
    queue.add_consumer(green)
    assert got(green) == [b"green1", b"green3"]
    assert bodies(queue) == [b"red0", b"blue2", b"red4"]


def test_skipped_messages_go_to_the_next_consumer_in_order(vhost):
    queue = vhost.declare_queue("q", owner=None)
    green = Recorder(queue, "green")
    green.selection = colour_is("green")
    everyone = Recorder(queue, "all")
    queue.add_consumer(green)
    queue.add_consumer(everyone)
    publish(vhost, "red", "green", "blue", "green")
    assert got(green) == [b"green1", b"green3"]
    assert got(everyone) == [b"red0", b"blue2"]


def test_each_message_is_judged_once_however_often_the_queue_dispatches(vhost):
    queue = vhost.declare_queue("q", owner=None)
    judged: list[bytes] = []
    green = Recorder(queue, "green")
    green.selection = colour_is("green", judged)
    queue.add_consumer(green)
    publish(vhost, "red", "blue", "red")
    for _ in range(3):
        queue.dispatch()
    publish(vhost, "green")
    assert judged == [b"red0", b"blue1", b"red2", b"green0"]
    assert got(green) == [b"green0"]


def test_a_requeued_message_is_judged_again_and_keeps_its_place(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, "green", "red", "green")
    taker = Recorder(queue, "taker", limit=1)
    queue.add_consumer(taker)
    first = taker.got[0]
    queue.remove_consumer(taker)
    green = Recorder(queue, "green")
    green.selection = colour_is("green")
    green.limit = 0
    queue.add_consumer(green)
    queue.requeue([first.entry])
    queue.outstanding.discard(first)
    green.limit = 10
    queue.dispatch()
    assert got(green) == [b"green0", b"green2"]  # the requeued one first, in its place
    assert first.entry.delivery_count == 2  # delivered, requeued, delivered again


def test_no_credit_no_delivery_and_credit_resumes_at_the_next_match(vhost):
    queue = vhost.declare_queue("q", owner=None)
    green = Recorder(queue, "green", limit=1)
    green.selection = colour_is("green")
    queue.add_consumer(green)
    publish(vhost, "green", "red", "green")
    assert got(green) == [b"green0"]
    green.got[0].settled = True  # frees the credit of the Recorder
    queue.dispatch()
    assert got(green) == [b"green0", b"green2"]
    assert bodies(queue) == [b"red1"]


def test_drain_counts_only_accepted_messages_and_is_dry_when_none_is_left(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, "red", "green", "red", "green", "red")
    green = Recorder(queue, "green", limit=0)
    green.selection = colour_is("green")
    queue.add_consumer(green)
    green.limit = 10
    assert tuple(queue.drain(green, 1)) == (1, False)
    assert tuple(queue.drain(green, 5)) == (1, True)  # red ones are left, none for it
    assert queue.message_count == 3


def test_priority_queues_serve_the_highest_accepted_message_first(vhost):
    queue = vhost.declare_queue("q", owner=None, arguments={"x-max-priority": 5})
    for body, colour, priority in (
        (b"g-low", "green", 1),
        (b"r-high", "red", 5),
        (b"g-high", "green", 5),
    ):
        vhost.publish("", "q", message(body, headers={"colour": colour}, priority=priority))
    green = Recorder(queue, "green")
    green.selection = colour_is("green")
    queue.add_consumer(green)
    assert got(green) == [b"g-high", b"g-low"]
    assert bodies(queue) == [b"r-high"]


def test_consumer_priorities_with_a_selecting_consumer_on_top(vhost):
    queue = vhost.declare_queue("q", owner=None)
    high = Recorder(queue, "high")
    high.priority = 10
    high.selection = colour_is("green")
    low = Recorder(queue, "low")
    queue.add_consumer(low)
    queue.add_consumer(high)
    publish(vhost, "red", "green")
    assert got(high) == [b"green1"]
    assert got(low) == [b"red0"]


def test_expired_messages_are_not_delivered_to_a_selecting_consumer(vhost):
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"old", headers={"colour": "green"}, expiration="10"))
    queue.ready.peek().expires_at = 0.0  # its time passed (timers do not fire here)
    green = Recorder(queue, "green")
    green.selection = colour_is("green")
    queue.add_consumer(green)
    assert got(green) == []
