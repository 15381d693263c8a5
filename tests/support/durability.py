"""Helpers for the restart tests: persistent and transient properties, draining a queue and a
channel error."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest

from tests.support.clients import pika_channel as channel

PERSISTENT = pika.BasicProperties(delivery_mode=2)

TRANSIENT = pika.BasicProperties(delivery_mode=1)


def drain(ch: Any, queue: str) -> list[tuple[bytes, bool, Any]]:
    """Take every message (auto-ack): body, redelivered flag, properties."""
    got = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, method.redelivered, props))


def bodies(ch: Any, queue: str) -> list[bytes]:
    return [body for body, _, _ in drain(ch, queue)]


def refused(url: str, action: Any) -> tuple[int, str]:
    """Run `action(channel)` on a fresh channel; it must close the channel: (code, text)."""
    with channel(url) as ch, pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        action(ch)
    return info.value.reply_code, info.value.reply_text
