"""A queue's consumers kept apart as active and blocked (engine/queue.py): a consumer found
without credit leaves the round-robin until `credit_returned` names it, so dispatch walks only
the consumers that can take, and the order of deliveries is the one a queue asking every
consumer gives (RabbitMQ's: round-robin from the consumer after the one served last; with
consumer priorities, the highest first and the one served to the back of its group). A model
of that order, asking every consumer each time, checks the queue over random sequences of
publishes, settlements, credit changes and consumers coming and going."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.node import Node
from rabbitish.engine.queue import Queue
from rabbitish.engine.vhost import VirtualHost
from rabbitish.native import compiled
from tests.support.engine import CODEC, Taker, message


class CountingTaker(Taker):
    """A Taker that counts how often the queue asks its credit."""

    __slots__ = ("asked",)

    def __init__(self, queue: Queue, tag: str, prefetch: int, priority: int = 0) -> None:
        super().__init__(queue, tag, prefetch=prefetch, arguments={"x-priority": priority})
        self.asked = 0

    @property
    def credit(self) -> int:
        self.asked += 1
        return self.prefetch - self.unsettled


def _queue(vhost: VirtualHost) -> Queue:
    return vhost.declare_queue("q", owner=None)


def _full(vhost: VirtualHost, count: int) -> tuple[Queue, list[CountingTaker]]:
    """`count` consumers (prefetch 1) each holding one message, and one message waiting."""
    queue = _queue(vhost)
    takers = [CountingTaker(queue, f"c{i}", prefetch=1) for i in range(count)]
    for taker in takers:
        queue.add_consumer(taker)
    for i in range(count + 1):
        queue.enqueue(message(str(i).encode()))
    assert [len(t.deliveries) for t in takers] == [1] * count
    for taker in takers:
        taker.asked = 0
    return queue, takers


def _acked(taker: CountingTaker) -> None:
    """What a front end does on an ack: settle, then let the queue deliver to the active."""
    settle([taker.deliveries[-1]], Outcome.ACK)
    taker.queue.dispatch_active()


def test_an_ack_asks_only_the_consumer_whose_credit_came_back(vhost):
    queue, takers = _full(vhost, 100)
    _acked(takers[42])
    assert [d.entry.message.body for d in takers[42].deliveries] == [b"42", b"100"]
    assert [t.asked for t in takers] == [0] * 42 + [1] + [0] * 57
    queue.enqueue(message())  # 42 is asked once more and found full
    for taker in takers:
        taker.asked = 0
    for _ in range(50):
        queue.enqueue(message())  # everyone is full: no consumer is asked
    assert sum(t.asked for t in takers) == 0
    _acked(takers[7])  # takes one, then is asked again and found full
    assert [t.asked for t in takers] == [0] * 7 + [2] + [0] * 92


def test_a_consumer_found_full_is_blocked_until_its_credit_is_returned(vhost):
    queue, [a, b] = _full(vhost, 2)
    assert a.blocked and b.blocked
    a.prefetch = 3  # a front end's own limit rose (0-9-1 qos, 1.0 link credit)
    queue.dispatch_active()
    assert len(a.deliveries) == 1  # not told: still blocked
    queue.credit_returned(a)
    assert not a.blocked and len(a.deliveries) == 1  # told, but nothing delivered yet
    queue.dispatch_active()
    assert [d.entry.message.body for d in a.deliveries] == [b"0", b"2"]
    assert b.blocked and b.asked == 0


def test_dispatch_asks_every_consumer_again(vhost):
    queue, [a, b] = _full(vhost, 2)
    b.prefetch = 2  # changed without naming it
    queue.dispatch()
    assert [d.entry.message.body for d in b.deliveries] == [b"1", b"2"]
    assert a.asked == 1 and a.blocked


def test_a_settlement_unblocks_before_its_requeued_message_is_dispatched(vhost):
    queue, [a, b, _] = _full(vhost, 3)
    settle([b.deliveries[0]], Outcome.ACK)  # b unblocked; the waiting message goes to it
    queue.dispatch_active()
    assert [d.entry.message.body for d in b.deliveries] == [b"1", b"3"]
    settle([a.deliveries[0]], Outcome.REQUEUE)  # back to a, the only one with credit
    assert [d.entry.message.body for d in a.deliveries] == [b"0", b"0"]
    assert a.deliveries[1].redelivered


def test_a_consumer_returning_behind_the_cursor_waits_its_turn(vhost):
    """Consumers A, X, S, T: S is served last and then found full, as X is; when X's and T's
    credit come back, T is next (the one after S), then X, as a queue asking everyone
    serves them."""
    queue, [a, x, s, t] = _full(vhost, 4)  # each holds one; the fifth message waits
    assert [c.blocked for c in (a, x, s, t)] == [True] * 4
    settle([x.deliveries[-1], s.deliveries[-1]], Outcome.ACK)
    queue.dispatch_active()
    queue.enqueue(message(b"5"))
    assert [d.entry.message.body for d in x.deliveries + s.deliveries] == [b"1", b"4", b"2", b"5"]
    queue.enqueue(message(b"6"))  # x and s are asked, found full: blocked
    assert (x.blocked, s.blocked) == (True, True)
    settle([x.deliveries[-1], t.deliveries[-1]], Outcome.ACK)
    queue.dispatch_active()
    queue.enqueue(message(b"7"))
    assert [d.entry.message.body for d in t.deliveries] == [b"3", b"6"]
    assert [d.entry.message.body for d in x.deliveries] == [b"1", b"4", b"7"]


def test_a_removed_consumer_is_not_brought_back_by_a_late_settlement(vhost):
    queue, [a, b] = _full(vhost, 2)
    queue.remove_consumer(a)
    settle([a.deliveries[0]], Outcome.ACK)
    queue.dispatch_active()
    assert not a.blocked and queue.consumers == [b] and len(a.deliveries) == 1
    queue.remove_consumer(a)  # twice changes nothing
    assert queue.consumers == [b]


def test_with_priorities_only_the_active_are_walked_and_the_served_goes_to_the_back(vhost):
    queue = _queue(vhost)
    high = [CountingTaker(queue, f"h{i}", prefetch=1, priority=5) for i in range(2)]
    low = [CountingTaker(queue, f"l{i}", prefetch=1) for i in range(30)]
    for taker in low + high:
        queue.add_consumer(taker)
    assert queue.consumers[:2] == high
    for i in range(32):
        queue.enqueue(message(str(i).encode()))
    assert [len(t.deliveries) for t in high + low] == [1] * 32
    for taker in high + low:
        taker.asked = 0
    queue.enqueue(message(b"waiting"))  # every one of them found full, once
    for taker in high + low:
        taker.asked = 0
    _acked(low[3])
    assert low[3].deliveries[-1].entry.message.body == b"waiting"
    assert [t.asked for t in high + low] == [0, 0, 0, 0, 0, 1] + [0] * 26
    assert queue.consumers[-1] is low[3]  # served: the back of its group


def test_a_higher_priority_consumer_coming_and_going_keeps_the_others_turns(vhost):
    """As in RabbitMQ: A was served, so B is next, whatever came and went meanwhile. (The
    queue's cursor was an index into its consumers once, and a consumer inserted before it
    made A serve twice in a row.)"""
    queue = _queue(vhost)
    a, b = (CountingTaker(queue, tag, prefetch=5) for tag in "ab")
    queue.add_consumer(a)
    queue.add_consumer(b)
    queue.enqueue(message(b"1"))
    high = CountingTaker(queue, "high", prefetch=5, priority=5)
    queue.add_consumer(high)
    queue.remove_consumer(high)
    queue.enqueue(message(b"2"))
    queue.enqueue(message(b"3"))
    assert [d.entry.message.body for d in a.deliveries] == [b"1", b"3"]
    assert [d.entry.message.body for d in b.deliveries] == [b"2"]


# ---------------------------------------------------------------------- the order, modelled
@dataclass
class Model:
    """The order of a queue that asks every consumer for credit at every dispatch."""

    consumers: list[str] = field(default_factory=list)
    priority: dict[str, int] = field(default_factory=dict)
    credit: dict[str, int] = field(default_factory=dict)
    ready: list[int] = field(default_factory=list)  # sequence numbers, in order
    delivered: list[tuple[str, int]] = field(default_factory=list)
    rr: int = 0

    def add(self, tag: str, priority: int, prefetch: int) -> None:
        index = len(self.consumers)
        while index and self.priority[self.consumers[index - 1]] < priority:
            index -= 1
        self.consumers.insert(index, tag)
        self.priority[tag], self.credit[tag] = priority, prefetch
        self.dispatch()

    def remove(self, tag: str) -> None:
        index = self.consumers.index(tag)
        del self.consumers[index]
        if index < self.rr:
            self.rr -= 1

    def dispatch(self) -> None:
        consumers = self.consumers
        while self.ready and consumers:
            if len({self.priority[c] for c in consumers}) > 1:
                found = [i for i, c in enumerate(consumers) if self.credit[c] > 0]
                if not found:
                    return
                chosen = consumers.pop(found[0])
                end = found[0]
                while (
                    end < len(consumers) and self.priority[consumers[end]] == self.priority[chosen]
                ):
                    end += 1
                consumers.insert(end, chosen)
            else:
                count = len(consumers)
                for i in range(count):
                    chosen = consumers[(self.rr + i) % count]
                    if self.credit[chosen] > 0:
                        self.rr = (self.rr + i + 1) % count
                        break
                else:
                    return
            self.credit[chosen] -= 1
            self.delivered.append((chosen, self.ready.pop(0)))


class Logged(Taker):
    """A Taker that writes each delivery it gets into a log the whole queue shares."""

    __slots__ = ("log",)

    def __init__(self, queue: Queue, tag: str, prefetch: int, priority: int, log: list) -> None:
        super().__init__(queue, tag, prefetch=prefetch, arguments={"x-priority": priority})
        self.log = log

    def delivered(self, delivery: Delivery) -> None:
        super().delivered(delivery)
        self.log.append((self.tag, delivery.entry.seq))


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(
            ["publish", "publish", "publish", "ack", "requeue", "more", "add", "remove"]
        ),
        st.integers(0, 7),  # which consumer (modulo those there are)
        st.integers(1, 3),  # a prefetch, or how much more credit
    ),
    max_size=120,
)


def _same_order(operations: list[tuple[str, int, int]], priorities: list[int]) -> None:
    """Run `operations` on a queue and on the model; after each, the same deliveries."""
    queue = _queue(Node(ManualScheduler(), codec=CODEC).vhosts["/"])
    model = Model()
    log: list[tuple[str, int]] = []
    takers: dict[str, Logged] = {}

    def add(priority: int, prefetch: int) -> None:
        tag = f"c{len(takers)}"
        takers[tag] = Logged(queue, tag, prefetch, priority, log)
        model.add(tag, priority, prefetch)
        queue.add_consumer(takers[tag])

    for priority in priorities:
        add(priority, 2)
    for op, which, amount in operations:
        present = list(model.consumers)
        holding = [t for t in takers.values() if any(not d.settled for d in t.deliveries)]
        if op == "publish":
            model.ready.append(queue._next_seq)
            queue.enqueue(message())
            model.dispatch()
        elif op in ("ack", "requeue") and holding:
            taker = holding[which % len(holding)]
            delivery = next(d for d in taker.deliveries if not d.settled)
            model.credit[taker.tag] += 1
            if op == "requeue":
                bisect.insort(model.ready, delivery.entry.seq)
            model.dispatch()
            settle([delivery], Outcome.ACK if op == "ack" else Outcome.REQUEUE)
            queue.dispatch_active()  # as a front end does after settling
        elif op == "more" and present:
            tag = present[which % len(present)]
            takers[tag].prefetch += amount
            model.credit[tag] += amount
            model.dispatch()
            queue.credit_returned(takers[tag])
            queue.dispatch_active()
        elif op == "add" and len(present) < 8:
            add(priorities[which % len(priorities)] if priorities else 0, amount)
        elif op == "remove" and present:
            tag = present[which % len(present)]
            model.remove(tag)
            queue.remove_consumer(takers[tag])
        assert log == model.delivered, (op, which, amount)
        assert [c.tag for c in queue.consumers] == model.consumers


@settings(max_examples=300, deadline=None)
@given(OPERATIONS, st.integers(1, 5))
def test_round_robin_order_is_that_of_a_queue_asking_everyone(operations, consumers):
    _same_order(operations, [0] * consumers)


@settings(max_examples=300, deadline=None)
@given(OPERATIONS, st.lists(st.integers(0, 2), min_size=1, max_size=5))
def test_priority_order_is_that_of_a_queue_asking_everyone(operations, priorities):
    _same_order(operations, priorities)


@pytest.mark.skipif(compiled(), reason="a compiled queue keeps its attributes in a C struct")
def test_a_queue_keeps_few_enough_attributes_for_fast_attribute_access(vhost):
    """Past 29 instance attributes CPython 3.11 stops sharing a class's attribute keys and
    every attribute a queue reads on the hot path costs more: 30 made an engine publish, ack
    and delivery about 6% dearer (callgrind). Add state to a part the queue holds instead."""
    assert len(vars(_queue(vhost))) <= 29
