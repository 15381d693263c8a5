"""The crash step the crash ledgers share: worker threads drive a broker process until they have
started a random amount of work, the broker crashes, every worker must notice, and the broker
starts again on the same data dir and port (tests/e2e/test_*_crash.py, tests/integration's
kill -9 tests).

A crash is one of FAULTS: `kill` is SIGKILL alone (the page cache keeps everything written);
`drop` and `torn` are power cuts (tests/support/powerloss): the broker runs on a FUSE file system
that keeps unsynced data in memory, and the cut SIGKILLs it and throws that data away (`torn`:
keeps a random prefix of each file's last unsynced write) in the same instant."""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerError, BrokerProcess
from tests.support.powerloss.mount import CUTS, PowerLoss, skip_reason
from tests.support.waiting import wait_until

# A worker: (broker URL, its name, the test's ledger, its own random source); it returns once
# the broker is gone.
Worker = Callable[[str, str, object, random.Random], None]

FAULTS = ("kill", "drop", "torn")
# The power-cut variants run in the suite with a few cuts each; `make powerloss` runs 50.
FAULT_PARAMS = [
    pytest.param("kill", id="kill"),
    pytest.param("drop", id="power-drop", marks=pytest.mark.powerloss),
    pytest.param("torn", id="power-torn", marks=pytest.mark.powerloss),
]


@contextlib.contextmanager
def crash_site(tmp_path: Path, fault: str, rng: random.Random) -> Iterator[CrashSite]:
    """Where a ledger's broker keeps its data for `fault`: a plain directory for `kill`, the
    power-loss file system (mounted for the test's duration) for a power cut. Skips the test
    when FUSE is not usable here."""
    if fault == "kill":
        yield CrashSite(tmp_path / "data", None)
        return
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with PowerLoss(tmp_path / "powerloss", fault, random.Random(rng.random())) as power:
        site = CrashSite(power.data_dir, power)
        try:
            yield site
        finally:
            _report(site)


def _report(site: CrashSite) -> None:
    """With POWERLOSS_REPORT naming a file, append what every cut of this test lost to it
    (`make powerloss` writes the figures of docs/reliability.md this way)."""
    target = os.environ.get("POWERLOSS_REPORT")
    if target and site.power is not None:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        with open(target, "a") as out:
            out.write(f"## {test}: {len(site.power.cuts)} cuts\n{site.report()}\n")


class CrashSite:
    """A data dir and how a crash hits it."""

    def __init__(self, data_dir: Path, power: PowerLoss | None) -> None:
        self.data_dir = data_dir
        self.power = power

    def rounds(self, kills: int) -> int:
        """How many crashes a ledger runs: its own count for kill -9, POWERLOSS_CUTS for cuts."""
        return kills if self.power is None else CUTS

    def crash(self, broker: BrokerProcess) -> None:
        """SIGKILL the broker; on the power-loss file system, cut the power in the same step."""
        if self.power is None:
            broker.kill()
        else:
            self.power.cut(broker.proc)
            broker.kill()  # reaps it

    def restart(self, broker: BrokerProcess) -> None:
        """Start the broker again on the data dir. The store must open; a refusal must be one
        line that names the way out, and still fails the ledger (after a crash it never may)."""
        try:
            broker.start()
        except BrokerError as err:
            lines = [line for line in broker.output().splitlines() if line.strip()]
            last = lines[-1] if lines else "<no output>"
            cuts = "; ".join(self.power.cuts[-1:]) if self.power else "kill -9"
            raise AssertionError(
                f"the store did not open after a crash ({cuts}): {last}\n{err}"
            ) from err

    def report(self) -> str:
        if self.power is None:
            return ""
        return "\n".join(f"cut {n}: {line}" for n, line in enumerate(self.power.cuts, 1))


def kill_mid_work(
    broker: BrokerProcess,
    worker: Worker,
    ledger: object,
    started: Callable[[], int],
    *,
    rng: random.Random,
    round_: int,
    workers: int,
    least: int,
    most: int,
    site: CrashSite | None = None,
) -> None:
    """Run `workers` threads of `worker` named r<round>w<n>; crash the broker (`site`'s fault,
    kill -9 without one) once `started()` (the ledger's count of transactions begun) grew by a
    random number in [least, most], at least `least` however slow the machine; then start it
    again."""
    site = site or CrashSite(Path(broker.data_dir), None)
    threads = [
        threading.Thread(
            target=worker,
            args=(broker.url, f"r{round_}w{w}", ledger, random.Random(rng.random())),
            daemon=True,
        )
        for w in range(workers)
    ]
    for thread in threads:
        thread.start()
    target = started() + rng.randint(least, most)
    wait_until(
        lambda: started() >= target,
        timeout=30,
        message=lambda: f"workers started {started()} of {target} transactions",
    )
    site.crash(broker)
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive(), "a worker did not notice the crash"
    site.restart(broker)
