"""One full run: both brokers side by side, every scenario on each, then the comparison.

The two targets run concurrently (each in its own thread, each scenario on one target at a
time), which roughly halves the wall time; RabbitMQ's start and restart dominate it.

The reference runs every scenario twice (REFERENCE_PASSES): a scenario whose reference record
changes between the passes is not deterministic, so its comparison means nothing; it is
reported as unstable and fails the run."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from compat_matrix.compare import Comparison, compare, load_expected, unknown_entries
from compat_matrix.registry import Scenario, all_scenarios
from compat_matrix.runner import Result, Target, run_passes
from compat_matrix.targets import rabbitish_target, rabbitmq_target


@dataclass
class MatrixRun:
    comparisons: list[Comparison]
    versions: tuple[str, str]
    seconds: float
    stale: list[str]
    raw: dict[str, dict[str, Result]]
    reference_passes: int = 1

    @property
    def unexpected(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.status == "unexpected"]

    @property
    def reference_failures(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.reference_ok]

    @property
    def unstable(self) -> list[Comparison]:
        """Scenarios whose reference record differed between two passes."""
        return [c for c in self.comparisons if c.status == "unstable"]


REFERENCE_PASSES = 2


def _run_on(
    factory: Callable[[], contextlib.AbstractContextManager[Target]],
    scenarios: list[Scenario],
    progress: Callable[[str], None],
    passes: int = 1,
) -> tuple[Target, list[dict[str, Result]]]:
    started = time.monotonic()
    with factory() as target:
        progress(f"{target.name} {target.version} up after {time.monotonic() - started:.1f} s")
        results = run_passes(target, scenarios, passes, progress)
        progress(f"{target.name}: done after {time.monotonic() - started:.1f} s")
        return target, results


def select(pattern: str | None = None) -> list[Scenario]:
    """All scenarios, or those whose key contains `pattern`."""
    chosen = all_scenarios()
    return [s for s in chosen if pattern is None or pattern in s.key]


def run_matrix(
    scenarios: list[Scenario] | None = None,
    progress: Callable[[str], None] = print,
    factories: tuple[Any, Any] = (rabbitish_target, rabbitmq_target),
    reference_passes: int = REFERENCE_PASSES,
) -> MatrixRun:
    """Start both brokers, run every scenario on each (`reference_passes` times on the
    reference), compare against the reference's first pass."""
    if reference_passes < 1:
        raise ValueError("the reference needs at least one pass")
    chosen = scenarios if scenarios is not None else select()
    started = time.monotonic()
    lock = threading.Lock()

    def say(message: str) -> None:
        with lock:
            progress(message)

    with ThreadPoolExecutor(2, thread_name_prefix="compat-target") as pool:
        ours_future = pool.submit(_run_on, factories[0], chosen, say)
        reference_future = pool.submit(_run_on, factories[1], chosen, say, reference_passes)
        ours_target, (ours,) = ours_future.result()
        reference_target, (reference, *again) = reference_future.result()
    allowed = load_expected()
    comparisons = compare(
        chosen, ours, reference, allowed, (reference_target.name, ours_target.name), again
    )
    raw = {ours_target.name: ours, reference_target.name: reference}
    for run, results in enumerate(again, start=2):
        raw[f"{reference_target.name}.pass{run}"] = results
    return MatrixRun(
        comparisons,
        (ours_target.version, reference_target.version),
        time.monotonic() - started,
        unknown_entries(allowed, all_scenarios()),
        raw,
        reference_passes,
    )


@contextlib.contextmanager
def url_target(name: str, url: str) -> Iterator[Target]:
    """An already running broker (no restarts: restart scenarios are skipped)."""
    yield Target(name, "running", url, None)
