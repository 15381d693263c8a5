"""The transaction registry's idle timeout (--transaction-timeout), on a scheduler whose time
the test moves: a transaction holding work is ended through its front end's callback once it
was idle for the timeout, activity restarts the clock, and empty, prepared and ended
transactions are never timed out."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rabbitish.engine.clock import TimerHandle
from rabbitish.engine.delivery import Outcome
from rabbitish.engine.node import Node
from rabbitish.engine.transactions import Transaction, TxState
from tests.support.engine import CODEC, message

TIMEOUT = 10.0


class Timer:
    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due, self.callback, self.cancelled = due, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class SteppedScheduler:
    """Time moves only when the test says so; due timers then fire in order."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.timers: list[Timer] = []

    def now(self) -> float:
        return self.time

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = Timer(self.time + delay, callback)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        end = self.time + seconds
        while True:
            due = [t for t in self.timers if not t.cancelled and t.due <= end]
            if not due:
                break
            timer = min(due, key=lambda t: t.due)
            self.timers.remove(timer)
            self.time = max(self.time, timer.due)
            timer.callback()
        self.time = end

    @property
    def armed(self) -> int:
        return sum(not t.cancelled for t in self.timers)


@pytest.fixture
def scheduler() -> SteppedScheduler:
    return SteppedScheduler()


@pytest.fixture
def node(scheduler) -> Node:
    return Node(scheduler, codec=CODEC, transaction_timeout=TIMEOUT)


@pytest.fixture
def timed_out() -> list[Transaction]:
    return []


def begin(node: Node, timed_out: list[Transaction]) -> Transaction:
    """A transaction whose front end rolls it back when told it timed out."""

    def end(tx: Transaction) -> None:
        timed_out.append(tx)
        tx.rollback()

    return node.transactions.begin(owner="session", on_timeout=end)


def test_idle_work_is_ended_after_the_timeout(node, scheduler, timed_out):
    queue = node.vhosts["/"].declare_queue("q", owner=None)
    tx = begin(node, timed_out)
    node.vhosts["/"].publish("", "q", message(b"staged"), tx=tx)
    scheduler.advance(TIMEOUT - 0.5)
    assert timed_out == [] and tx.state is TxState.ACTIVE
    scheduler.advance(0.5)
    assert timed_out == [tx] and tx.state is TxState.ROLLED_BACK
    assert node.transactions.get(tx.id) is None and queue.message_count == 0
    assert scheduler.armed == 0


def test_activity_restarts_the_idle_clock_with_one_timer(node, scheduler, timed_out):
    vhost = node.vhosts["/"]
    queue = vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", message(b"held"))
    held = queue.get(settled=False)
    tx = begin(node, timed_out)
    vhost.publish("", "q", message(b"a"), tx=tx)
    scheduler.advance(TIMEOUT * 0.6)
    tx.stage_settle([held], Outcome.ACK)  # staged work is activity
    for _ in range(4):  # 30 s in all, never 10 s idle
        scheduler.advance(TIMEOUT * 0.6)
        tx.touch()  # so is a method naming the transaction
        assert scheduler.armed <= 1
    assert timed_out == []
    scheduler.advance(TIMEOUT)
    assert timed_out == [tx]
    assert not held.settled  # rollback hands the staged ack back, still outstanding


def test_an_empty_transaction_is_never_timed_out(node, scheduler, timed_out):
    tx = begin(node, timed_out)
    scheduler.advance(TIMEOUT * 10)
    assert timed_out == [] and tx.state is TxState.ACTIVE and scheduler.armed == 0


@pytest.mark.parametrize("end", ["commit", "rollback", "prepare"])
def test_ended_and_prepared_transactions_are_no_longer_timed(node, scheduler, timed_out, end):
    node.vhosts["/"].declare_queue("q", owner=None)
    tx = begin(node, timed_out)
    node.vhosts["/"].publish("", "q", message(b"m"), tx=tx)
    getattr(tx, end)()
    assert scheduler.armed == 0
    scheduler.advance(TIMEOUT * 2)
    assert timed_out == []


def test_without_a_timeout_or_a_callback_nothing_is_timed(scheduler, timed_out):
    off = Node(scheduler, codec=CODEC)
    off.vhosts["/"].declare_queue("q", owner=None)
    tx = begin(off, timed_out)
    off.vhosts["/"].publish("", "q", message(b"m"), tx=tx)
    on = Node(scheduler, codec=CODEC, transaction_timeout=TIMEOUT)
    on.vhosts["/"].declare_queue("q", owner=None)
    silent = on.transactions.begin(owner="no callback")
    on.vhosts["/"].publish("", "q", message(b"m"), tx=silent)
    assert scheduler.armed == 0
    scheduler.advance(TIMEOUT * 2)
    assert timed_out == [] and tx.state is silent.state is TxState.ACTIVE
