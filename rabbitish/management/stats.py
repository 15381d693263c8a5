"""The statistics fields of RabbitMQ's documents: message_stats with their `_details` rates, the
byte and persistence breakdown of a queue, connection byte counters, the overview's churn rates.
Counters are plain integers the engine and front ends increment; everything derived (sums over
a queue's messages, rates, idle_since) is computed here, when the API is asked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rabbitish.management.rates import Rates

if TYPE_CHECKING:
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

# Queue counters (engine/queue.py) under RabbitMQ's message_stats names.
QUEUE_STATS = {
    "publish": "published",
    "deliver_get": "delivered",
    "ack": "acked",
    "deliver": "deliver",
    "deliver_no_ack": "deliver_no_ack",
    "get": "get",
    "get_no_ack": "get_no_ack",
    "get_empty": "get_empty",
    "redeliver": "redeliver",
}
# Channel counters summed into a vhost's and the overview's message_stats.
CHANNEL_ONLY = ("confirm", "return_unroutable", "drop_unroutable")


def details(rate: float) -> dict[str, float]:
    return {"rate": round(rate, 1)}


def with_details(counters: Mapping[str, int], rates: Mapping[str, float]) -> dict[str, Any]:
    """{name: value, name_details: {"rate": r}} for each counter, in RabbitMQ's pairing."""
    found: dict[str, Any] = {}
    for name, value in counters.items():
        found[name] = value
        found[f"{name}_details"] = details(rates.get(name, 0.0))
    return found


def sampled(rates: Rates, owner: Any, counters: dict[str, int], part: Any = None) -> dict[str, Any]:
    return with_details(counters, rates.sample(owner, counters, part))


def queue_message_stats(queue: Queue) -> dict[str, int]:
    stats = queue.stats
    return {name: stats[key] for name, key in QUEUE_STATS.items()}


def queue_breakdown(queue: Queue) -> dict[str, Any]:
    """Counts and bytes by where messages are (ready / unacknowledged, persistent, paged out),
    computed over the queue's messages. Persistent means kept on disk: only a durable queue
    keeps its persistent messages there (RabbitMQ counts them the same way)."""
    durable = queue.durable
    persistent = persistent_bytes = paged = paged_bytes = 0
    for entry in queue.ready:
        message = entry.message
        if durable and message.persistent:
            persistent += 1
            persistent_bytes += message.size
        if not message.in_memory:
            paged += 1
            paged_bytes += message.size
    unacked_bytes = 0
    for delivery in queue.outstanding:
        message = delivery.entry.message
        unacked_bytes += message.size
        if durable and message.persistent:
            persistent += 1
            persistent_bytes += message.size
    ready, unacked = queue.message_count, queue.unacked
    ready_bytes = queue.ready.bytes
    return {
        "message_bytes": ready_bytes + unacked_bytes,
        "message_bytes_paged_out": paged_bytes,
        "message_bytes_persistent": persistent_bytes,
        "message_bytes_ram": ready_bytes + unacked_bytes - paged_bytes,
        "message_bytes_ready": ready_bytes,
        "message_bytes_unacknowledged": unacked_bytes,
        "messages_paged_out": paged,
        "messages_persistent": persistent,
        "messages_ram": ready + unacked - paged,
        "messages_ready_ram": ready - paged,
        "messages_unacknowledged_ram": unacked,
    }


def consumer_utilisation(queue: Queue) -> float:
    """The share of consumers that can take a message now (1.0 with no backlog): RabbitMQ
    measures it over time; this is the instant value, 0 without consumers as RabbitMQ shows."""
    consumers = queue.consumers
    if not consumers:
        return 0
    if not queue.message_count:
        return 1.0
    able = sum(1 for c in consumers if c.credit > 0)
    return round(able / len(consumers), 2)


def head_timestamp(queue: Queue) -> int | None:
    """The `timestamp` property of the head message, as RabbitMQ's head_message_timestamp."""
    head = queue.ready.peek()
    if head is None:
        return None
    message = head.message
    value = message.codec.to_json(message.raw_properties).get("timestamp")
    return value if isinstance(value, int) else None


def sum_counters(items: Iterable[Mapping[str, int]], names: Iterable[str]) -> dict[str, int]:
    names = tuple(names)
    total = dict.fromkeys(names, 0)
    for item in items:
        for name in names:
            total[name] += item.get(name, 0)
    return total


def vhost_message_stats(
    vhost: VirtualHost, channel_stats: Iterable[Mapping[str, int]]
) -> dict[str, int]:
    """A vhost's message_stats: publishes counted by the vhost, deliveries and acks by its
    queues, confirms and unroutable messages by its open channels."""
    queues = sum_counters((queue_message_stats(q) for q in vhost.queues.values()), QUEUE_STATS)
    channels = sum_counters(channel_stats, CHANNEL_ONLY)
    return {**queues, "publish": vhost.publishes, **channels}
