"""Turning what a client observed into comparable records.

Records are JSON values. Anything a broker generates at random (server-named queues, consumer
tags, direct reply-to tokens, timestamps) and the per-run name prefix are normalised away, so two
runs of the same scenario on two brokers give equal records exactly when they behaved alike."""

from __future__ import annotations

import datetime
import decimal
import json
import re
from typing import Any

_GENERATED = [
    (re.compile(r"amq\.gen-[A-Za-z0-9_\-]{16,}"), "amq.gen-*"),
    (re.compile(r"amq\.ctag-[A-Za-z0-9_\-]{16,}"), "amq.ctag-*"),
    (
        re.compile(r"amq\.rabbitmq\.reply-to\.[A-Za-z0-9+/=_\-]+\.[A-Za-z0-9+/=_\-]+"),
        "amq.rabbitmq.reply-to.*",
    ),
    (re.compile(r"\bctag\d+\.[0-9a-f]{32}\b"), "ctag*"),  # pika's client-side consumer tags
]


def jsonable(value: Any) -> Any:
    """A JSON-compatible copy: bytes as text where possible, timestamps as a marker."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "hex:" + value.hex()
    if isinstance(value, datetime.datetime | datetime.date):
        return "<timestamp>"
    if isinstance(value, decimal.Decimal):
        return f"decimal:{value}"
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def normalise(value: Any, prefix: str) -> Any:
    """Strip the run prefix from names and replace generated names by a placeholder."""
    if isinstance(value, str):
        text = value.replace(prefix, "")
        for pattern, placeholder in _GENERATED:
            text = pattern.sub(placeholder, text)
        return text
    if isinstance(value, dict):
        return {normalise(k, prefix): normalise(v, prefix) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, prefix) for v in value]
    return value


def canonical(record: Any) -> str:
    """One stable text per record, for equality and for line diffs."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, indent=1)
