"""Busy waiting before the event loop sleeps, opt-in (`rabbitish serve --busy-wait-us 300`).
Erlang's schedulers can do the same (`+sbwt`), but RabbitMQ 3.10 turns it off (its rabbitmq-env
starts beam with `+sbwt none +sbwtdcpu none +sbwtdio none`), and so does rabbitish by default:
it buys latency with CPU per round trip.

A request/response client (publish, then wait for the delivery or the reply) leaves the broker
idle for the few tens of microseconds its next message takes. If the loop sleeps in that gap,
the kernel parks the CPU, and waking a parked CPU costs more than all the broker's own work on a
small message (on a virtual machine, 30-50 us each way). So while traffic comes in such short
gaps, the selector polls without sleeping for up to `window` seconds before it blocks.

It polls only where it pays, and never for longer than the window:
- after a loop turn that wrote to a socket (a reply or a delivery someone may be waiting on to
  send the next message; a stream of publishes or acks with no answer is not waited on), and
  only if the last wait ended with input inside the window (a wait that outlasted it, or that
  only a timer ended, turns polling off until a short one comes again);
- not while a hold says no: the store holds it while a batch is on its writer thread, which
  needs the GIL that a polling loop would keep taking back first; and `CpuContention` holds it
  while the loop's own thread has to wait for a CPU (more runnable threads than CPUs), so
  polling does not take a CPU that other work is queueing for.
`--busy-wait-us 0` (the default) turns it off; embedded brokers (`rabbitish.testing`) never
poll, since their loop shares the GIL with the test's own code."""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEDSTAT = Path("/proc/thread-self/schedstat")  # ns on a CPU, ns runnable but waiting, slices
CONTENTION_LIMIT = 0.10  # share of the time this thread waited for a CPU
CONTENTION_EVERY = 0.5  # seconds between readings


class CpuContention:
    """Whether the CPUs are oversubscribed: the share of the last period in which the calling
    thread (the event loop's) was runnable but waited for a CPU, from Linux's schedstat, read
    at most once per `every` seconds. On an idle or lightly used machine it is about 0; with
    more runnable threads than CPUs it rises at once (two CPU hogs on two CPUs: about 30%).
    Without schedstat, never high."""

    def __init__(
        self,
        path: Path = SCHEDSTAT,
        limit: float = CONTENTION_LIMIT,
        every: float = CONTENTION_EVERY,
    ) -> None:
        self.path = path
        self.limit = limit
        self.every = every
        self._next = 0.0
        self._since: tuple[float, int] | None = None  # (monotonic time, run delay ns)
        self._high = False

    def high(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return self._high
        self._next = now + self.every
        delay = self.read()
        if delay is None:
            return False
        if self._since is not None:
            then, before = self._since
            self._high = (delay - before) / 1e9 > self.limit * (now - then)
        self._since = (now, delay)
        return self._high

    def read(self) -> int | None:
        """Nanoseconds the calling thread has waited on a run queue so far."""
        try:
            return int(self.path.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            return None


class BusyWaitSelector(selectors.EpollSelector):
    """An epoll selector that polls for up to `window` seconds before a blocking wait.

    `replies()` counts the socket writes made so far (`SocketProtocol`); polling follows only
    a loop turn in which it moved (without it, any turn)."""

    def __init__(self, window: float, replies: Callable[[], int] | None = None) -> None:
        super().__init__()
        self.window = window
        self.replies = replies
        self.holds: list[Callable[[], bool]] = []  # while any returns True: no polling
        self._warm = False  # the last wait ended with input inside the window
        self._replies_seen = 0

    def hold_while(self, held: Callable[[], bool]) -> None:
        self.holds.append(held)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return super().select(timeout)
        if any(held() for held in self.holds):
            return super().select(timeout)  # this wait says nothing about the client's pace
        replied = True
        if self.replies is not None:
            replies = self.replies()
            replied, self._replies_seen = replies != self._replies_seen, replies
        began = time.perf_counter()
        if self._warm and replied:
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
