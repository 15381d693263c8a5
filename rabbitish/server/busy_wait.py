"""Busy waiting before the event loop sleeps, as RabbitMQ's Erlang schedulers do (`+sbwt`).

A request/response client (publish, then wait for the delivery or the reply) leaves the broker
idle for the few tens of microseconds its next message takes. If the loop sleeps in that gap,
the kernel parks the CPU, and waking a parked CPU costs more than all the broker's own work on a
small message (on a virtual machine, 30-50 us each way). So while traffic comes in such short
gaps, the selector polls without sleeping for up to `window` seconds before it blocks.

It costs CPU only while it pays: the loop polls only if its last wait ended with I/O inside the
window (a wait that outlasted it, or that only a timer ended, turns polling off until a short
one comes again), never for longer than the window, and not while a hold says no. The store
holds it while a batch is on its writer thread: that thread needs the GIL, which a polling loop
would keep taking back first. `rabbitish serve --busy-wait-us 0` turns it off; embedded brokers
(`rabbitish.testing`) never poll, since their loop shares the GIL with the test's own code."""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable
from typing import Any

DEFAULT_WINDOW_US = 300


class BusyWaitSelector(selectors.EpollSelector):
    """An epoll selector that polls for up to `window` seconds before a blocking wait."""

    def __init__(self, window: float) -> None:
        super().__init__()
        self.window = window
        self.holds: list[Callable[[], bool]] = []  # while any returns True: no polling
        self._warm = False  # the last wait ended with I/O inside the window

    def hold_while(self, held: Callable[[], bool]) -> None:
        self.holds.append(held)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return super().select(timeout)
        if any(held() for held in self.holds):
            return super().select(timeout)  # this wait says nothing about the client's pace
        began = time.perf_counter()
        if self._warm:
            window = self.window if timeout is None else min(self.window, timeout)
            if self._poll(began + window):
                return super().select(0)
            if timeout is not None:
                timeout = max(0.0, timeout - window)
        ready = super().select(timeout)
        self._warm = bool(ready) and time.perf_counter() - began < self.window
        return ready

    def _poll(self, until: float) -> bool:
        """True as soon as some file descriptor is ready, False once `until` has passed (the
        readiness stays set for the select that follows: epoll here is level-triggered)."""
        poll: Any = self._selector.poll  # type: ignore[attr-defined]
        clock = time.perf_counter
        while not poll(0, 1):
            if clock() >= until:
                return False
        return True
