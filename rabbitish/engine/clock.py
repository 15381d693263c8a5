"""Time and timers for the engine (message TTL, queue expiry), behind a Scheduler supplied by
whoever runs it, so the engine stays free of asyncio: the broker passes the event loop's
(server/scheduler.py), engine unit tests a ManualScheduler. The store reads the same clock to
turn expiry times into wall-clock times and back."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...


class _NoTimer:
    def cancel(self) -> None:
        pass


class ManualScheduler:
    """For unit tests of the engine: the real monotonic clock, and timers that are only recorded
    in `pending`, never fired."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        self.pending.append((self.now() + delay, callback))
        return _NoTimer()
