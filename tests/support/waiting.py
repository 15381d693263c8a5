"""Polling for a condition the test cannot be told about (a queue expiring, statistics arriving,
a port opening): one helper, so every wait has a deadline and fails the same way."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 5.0,
    interval: float = 0.01,
    message: str | Callable[[], str] = "condition not met in time",
) -> T:
    """Call `predicate` every `interval` seconds until it returns something truthy, and return
    that. After `timeout` seconds the test fails (AssertionError) with `message`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(message() if callable(message) else message)
        time.sleep(interval)


async def wait_until_async(
    predicate: Callable[[], T],
    timeout: float = 5.0,
    interval: float = 0.01,
    message: str | Callable[[], str] = "condition not met in time",
) -> T:
    """`wait_until` for asyncio tests: sleeps without blocking the loop, so the clients the
    test runs on it keep working while it waits."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(message() if callable(message) else message)
        await asyncio.sleep(interval)
