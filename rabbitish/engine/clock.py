"""Time and timers for the engine (TTL, queue expiry), supplied by whoever runs it, so the
engine stays free of asyncio and tests can drive time."""

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
    """A scheduler whose timers never fire by themselves: for unit tests of the engine."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        self.pending.append((self.now() + delay, callback))
        return _NoTimer()
