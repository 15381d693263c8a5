"""Per-second rates (the `*_details.rate` fields) from counters sampled when the API is asked:
no timer runs in the broker; a client polling once a second (`rabbitish watch`) sees rates over
the last few seconds, as RabbitMQ's 5-second samples show them."""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

WINDOW = 5.0  # seconds of samples kept per object
MIN_SPACING = 0.2  # a new sample no sooner than this after the previous one


class Rates:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: weakref.WeakKeyDictionary[Any, deque[tuple[float, dict[str, int]]]] = (
            weakref.WeakKeyDictionary()
        )

    def sample(self, owner: Any, counters: dict[str, int]) -> dict[str, float]:
        """Record `counters` for `owner` and return each counter's change per second over the
        samples kept (0.0 until there are two samples)."""
        now = self._clock()
        samples = self._samples.setdefault(owner, deque())
        while samples and now - samples[0][0] > WINDOW:
            samples.popleft()
        if not samples or now - samples[-1][0] >= MIN_SPACING:
            samples.append((now, dict(counters)))
        first_time, first = samples[0]
        elapsed = now - first_time
        if elapsed < MIN_SPACING:
            return dict.fromkeys(counters, 0.0)
        return {
            name: (value - first.get(name, value)) / elapsed for name, value in counters.items()
        }
