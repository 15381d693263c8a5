"""The keep-alive rules both protocols follow (rabbitish/frontend/heartbeats.py), tick by tick."""

from __future__ import annotations

from rabbitish.frontend.heartbeats import IdleCheck, SendCheck


def _ticks(check: SendCheck, writes_at_each_tick: list[int]) -> list[bool]:
    """Whether each tick sends; a tick that sends writes one more frame."""
    sent = []
    extra = 0
    for writes in writes_at_each_tick:
        due = check.due(writes + extra)
        extra += due
        check.ticked(writes + extra)
        sent.append(due)
    return sent


def test_0_9_1_sends_at_the_first_tick_then_only_after_a_silent_interval():
    assert _ticks(SendCheck(first_tick_sends=True), [5, 5, 6, 6, 6]) == [
        True,
        True,
        False,
        True,
        True,
    ]


def test_1_0_sends_only_after_a_whole_silent_interval():
    assert _ticks(SendCheck(first_tick_sends=False), [5, 5, 6, 6, 6]) == [
        False,
        True,
        False,
        True,
        True,
    ]


def _checks(check: IdleCheck, reads: list[int], blocked: bool = False) -> list[bool]:
    return [check.expired(count, blocked) for count in reads]


def test_0_9_1_drops_a_peer_after_two_silent_checks_in_a_row():
    assert _checks(IdleCheck(silent_checks=2), [0, 0, 1, 1, 2, 2, 2]) == [
        False,  # the first check always counts as activity
        False,
        False,
        False,
        False,
        False,
        True,
    ]


def test_1_0_closes_a_peer_after_one_silent_check():
    assert _checks(IdleCheck(silent_checks=1), [3, 4, 4]) == [False, False, True]


def test_a_blocked_peer_is_never_silent():
    check = IdleCheck(silent_checks=1)
    assert _checks(check, [3, 3, 3], blocked=True) == [False, False, False]
    assert check.expired(3, blocked=False)
