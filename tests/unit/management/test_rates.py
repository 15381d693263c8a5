"""Rates from counters sampled when the API is asked (rabbitish/management/rates.py)."""

from __future__ import annotations

from rabbitish.management.rates import FORGET_AFTER, WINDOW, Rates


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Owner:
    """A queue or connection as the rates see it: any object, compiled ones included."""

    __slots__ = ()


def test_a_rate_is_the_change_per_second_over_the_window():
    clock = Clock()
    rates = Rates(clock, clock)
    owner = Owner()
    assert rates.sample(owner, {"publish": 0}) == {"publish": 0.0}
    clock.now += 2.0
    assert rates.sample(owner, {"publish": 10}) == {"publish": 5.0}


def test_an_object_no_longer_sampled_is_forgotten_and_one_still_sampled_is_not():
    clock = Clock()
    rates = Rates(clock, clock)
    gone, listed = Owner(), Owner()
    rates.sample(gone, {"publish": 0})
    rates.sample(listed, {"publish": 0})
    clock.now += 1.0
    rates.sample(gone, {"publish": 5})
    while clock.now < 1000.0 + 1.0 + FORGET_AFTER + WINDOW:
        clock.now += WINDOW / 2
        rates.sample(listed, {"publish": 0})
    # `listed` kept its series (idle since its first sample); `gone` starts a new one, whose
    # counters count as just changed.
    assert rates.idle_since(listed) is not None
    assert rates.idle_since(gone) is None
