"""Binding the event loop's thread to one CPU (server/cpu_binding.py), each case in a thread of
its own so the test process's threads keep their CPUs."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from rabbitish.server.cpu_binding import bind_loop_thread, current_cpu

T = TypeVar("T")

needs_affinity = pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
    reason="binding needs CPU affinity (Linux) and at least two allowed CPUs",
)


def in_new_thread(work: Callable[[], T]) -> T:
    box: list[T] = []
    thread = threading.Thread(target=lambda: box.append(work()))
    thread.start()
    thread.join(timeout=10)
    assert box, "the thread did not finish"
    return box[0]


@needs_affinity
def test_current_cpu_is_one_the_thread_may_run_on():
    assert current_cpu() in os.sched_getaffinity(0)


@needs_affinity
def test_db_binds_only_the_calling_thread_to_the_cpu_it_runs_on():
    before = os.sched_getaffinity(0)
    cpu, inside = in_new_thread(lambda: (bind_loop_thread("db"), os.sched_getaffinity(0)))
    assert cpu in before
    assert inside == {cpu}
    assert os.sched_getaffinity(0) == before


@needs_affinity
def test_u_leaves_the_thread_unbound():
    before = os.sched_getaffinity(0)
    assert in_new_thread(lambda: (bind_loop_thread("u"), os.sched_getaffinity(0))) == (
        None,
        before,
    )


@needs_affinity
def test_a_thread_allowed_one_cpu_is_left_as_it_is():
    only = min(os.sched_getaffinity(0))

    def work() -> tuple[int | None, set[int]]:
        os.sched_setaffinity(0, {only})
        return bind_loop_thread("db"), os.sched_getaffinity(0)

    assert in_new_thread(work) == (None, {only})
