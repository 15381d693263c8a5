"""ConnectionThread runs every call on its one thread, in order, hands results and exceptions
back to the caller, runs its idle step between calls, and a failure of the idle step fails
the next call but not the closing step."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

from rabbitish.spark.connection_thread import ConnectionThread
from tests.support.waiting import wait_until


def test_calls_run_on_the_thread_in_order_with_their_results_and_errors():
    worker = ConnectionThread("test", idle=lambda: False)
    seen: list[tuple[str, int]] = []

    def record(n: int) -> int:
        seen.append((threading.current_thread().name, n))
        return n * 2

    assert [worker.call(lambda n=n: record(n)) for n in range(3)] == [0, 2, 4]
    assert seen == [("test", 0), ("test", 1), ("test", 2)]
    with pytest.raises(KeyError, match="nope"):
        worker.call(lambda: {}["nope"])
    assert worker.call(lambda: "still serving") == "still serving"
    worker.close(lambda: None)


def test_the_idle_step_runs_between_calls_until_it_says_it_is_done():
    steps: list[int] = []

    def idle() -> bool:
        steps.append(1)
        return len(steps) < 5

    worker = ConnectionThread("idle", idle=idle)
    wait_until(lambda: len(steps) == 5, timeout=5, message="idle steps")
    worker.call(lambda: None)  # a call wakes it: idle runs again after it
    wait_until(lambda: len(steps) == 6, timeout=5, message="idle after a call")
    worker.close(lambda: None)


def test_an_idle_failure_fails_the_next_call_and_closing_still_runs():
    def idle() -> bool:
        raise ConnectionError("lost")

    worker = ConnectionThread("failing", idle=idle)
    closed: list[str] = []
    with pytest.raises(ConnectionError, match="lost"):
        wait_until(lambda: worker.call(lambda: False), timeout=5, message="never failed")
    worker.close(lambda: closed.append(threading.current_thread().name))
    assert closed == ["failing"]
