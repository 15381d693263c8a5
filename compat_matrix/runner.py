"""Run every scenario against one target URL and keep one normalised record per scenario.

Each scenario runs in a worker thread with a time limit, so a broker that never answers marks
that scenario "timeout" instead of hanging the run. Restart scenarios are grouped: every one
runs its part before the restart, the target restarts once, then every one runs the rest.

`run_passes` runs every scenario more than once on the same target (the reference, to see that
its records are stable). Each pass has its own name prefix, so passes share no queues or
exchanges, as scenarios within a pass share none; the restart scenarios of all passes go
through the target's one restart."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pika.exceptions

from compat_matrix.record import jsonable, normalise
from compat_matrix.registry import Scenario
from compat_matrix.session import Session, describe_error

SCENARIO_TIMEOUT = 20.0


@dataclass
class Result:
    """What one scenario recorded on one target."""

    key: str
    outcome: str
    events: list[Any]
    seconds: float = 0.0

    @property
    def record(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "events": self.events}


@dataclass
class Target:
    """A broker to run against: its URL and how to restart it in place (keeping its data)."""

    name: str
    version: str
    url: str
    restart: Callable[[], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, pika.exceptions.AMQPError | OSError):
        return "error: " + " ".join(str(part) for part in describe_error(exc))
    try:
        from compat_matrix.clients import describe_aio_error

        described = describe_aio_error(exc)
    except Exception:  # a harness bug while describing a harness bug: keep the original
        described = ["raised", type(exc).__name__]
    if described[0] != "raised":
        return "error: " + " ".join(str(part) for part in described)
    return f"error: {type(exc).__name__}: {exc}"


def _in_thread(fn: Callable[[], Any], timeout: float) -> str:
    """Run `fn` in a daemon thread; "ok", "timeout" or a description of what it raised."""
    box: dict[str, BaseException] = {}

    def body() -> None:
        try:
            fn()
        except BaseException as exc:
            box["exc"] = exc

    worker = threading.Thread(target=body, daemon=True, name="compat-scenario")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return "timeout"
    if "exc" in box:
        return _describe_failure(box["exc"])
    return "ok"


async def _run_async(scenario: Scenario, session: Session) -> None:
    try:
        await scenario.steps(session)
    finally:
        for cleanup in session.async_cleanups:
            try:
                await asyncio.wait_for(cleanup(), 5)
            except Exception:
                pass


def _finish(scenario: Scenario, session: Session, outcome: str, started: float) -> Result:
    events = normalise(jsonable(session.events), session.prefix)
    outcome = normalise(outcome, session.prefix)
    return Result(scenario.key, outcome, events, time.monotonic() - started)


def run_one(scenario: Scenario, session: Session) -> Result:
    """Run a plain (non-restart) scenario to completion."""
    started = time.monotonic()

    def steps() -> None:
        try:
            if scenario.is_async:
                asyncio.run(_run_async(scenario, session))
            else:
                scenario.steps(session)
        finally:
            session.close()

    return _finish(scenario, session, _in_thread(steps, SCENARIO_TIMEOUT), started)


@dataclass
class _Pending:
    scenario: Scenario
    session: Session
    generator: Generator[Any, None, None] | None
    outcome: str
    started: float


def _before_restart(scenario: Scenario, session: Session) -> _Pending:
    pending = _Pending(scenario, session, None, "ok", time.monotonic())

    def first_half() -> None:
        pending.generator = scenario.steps(session)
        next(pending.generator)

    pending.outcome = _in_thread(first_half, SCENARIO_TIMEOUT)
    return pending


def _after_restart(pending: _Pending) -> Result:
    def second_half() -> None:
        pending.session.restarted()
        try:
            if pending.generator is not None:
                next(pending.generator, None)
        finally:
            pending.session.close()

    if pending.outcome == "ok":
        pending.outcome = _in_thread(second_half, SCENARIO_TIMEOUT)
    return _finish(pending.scenario, pending.session, pending.outcome, pending.started)


def run_target(
    target: Target,
    scenarios: Iterable[Scenario],
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Result]:
    """Every scenario against `target`; restart scenarios need `target.restart`."""
    return run_passes(target, scenarios, 1, progress)[0]


def run_passes(
    target: Target,
    scenarios: Iterable[Scenario],
    passes: int,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[dict[str, Result]]:
    """Every scenario `passes` times against `target`: one result dict per pass."""
    logging.getLogger("pika").setLevel(logging.CRITICAL)
    logging.getLogger("aiormq").setLevel(logging.CRITICAL)
    chosen = list(scenarios)
    tokens = [secrets.token_hex(3) for _ in range(passes)]
    results: list[dict[str, Result]] = [{} for _ in range(passes)]

    def session(run: int, index: int) -> Session:
        return Session(target.url, f"cm{tokens[run]}-{index}.")

    for run in range(passes):
        if run:
            progress(f"{target.name}: pass {run + 1} of {passes}")
        for index, scenario in enumerate(chosen):
            if not scenario.restart:
                results[run][scenario.key] = run_one(scenario, session(run, index))
    restarts = [(i, s) for i, s in enumerate(chosen) if s.restart]
    if restarts and target.restart is None:
        for run in range(passes):
            for _, scenario in restarts:
                results[run][scenario.key] = Result(scenario.key, "skipped: no restart", [])
    elif restarts:
        pending = [
            (run, _before_restart(scenario, session(run, i)))
            for run in range(passes)
            for i, scenario in restarts
        ]
        progress(f"{target.name}: restarting for {len(pending)} restart scenarios")
        started = time.monotonic()
        assert target.restart is not None
        target.restart()
        progress(f"{target.name}: restarted in {time.monotonic() - started:.1f} s")
        for run, item in pending:
            results[run][item.scenario.key] = _after_restart(item)
    return [{s.key: got[s.key] for s in chosen} for got in results]
