"""A thread that owns the streaming reader's connection. Spark calls the reader's planner only
between micro-batches, and a blocking connection takes deliveries in only while its thread
reads it: left to Spark's calls, the next batch's messages would wait in the socket while Spark runs
this one. So the connection lives on a thread of its own; every call that touches it runs
there (the connection belongs to one thread), and between calls the thread runs the
reader's idle step, which takes deliveries in and turns them into rows."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class _Job:
    def __init__(self, work: Callable[[], Any], last: bool = False) -> None:
        self.work = work
        self.last = last
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class ConnectionThread:
    """Runs `call`s one at a time on its thread; `idle()` runs between them and says whether
    it wants to run again (False: the thread sleeps until the next call). A call made while
    `idle` waits on the connection interrupts it through the waker set with `set_waker`. An
    exception `idle` raises is raised by the next call instead of running it."""

    def __init__(self, name: str, idle: Callable[[], bool]) -> None:
        self._idle = idle
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._waker: Callable[[], None] | None = None
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def set_waker(self, waker: Callable[[], None]) -> None:
        """What makes `idle` return early (the connection's `wake`);
        set on the thread, once the connection exists."""
        self._waker = waker

    def call(self, work: Callable[[], T]) -> T:
        """`work()` on the thread; its result, or its exception raised here."""
        if threading.current_thread() is self._thread:
            return work()
        job = _Job(work)
        self._jobs.put(job)
        self._wake()
        job.done.wait()
        if job.error is not None:
            raise job.error
        result: T = job.result
        return result

    def close(self, last: Callable[[], None]) -> None:
        """Runs `last` on the thread once the calls already made have run (even after `idle`
        failed), then ends the thread; what `last` raises is raised here."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("the connection thread cannot close itself")
        job = _Job(last, last=True)
        self._jobs.put(job)
        self._wake()
        self._thread.join()
        if job.error is not None:
            raise job.error

    def _wake(self) -> None:
        waker = self._waker
        if waker is not None:
            with contextlib.suppress(Exception):  # a closed connection has nothing to interrupt
                waker()

    def _run(self) -> None:
        busy = True
        while True:
            try:
                job = self._jobs.get(block=not busy)
            except queue.Empty:
                try:
                    busy = self._idle()
                except Exception as error:
                    self._failed, busy = error, False
                continue
            try:
                if self._failed is not None and not job.last:
                    raise self._failed
                job.result = job.work()
            except BaseException as error:  # handed to the caller, re-raised there
                job.error = error
            job.done.set()
            if job.last:
                return
            busy = True
