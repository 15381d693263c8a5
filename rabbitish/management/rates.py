"""Per-second rates (the `*_details.rate` fields) and `idle_since` from counters sampled when the
API is asked: no timer runs in the broker; a client polling once a second (`rabbitish watch`)
sees rates over the last few seconds, as RabbitMQ's 5-second samples show them."""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

WINDOW = 5.0  # seconds of samples kept per object
MIN_SPACING = 0.2  # a new sample no sooner than this after the previous one


class _Series:
    __slots__ = ("changed_at", "last", "samples")

    def __init__(self, now: float) -> None:
        self.samples: deque[tuple[float, dict[str, int]]] = deque()
        self.last: dict[str, int] | None = None
        self.changed_at = now  # wall time the counters were last seen to change


class Rates:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall = wall
        self._series: weakref.WeakKeyDictionary[Any, dict[Any, _Series]] = (
            weakref.WeakKeyDictionary()
        )

    def _get(self, owner: Any, part: Any) -> _Series:
        parts = self._series.setdefault(owner, {})
        series = parts.get(part)
        if series is None:
            series = parts[part] = _Series(self._wall())
        return series

    def sample(self, owner: Any, counters: dict[str, int], part: Any = None) -> dict[str, float]:
        """Record `counters` for `owner` (and `part` of it: a connection's channel) and return
        each counter's change per second over the samples kept (0.0 until there are two)."""
        now = self._clock()
        series = self._get(owner, part)
        if series.last is not None and series.last != counters:
            series.changed_at = self._wall()
        series.last = dict(counters)
        samples = series.samples
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

    def idle_since(self, owner: Any, part: Any = None) -> str | None:
        """When the counters last changed, as RabbitMQ prints `idle_since` (local time), or
        None while they are changing (sampled in the last second)."""
        series = self._get(owner, part)
        if self._wall() - series.changed_at < 1.0:
            return None
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(series.changed_at))
