"""The half-transaction registry on a scheduler whose time the test moves: check-back timing,
counts and the rollback after the last check, decisions remembered up to a bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rabbitish.engine import half as half_module
from rabbitish.engine.half import HalfSettings
from rabbitish.engine.message import Message
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import CODEC


class _Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SteppedScheduler:
    """Time stands still until `advance` moves it, firing the timers that fall due."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.timers: list[tuple[float, _Timer, Callable[[], None]]] = []

    def now(self) -> float:
        return self.time

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer()
        self.timers.append((self.time + delay, timer, callback))
        return timer

    def advance(self, seconds: float) -> None:
        end = self.time + seconds
        while True:
            due = sorted((t for t in self.timers if t[0] <= end), key=lambda t: t[0])
            if not due:
                break
            self.timers.remove(due[0])
            self.time = max(self.time, due[0][0])
            if not due[0][1].cancelled:
                due[0][2]()
        self.time = end


def _half(txn: str, **headers: Any) -> Message:
    raw = CODEC.encode(headers={"x-half-txn": txn, **headers})
    return Message("", "work", raw, b"job", CODEC)


@pytest.fixture
def clock() -> SteppedScheduler:
    return SteppedScheduler()


@pytest.fixture
def vhost(clock: SteppedScheduler) -> VirtualHost:
    vhost = VirtualHost("/", clock, half_settings=HalfSettings(check_interval=5, check_max=2))
    vhost.declare_queue("work", owner=None)
    vhost.declare_queue("checks", owner=None)
    return vhost


def _checks(vhost: VirtualHost) -> list[tuple[Any, Any, Any]]:
    got = []
    while (delivery := vhost.queues["checks"].get(settled=True)) is not None:
        message = delivery.entry.message
        fields = CODEC.to_fields(message.raw_properties)
        headers = fields["headers"]  # typed: FieldValue(kind, value)
        half_id, count = headers["x-half-txn"], headers["x-check-count"]
        assert half_id.kind == "longstr" and count.kind in ("long", "signedint")
        got.append((half_id.value.decode(), count.value, fields["correlation_id"]))
    return got


def test_checks_after_immunity_then_every_interval_then_rollback(vhost, clock):
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks", "x-check-immunity": 10}))
    work = vhost.queues["work"]
    assert (work.message_count, work.half) == (0, 1)
    clock.advance(9.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 1, "T")]
    clock.advance(4.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 2, "T")]
    assert vhost.half.get("T").checks_sent == 2
    clock.advance(5)  # the last check went unanswered: rolled back
    assert _checks(vhost) == [] and vhost.half.list() == []
    assert (work.message_count, work.half) == (0, 0)
    assert vhost.half.decide("T", False) is True  # the same decision again: a no-op
    assert vhost.half.decide("T", True) is False


def test_default_immunity_is_sixty_seconds_and_a_decision_stops_the_checks(vhost, clock):
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks"}))
    clock.advance(59.9)
    assert _checks(vhost) == []
    clock.advance(0.1)
    assert _checks(vhost) == [("T", 1, "T")]
    assert vhost.half.decide("T", True) is True
    clock.advance(60)
    assert _checks(vhost) == []
    assert vhost.queues["work"].message_count == 1


def test_a_check_queue_named_later_starts_the_timer_from_the_first_message(vhost, clock):
    vhost.publish("", "work", _half("T"))
    clock.advance(30)
    vhost.publish("", "work", _half("T", **{"x-check-queue": "checks", "x-check-immunity": 20}))
    assert vhost.half.get("T").messages == 2
    clock.advance(0)  # 30 s since the first message already exceed the immunity
    assert _checks(vhost) == [("T", 1, "T")]


def test_decisions_are_remembered_up_to_a_bound(vhost, monkeypatch):
    monkeypatch.setattr(half_module, "DECIDED_KEEP", 2)
    for txn in ("a", "b", "c"):
        vhost.publish("", "work", _half(txn))
        assert vhost.half.decide(txn, True)
    assert list(vhost.half.decided) == ["b", "c"]
    assert vhost.half.decide("a", True) is False
    assert vhost.half.decide("c", True) is True
