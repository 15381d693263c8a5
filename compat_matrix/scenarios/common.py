"""Steps shared by many scenarios: routing tables, temporary queues, property summaries."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.session import Delivery, Session


def temp_queue(s: Session, ch: BlockingChannel, part: str, **arguments: Any) -> str:
    """A named queue for this scenario (each target is a throwaway broker: no cleanup)."""
    name = s.name(part)
    ch.queue_declare(name, arguments=arguments or None)
    return name


def route_table(
    s: Session,
    ex_type: str,
    bindings: list[tuple[str, dict[str, Any] | None]],
    publishes: list[tuple[str, dict[str, Any] | None]],
) -> None:
    """One queue per binding on a fresh exchange; publish each (routing key, headers) with its
    index as body; log what every queue got, in order."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, ex_type, auto_delete=True)
    queues = []
    for i, (key, args) in enumerate(bindings):
        queue = temp_queue(s, ch, f"b{i}")
        ch.queue_bind(queue, ex, key, arguments=args)
        queues.append(queue)
    for i, (key, headers) in enumerate(publishes):
        s.publish(ch, ex, key, str(i), headers=headers)
    for (key, args), queue in zip(bindings, queues, strict=True):
        label = f"binding {key!r} {sorted((args or {}).items())}"
        s.log(label, [body for body, _ in _bodies(ch, queue)])


def _bodies(ch: BlockingChannel, queue: str) -> list[tuple[str, bool]]:
    out = []
    while True:
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((body.decode(), method.redelivered))


PROPERTY_NAMES = (
    "content_type",
    "content_encoding",
    "headers",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
)


def props_of(delivery: Delivery) -> dict[str, Any]:
    """The properties a delivery carried (only those set)."""
    return {
        name: getattr(delivery.properties, name)
        for name in PROPERTY_NAMES
        if getattr(delivery.properties, name, None) is not None
    }


def x_death(delivery: Delivery) -> Any:
    """The dead-lettering headers, with the time fields reduced to their presence."""
    headers = dict(getattr(delivery.properties, "headers", None) or {})
    deaths = []
    for entry in headers.get("x-death", []):
        deaths.append({k: ("<time>" if k == "time" else v) for k, v in entry.items()})
    if deaths:
        headers["x-death"] = deaths
    return headers


def full(delivery: Delivery) -> dict[str, Any]:
    """Everything about a delivery except its tags."""
    return {
        "body": delivery.body,
        "redelivered": delivery.redelivered,
        "exchange": delivery.exchange,
        "routing_key": delivery.routing_key,
        "properties": props_of(delivery),
    }
