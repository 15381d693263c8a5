"""What the broken-network tests share: a broker with short heartbeats and its management API,
the check that a broken connection left nothing behind (connections, channels, 1.0 sessions,
consumers, unacked deliveries, open transactions with their staged work, sockets), and a client
operation run in a thread of its own so the test can watch the broker while the client hangs.

The matrix of faults x operations: the default suite runs a chosen few; RABBITISH_NETFAULTS=full
(or `make netfaults`) runs every pair."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rabbitish.app import Broker
from rabbitish.testing import call_in_loop, management_url, running_broker
from tests.support.fault_proxy import FaultProxy, broker_sockets
from tests.support.management import Api
from tests.support.waiting import wait_until

HEARTBEAT = 2  # seconds: 0-9-1 peers are dropped after two silent checks, 1.0 after one
DETECTED = 4 * HEARTBEAT + 5  # longest wait for the broker to notice a vanished peer
FULL_MATRIX = os.environ.get("RABBITISH_NETFAULTS") == "full"


def answered(action: Any) -> bool:
    """Whether the client still gets its answer through this fault: a trickle, or a stall the
    heartbeat does not notice (a longer one gets the peer dropped)."""
    return action.kind == "trickle" or (action.kind == "stall" and action.seconds < HEARTBEAT)


def pick(cases: dict[str, Any], default: tuple[str, ...]) -> list[str]:
    """The case names to run: `default` in the suite, all of them with RABBITISH_NETFAULTS=full."""
    return list(cases) if FULL_MATRIX else list(default)


@contextmanager
def faulty_broker(data_dir: Path, heartbeat: int = HEARTBEAT) -> Iterator[tuple[Broker, Api]]:
    """A broker on a real data dir (commit-ok and confirms wait for the disk) with short
    heartbeats / idle time-outs, and its management API."""
    with running_broker(management=True, data_dir=str(data_dir), heartbeat=heartbeat) as broker:
        base = management_url(broker)
        _credentials, host = base.split("://", 1)[1].rsplit("@", 1)
        yield broker, Api(broker.url, f"http://{host}", "rabbitish")


def broker_and_proxy_fixtures(name: str) -> tuple[Any, Any]:
    """The `faulty` (module-scoped faulty_broker on a fresh data dir called `name`) and `proxy`
    (a FaultProxy in front of it, one a test) fixtures a fault test module assigns to itself:
    `faulty, proxy = broker_and_proxy_fixtures("netfaults")`."""

    @pytest.fixture(scope="module")
    def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, Api]]:
        with faulty_broker(tmp_path_factory.mktemp(name)) as made:
            yield made

    @pytest.fixture
    def proxy(faulty: tuple[Broker, Api]) -> Iterator[FaultProxy]:
        broker, _api = faulty
        with FaultProxy(broker.port) as made:
            yield made

    return faulty, proxy


# ---------------------------------------------------------------------- nothing left behind
def leftovers(broker: Broker, api: Api) -> dict[str, int]:
    """What is still held for clients, by kind; all zero once every client is gone."""
    queues = api.ok("GET", "/api/queues")
    channels = api.ok("GET", "/api/channels")
    transactions = api.ok("GET", "/api/transactions")
    return {
        "connections": len(api.ok("GET", "/api/connections")),
        "channels and sessions": len(channels),
        "consumers": len(api.ok("GET", "/api/consumers")),
        "unacked": sum(q.get("messages_unacknowledged", 0) for q in queues),
        "open transactions": len(transactions)
        + call_in_loop(broker, _registered_transactions, broker),
        "staged": sum(
            count for tx in transactions for name, count in tx.items() if name.startswith("staged_")
        ),
        "sockets": max(0, broker_sockets(broker.port)),
    }


def _registered_transactions(broker: Broker) -> int:
    assert broker.node is not None
    return len(broker.node.transactions)


def wait_released(broker: Broker, api: Api, timeout: float = DETECTED) -> None:
    """Wait until the broker holds nothing for any client; fail naming what is left."""
    last: dict[str, int] = {}

    def clear() -> bool:
        last.update(leftovers(broker, api))
        return not any(last.values())

    wait_until(clear, timeout=timeout, interval=0.1, message=lambda: f"still held: {last}")


# ---------------------------------------------------------------------- the client's side
@dataclass
class Seen:
    """What a client saw of its own work: what it was told is done (confirmed, committed), and
    whether its connection broke (then the last operation is in doubt)."""

    done: list[str] = field(default_factory=list)
    attempted: list[str] = field(default_factory=list)
    error: BaseException | None = None


class ClientRun:
    """`operation(seen)` in a thread: a blocking client that may hang on a vanished peer while
    the test watches the broker detect it."""

    def __init__(self, operation: Callable[[Seen], None]) -> None:
        self.seen = Seen()
        self._operation = operation
        self._thread = threading.Thread(target=self._run, name="faulted-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._operation(self.seen)
        except Exception as exc:  # the broken connection, as the client reports it
            self.seen.error = exc

    def join(self, timeout: float = 30.0) -> Seen:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the client did not finish"
        return self.seen


def run_faulted(
    broker: Broker, api: Api, proxy: FaultProxy, operation: Callable[[Seen], None], fault: Any
) -> Seen:
    """Run the client operation through the proxy until the fault fired and the broker let go
    of everything. A vanished peer is detected by the broker alone; only then does the proxy
    drop the client's socket, so that the client (still waiting for its reply) ends too."""
    run = ClientRun(operation)
    if not fault.fired_within(DETECTED):
        seen = run.join()
        raise AssertionError(f"the fault never fired; the client saw {seen}")
    if fault.action.kind == "vanish" or (
        fault.action.kind == "stall" and not answered(fault.action)
    ):
        wait_released(broker, api)
        proxy.abort_all()
    seen = run.join()
    wait_released(broker, api)
    return seen
