"""Per-second rates (the `*_details.rate` fields) and `idle_since` from counters sampled when the
API is asked: no timer runs in the broker; a client polling once a second (`rabbitish watch`)
sees rates over the last few seconds, as RabbitMQ's 5-second samples show them."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

WINDOW = 5.0  # seconds of samples kept per object
FORGET_AFTER = 60.0  # seconds after its last sample that an object's series is dropped
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
        # Per object (a connection, a queue...): its parts' series and when it was last
        # sampled. Held strongly (the compiled queue, channel and connection take no weak
        # reference) and dropped FORGET_AFTER seconds after the last sample: one closed or
        # deleted meanwhile stays that long at most; one still listed keeps its series.
        self._series: dict[Any, tuple[dict[Any, _Series], list[float]]] = {}
        self._swept_at = clock()

    def _get(self, owner: Any, part: Any) -> _Series:
        now = self._clock()
        if now - self._swept_at >= WINDOW:
            self._sweep(now)
        entry = self._series.get(owner)
        if entry is None:
            entry = self._series[owner] = ({}, [now])
        parts, seen = entry
        seen[0] = now
        series = parts.get(part)
        if series is None:
            series = parts[part] = _Series(self._wall())
        return series

    def _sweep(self, now: float) -> None:
        self._swept_at = now
        stale = [owner for owner, (_, seen) in self._series.items() if now - seen[0] > FORGET_AFTER]
        for owner in stale:
            del self._series[owner]

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
