"""Dead-lettering as RabbitMQ 3.10 does it: the x-death history (one record per queue and
reason, newest first, with a count), the x-first-death-* headers, CC handling and the rule that
drops a message cycling between queues without a client ever rejecting it."""

from __future__ import annotations

import datetime
import time
from typing import Any

from rabbitish.engine.message import Message


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [t for v in value if (t := _text(v)) is not None]


def header_routes(headers: dict[str, Any]) -> list[str]:
    """The CC and BCC routing keys carried in headers."""
    return _string_list(headers.get("CC")) + _string_list(headers.get("BCC"))


def _sorted(record: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(record.items(), key=lambda item: item[0].encode()))


def x_death_headers(
    headers: dict[str, Any],
    queue: str,
    reason: str,
    message: Message,
    now: float | None = None,
) -> dict[str, Any]:
    """The header updates for one more death of `message` in `queue`.

    The first death writes a record in RabbitMQ's field order plus the x-first-death-*
    headers. Later deaths put a new record (keys sorted) in front, or move the record of the
    same queue and reason to the front with its count incremented (keys sorted); two or more
    older records are regrouped first (see `_grouped`)."""
    stamp = datetime.datetime.fromtimestamp(int(time.time() if now is None else now), datetime.UTC)
    info: dict[str, Any] = {
        "reason": reason,
        "queue": queue,
        "time": stamp,
        "exchange": message.exchange,
        "routing-keys": [message.routing_key, *header_routes(headers)],
    }
    expiration = message.codec.expiration(message.raw_properties)
    if expiration is not None:
        info["original-expiration"] = expiration
    existing = headers.get("x-death")
    if not isinstance(existing, list):
        return {
            "x-death": [{"count": 1, **info}],
            "x-first-death-reason": reason,
            "x-first-death-queue": queue,
            "x-first-death-exchange": message.exchange,
        }
    records = _grouped([dict(d) for d in existing if isinstance(d, dict)])
    for index, record in enumerate(records):
        if _text(record.get("queue")) == queue and _text(record.get("reason")) == reason:
            count = record.get("count")
            record["count"] = count + 1 if isinstance(count, int) else 1
            del records[index]
            return {"x-death": [_sorted(record), *records]}
    return {"x-death": [_sorted({"count": 1, **info}), *records]}


def _grouped(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RabbitMQ regroups two or more existing records by queue and reason, which keeps one
    record per pair and reverses their order."""
    if len(records) < 2:
        return records
    seen: set[tuple[str | None, str | None]] = set()
    grouped: list[dict[str, Any]] = []
    for record in records:
        key = (_text(record.get("queue")), _text(record.get("reason")))
        if key not in seen:
            seen.add(key)
            grouped.append(record)
    grouped.reverse()
    return grouped


def is_cycle(queue: str, deaths: list[Any]) -> bool:
    """Would sending the message to `queue` close a loop of automatic deaths? The records up to
    and including the last one for that queue must all be for reasons other than rejected."""
    for index, death in enumerate(deaths):
        if isinstance(death, dict) and _text(death.get("queue")) == queue:
            return all(
                isinstance(d, dict) and _text(d.get("reason")) != "rejected"
                for d in deaths[: index + 1]
            )
    return False


def dead_message(
    message: Message,
    queue: str,
    reason: str,
    dlx: str,
    routing_key: str | None,
) -> tuple[Message, list[Any]]:
    """The message to publish to the dead-letter exchange, and its x-death records.

    A dead-letter routing key replaces the message's keys and drops its CC header; otherwise
    the message keeps its routing key and CC keys. The expiration property is removed."""
    headers = message.headers
    updates = x_death_headers(headers, queue, reason, message)
    remove = ("CC",) if routing_key is not None else ()
    raw = message.codec.with_headers(message.raw_properties, updates, remove, sort_keys=True)
    if message.codec.expiration(raw) is not None:
        raw = message.codec.with_expiration(raw, None)
    if routing_key is None:
        dead = message.derive(dlx, message.routing_key, raw, message.extra_keys or ())
    else:
        dead = message.derive(dlx, routing_key, raw, ())
    return dead, updates["x-death"]
