"""The busy-waiting selector (server/busy_wait.py) on a real socket pair: when it polls, when it
stops polling, what holds it off, and how `rabbitish serve` picks it."""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Iterator

import pytest
from rabbitish.cli.serve import busy_wait_selector, event_loop_factory, limits_problem

from rabbitish.config import Config
from rabbitish.server.busy_wait import SCHEDSTAT, BusyWaitSelector, CpuContention

WINDOW = 0.2  # long, so a loaded machine's scheduling delays stay inside it


class CountingSelector(BusyWaitSelector):
    """Counts the non-blocking polls made while busy waiting."""

    polls = 0

    def _poll(self, until: float) -> bool:
        inner = self._selector  # type: ignore[attr-defined]
        outer = self

        class Counting:
            def poll(self, timeout: float, maxevents: int) -> list:
                outer.polls += 1
                return inner.poll(timeout, maxevents)

        self._selector = Counting()  # type: ignore[assignment]
        try:
            return super()._poll(until)
        finally:
            self._selector = inner


@pytest.fixture
def pair() -> Iterator[tuple[CountingSelector, socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    selector = CountingSelector(WINDOW)
    selector.register(ours, selectors.EVENT_READ)
    yield selector, ours, theirs
    selector.close()
    ours.close()
    theirs.close()


def test_a_cold_selector_sleeps_without_polling(pair) -> None:
    selector, _ours, _theirs = pair
    assert selector.select(0.01) == []
    assert selector.polls == 0


def test_input_within_the_window_turns_polling_on_and_its_absence_off(pair) -> None:
    selector, ours, theirs = pair
    theirs.send(b"x")
    assert len(selector.select(1.0)) == 1  # ended by I/O at once: warm
    ours.recv(1)
    theirs.send(b"y")
    assert len(selector.select(1.0)) == 1
    assert selector.polls == 1  # found by the first poll, without sleeping
    ours.recv(1)
    began = time.perf_counter()
    assert selector.select(0.3) == []  # nothing comes: polls the window, then sleeps
    assert time.perf_counter() - began >= 0.3 - 0.002
    polled = selector.polls
    assert polled > 1
    assert selector.select(0.01) == []  # cold again: no polling this time
    assert selector.polls == polled


def test_a_hold_blocks_polling_and_leaves_the_pace_alone(pair) -> None:
    selector, ours, theirs = pair
    theirs.send(b"x")
    selector.select(1.0)
    ours.recv(1)
    writing = [True]
    selector.hold_while(lambda: writing[0])
    assert selector.select(0.01) == []
    assert selector.polls == 0
    writing[0] = False
    theirs.send(b"y")
    assert len(selector.select(1.0)) == 1
    assert selector.polls == 1  # still warm from before the held wait


def test_zero_timeout_never_polls(pair) -> None:
    selector, ours, theirs = pair
    theirs.send(b"x")
    selector.select(1.0)
    ours.recv(1)
    assert selector.select(0) == []
    assert selector.polls == 0


def test_serve_uses_it_only_when_turned_on(monkeypatch) -> None:
    monkeypatch.setenv("RABBITISH_EVENT_LOOP", "asyncio")  # as without uvloop installed
    assert busy_wait_selector(Config()) is None  # off by default, as RabbitMQ's +sbwt none
    selector = busy_wait_selector(Config(busy_wait_us=300))
    assert isinstance(selector, BusyWaitSelector)
    assert selector.window == pytest.approx(300e-6)
    assert selector.replies is not None  # polls only after turns that wrote
    assert len(selector.holds) == 1  # CPU contention; serve adds the store's writer
    loop = event_loop_factory(selector)()  # type: ignore[misc]
    try:
        assert loop._selector is selector  # type: ignore[attr-defined]
    finally:
        loop.close()
    assert busy_wait_selector(Config(busy_wait_us=0)) is None
    assert limits_problem(Config(busy_wait_us=-1)) == "--busy-wait-us must not be negative"


def test_it_polls_only_after_a_turn_that_wrote(pair) -> None:
    selector, ours, theirs = pair
    writes = [0]
    selector.replies = lambda: writes[0]
    theirs.send(b"x")
    selector.select(1.0)  # warm
    ours.recv(1)
    theirs.send(b"y")
    assert len(selector.select(1.0)) == 1
    assert selector.polls == 0  # nothing was written: a stream, nobody waits on us
    ours.recv(1)
    writes[0] += 1  # this turn answered
    theirs.send(b"z")
    assert len(selector.select(1.0)) == 1
    assert selector.polls == 1


def test_cpu_contention_is_the_share_of_time_spent_waiting_for_a_cpu(tmp_path) -> None:
    stat = tmp_path / "schedstat"
    stat.write_text("5000 1000000 7\n")  # on CPU, waited (ns), slices
    contention = CpuContention(stat, limit=0.10, every=0.05)
    assert contention.read() == 1_000_000
    assert not contention.high()  # the first reading only sets the baseline
    time.sleep(0.1)
    stat.write_text("5000 60001000000 9\n")  # waited a minute in a moment: oversubscribed
    assert contention.high()
    stat.write_text("5000 60001000000 9\n")
    assert contention.high()  # not read again within the period
    time.sleep(0.1)
    assert not contention.high()  # no more waiting since
    assert not CpuContention(tmp_path / "absent").high()  # no schedstat: never high


def test_this_thread_has_a_schedstat_reading() -> None:
    if not SCHEDSTAT.exists():
        pytest.skip("this kernel keeps no schedstat: busy waiting runs without the check")
    assert CpuContention().read() is not None
