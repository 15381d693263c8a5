"""Brokers for tests: `running_broker()` runs one in a background thread for synchronous code
(pika BlockingConnection, kombu); `call_in_loop()` runs engine code on that broker's loop; and
`snapshot()` / `reset()` remove what a test declared (the pytest plugin's `amqp_reset`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rabbitish.app import Broker

T = TypeVar("T")
TIMEOUT = 10.0


@contextmanager
def running_broker(management: bool = False, **overrides: Any) -> Iterator[Broker]:
    """A broker on an ephemeral port (in-memory store unless told otherwise), in its own thread
    with its own event loop (`broker.loop`); stopped when the block exits. No management API
    unless `management=True` (then on an ephemeral port: `management_url(broker)`)."""
    overrides.setdefault("port", 0)
    overrides.setdefault("data_dir", ":memory:")
    overrides.setdefault("management_port", 0)
    broker = Broker(**overrides)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(broker.start())
        except BaseException as exc:  # reported to the caller below
            failure.append(exc)
            started.set()
            loop.close()
            return
        started.set()
        loop.run_forever()
        loop.run_until_complete(broker.stop())
        loop.close()

    thread = threading.Thread(target=run, name="rabbitish-broker", daemon=True)
    thread.start()
    if not started.wait(TIMEOUT):
        raise TimeoutError(f"broker did not start within {TIMEOUT:.0f} s")
    if failure:
        raise failure[0]
    try:
        if management:
            enable_management(broker)
        yield broker
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(TIMEOUT)


def call_in_loop(broker: Broker, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` on the broker's event loop (engine state is only touched there) and
    return its result."""
    assert broker.loop is not None, "broker not started"
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)

    broker.loop.call_soon_threadsafe(run)
    return future.result(TIMEOUT)


def enable_management(broker: Broker) -> int:
    """Start the management API of a thread broker on an ephemeral port (once); its port."""
    assert broker.loop is not None, "broker not started"
    coro = broker.start_management(0)
    return asyncio.run_coroutine_threadsafe(coro, broker.loop).result(TIMEOUT)


def management_url(broker: Broker) -> str:
    """http://user:password@host:port of a broker's management API."""
    if broker.management_port is None:
        raise RuntimeError("the management API is not running")
    user, password = next(iter(broker.config.users.items()))
    host = broker.url.rsplit("@", 1)[1].rsplit(":", 1)[0]
    return f"http://{user}:{password}@{host}:{broker.management_port}"


# ---------------------------------------------------------------------- reset between tests
@dataclass
class Snapshot:
    """The queues, exchanges and bindings that existed when it was taken (by identity)."""

    queues: set[int] = field(default_factory=set)
    exchanges: set[int] = field(default_factory=set)
    bindings: set[int] = field(default_factory=set)
    keep: list[Any] = field(default_factory=list)  # keeps the objects alive: ids stay unique


def snapshot(broker: Broker) -> Snapshot:
    return call_in_loop(broker, _take_snapshot, broker)


def reset(broker: Broker, before: Snapshot) -> int:
    """Delete every queue, exchange and binding created since `before`; how many went."""
    return call_in_loop(broker, _reset, broker, before)


def _take_snapshot(broker: Broker) -> Snapshot:
    snap = Snapshot()
    assert broker.node is not None
    for vhost in broker.node.vhosts.values():
        for queue in vhost.queues.values():
            snap.queues.add(id(queue))
            snap.keep.append(queue)
        for exchange in vhost.exchanges.values():
            snap.exchanges.add(id(exchange))
            snap.keep.append(exchange)
            for binding in exchange.bindings.values():
                snap.bindings.add(id(binding))
                snap.keep.append(binding)
    return snap


def _reset(broker: Broker, before: Snapshot) -> int:
    assert broker.node is not None
    removed = 0
    for vhost in broker.node.vhosts.values():
        for queue in [q for q in vhost.queues.values() if id(q) not in before.queues]:
            vhost.delete_queue_object(queue)
            removed += 1
        for exchange in [e for e in vhost.exchanges.values() if id(e) not in before.exchanges]:
            vhost.delete_exchange(exchange.name)
            removed += 1
        for exchange in list(vhost.exchanges.values()):
            for binding in list(exchange.bindings.values()):
                if id(binding) not in before.bindings:
                    vhost.unbind(
                        binding.destination,
                        exchange.name,
                        binding.routing_key,
                        binding.arguments,
                    )
                    removed += 1
    return removed
