"""The kill step the crash ledgers share: worker threads drive a broker process until they have
started a random amount of work, the broker is killed with SIGKILL, every worker must notice, and
the broker starts again on the same data dir and port (tests/e2e/test_*_crash.py)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from tests.support.broker_process import BrokerProcess
from tests.support.waiting import wait_until

# A worker: (broker URL, its name, the test's ledger, its own random source); it returns once
# the broker is gone.
Worker = Callable[[str, str, object, random.Random], None]


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
) -> None:
    """Run `workers` threads of `worker` named r<round>w<n>; kill the broker once `started()`
    (the ledger's count of transactions begun) grew by a random number in [least, most], at
    least `least` however slow the machine; then start it again."""
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
    broker.kill()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive(), "a worker did not notice the crash"
    broker.start()
