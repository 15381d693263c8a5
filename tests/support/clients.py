"""Small client-side helpers shared by the integration tests: pika connections and channels that
always get closed, the (code, text) of a channel the broker closed, pika I/O until a condition
holds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pika
import pika.exceptions
import pytest


def blocking_connection(url: str) -> pika.BlockingConnection:
    """A blocking pika connection the caller closes."""
    return pika.BlockingConnection(pika.URLParameters(url))


@contextmanager
def pika_connection(url: str) -> Iterator[pika.BlockingConnection]:
    """A pika connection, closed on exit unless the broker already closed it."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn
    finally:
        if conn.is_open:
            conn.close()


@contextmanager
def pika_channel(url: str) -> Iterator[Any]:
    """A channel on its own pika connection, closed on exit."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn.channel()
    finally:
        if conn.is_open:
            conn.close()


def channel_error(fn: Callable[[], Any]) -> tuple[int, str]:
    """Run `fn`, which must get its channel closed by the broker: (reply code, reply text)."""
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        fn()
    return info.value.reply_code, info.value.reply_text


def pika_wait(
    predicate: Callable[[], bool], conn: pika.BlockingConnection, timeout: float = 5.0
) -> None:
    """Process pika I/O until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        conn.process_data_events(time_limit=0.05)


def bodies(ch: Any, queue: str) -> list[bytes]:
    """Everything ready in a queue, in order (publishes on the same channel are routed before a
    later basic.get, on both brokers)."""
    out = []
    while True:
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append(body)


def temp_queue(ch: Any) -> str:
    return ch.queue_declare("", exclusive=True).method.queue
