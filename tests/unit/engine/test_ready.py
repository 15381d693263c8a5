"""ReadyList and PriorityReady: publication order, requeued messages back in their original
place whatever order they come back in, priorities served highest first, byte accounting."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.ready import PriorityReady, ReadyList
from tests.support.engine import CODEC, NO_PROPERTIES


def entry(seq: int, priority: int = 0, size: int = 1) -> QueueEntry:
    message = Message("", "k", NO_PROPERTIES, b"x" * size, CODEC, priority=priority)
    return QueueEntry(None, seq, message, None)


def seqs(ready) -> list[int]:
    return [e.seq for e in ready]


def drain(ready) -> list[int]:
    out = []
    while len(ready):
        out.append(ready.pop().seq)
    return out


def test_requeued_entries_go_back_to_their_place():
    ready = ReadyList()
    entries = [entry(i) for i in range(6)]
    for e in entries:
        ready.append(e)
    taken = [ready.pop() for _ in range(4)]  # 0..3 delivered
    for e in (taken[2], taken[0], taken[3]):  # requeued in any order
        ready.requeue(e)
    assert seqs(ready) == [0, 2, 3, 4, 5]
    assert ready.peek().seq == 0
    ready.append(entry(6))
    assert drain(ready) == [0, 2, 3, 4, 5, 6]


def test_bytes_and_clear():
    ready = ReadyList()
    for i, size in enumerate((3, 5, 7)):
        ready.append(entry(i, size=size))
    assert ready.bytes == 15
    first = ready.pop()
    assert ready.bytes == 12
    ready.requeue(first)
    assert ready.bytes == 15
    assert [e.seq for e in ready.clear()] == [0, 1, 2]
    assert (len(ready), ready.bytes, ready.peek()) == (0, 0, None)


def test_priority_levels_are_served_highest_first():
    ready = PriorityReady(max_priority=5)
    for seq, priority in enumerate((0, 3, 9, 5, 3, 0)):
        ready.append(entry(seq, priority))
    # 9 is above the maximum and shares level 5 with the message published after it
    assert seqs(ready) == [2, 3, 1, 4, 0, 5]
    top, second = ready.pop(), ready.pop()
    ready.requeue(second)
    ready.requeue(top)
    assert ready.peek().seq == 2
    assert drain(ready) == [2, 3, 1, 4, 0, 5]


def test_priority_requeue_goes_before_later_messages_of_its_level():
    ready = PriorityReady(max_priority=2)
    for seq, priority in enumerate((1, 1, 2, 1)):
        ready.append(entry(seq, priority))
    taken = [ready.pop() for _ in range(3)]  # 2, then 0 and 1
    assert [e.seq for e in taken] == [2, 0, 1]
    ready.requeue(taken[2])
    ready.append(entry(4, 2))
    assert drain(ready) == [4, 1, 3]
    assert ready.bytes == 0


@settings(max_examples=200)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=30),
    st.lists(st.tuples(st.booleans(), st.integers(0, 29)), max_size=60),
)
def test_order_survives_any_pop_and_requeue_sequence(priorities, operations):
    """Whatever is taken out and put back, the ready messages stay ordered by (level
    descending, publication order)."""
    plain, prioritised = ReadyList(), PriorityReady(max_priority=2)
    for seq, priority in enumerate(priorities):
        plain.append(entry(seq, priority))
        prioritised.append(entry(seq, priority))
    for ready, key in ((plain, lambda e: e.seq), (prioritised, _priority_order)):
        out: list[QueueEntry] = []
        for take, index in operations:
            if take and len(ready):
                out.append(ready.pop())
            elif out:
                ready.requeue(out.pop(index % len(out)))
            listed = list(ready)
            assert listed == sorted(listed, key=key)
            assert len(ready) == len(listed)
            assert ready.peek() is (listed[0] if listed else None)


def _priority_order(e: QueueEntry) -> tuple[int, int]:
    return (-min(e.message.priority, 2), e.seq)


def test_take_matching_leaves_the_others_in_order_and_remembers_what_it_turned_down():
    ready = ReadyList()
    for i in range(6):
        ready.append(entry(i))
    judged: list[int] = []
    seen: dict[object, int] = {}

    def odd(e: QueueEntry) -> bool:
        judged.append(e.seq)
        return e.seq % 2 == 1

    assert ready.take_matching(odd, seen).seq == 1
    assert ready.take_matching(odd, seen).seq == 3
    assert judged == [0, 1, 2, 3]  # 0 and 2 were not judged twice
    assert seqs(ready) == [0, 2, 4, 5]
    assert ready.bytes == 4
    ready.requeue(entry(3))
    assert ready.take_matching(odd, seen).seq == 3  # requeued: judged again, first
    assert ready.take_matching(lambda e: False, seen) is None
    assert drain(ready) == [0, 2, 4, 5]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=30))
def test_take_matching_equals_the_first_match_in_iteration_order(items):
    ready = PriorityReady(3)
    for seq, (priority, _) in enumerate(items):
        ready.append(entry(seq, priority))
    wanted = {seq for seq, (_, match) in enumerate(items) if match}
    seen: dict[object, int] = {}
    while True:
        expected = next((e.seq for e in ready if e.seq in wanted), None)
        taken = ready.take_matching(lambda e: e.seq in wanted, seen)
        assert (taken.seq if taken else None) == expected
        if taken is None:
            break
    assert sorted(seqs(ready)) == sorted(set(range(len(items))) - wanted)


def test_since_is_publication_order_from_a_sequence_number_taking_nothing():
    ready = ReadyList()
    for seq in range(6):
        ready.append(entry(seq))
    taken = [ready.pop(), ready.pop(), ready.pop()]  # 0, 1, 2 out
    ready.requeue(taken[2])
    ready.requeue(taken[0])
    assert seqs(ready.since(0)) == [0, 2, 3, 4, 5]
    assert seqs(ready.since(2)) == [2, 3, 4, 5]
    assert seqs(ready.since(4)) == [4, 5]
    assert seqs(ready.since(6)) == []
    assert len(ready) == 5


def test_since_across_priority_levels_is_publication_order():
    ready = PriorityReady(5)
    for seq, priority in enumerate((0, 5, 2, 5, 0)):
        ready.append(entry(seq, priority))
    assert seqs(ready) == [1, 3, 2, 0, 4]  # consumers: highest first
    assert seqs(ready.since(1)) == [1, 2, 3, 4]  # a browser: as published
