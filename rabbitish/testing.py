"""Brokers for tests: `running_broker()` runs one in a background thread for synchronous code
(pika BlockingConnection, kombu)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rabbitish.app import Broker


@contextmanager
def running_broker(**overrides: Any) -> Iterator[Broker]:
    """A broker on an ephemeral port (in-memory store unless told otherwise), in its own thread
    with its own event loop (`broker.loop`); stopped when the block exits."""
    overrides.setdefault("port", 0)
    overrides.setdefault("data_dir", ":memory:")
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
    if not started.wait(10):
        raise TimeoutError("broker did not start within 10 s")
    if failure:
        raise failure[0]
    try:
        yield broker
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
