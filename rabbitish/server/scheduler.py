"""The engine's Scheduler on an asyncio loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rabbitish.engine.clock import TimerHandle


class LoopScheduler:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def now(self) -> float:
        return self.loop.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return self.loop.call_later(delay, callback)
