"""`GET /metrics` in the Prometheus text format, with the metric names, types and help texts of
RabbitMQ's rabbitmq_prometheus plugin for the figures rabbitish has, so dashboards and alerts
written for RabbitMQ read them unchanged. `/metrics` aggregates over all queues as RabbitMQ
does by default; `/metrics/per-object` labels queue figures with `vhost` and `queue`, as
RabbitMQ's endpoint of that name does. rabbitish's own figures (transactions, half
transactions) carry the `rabbitish_` prefix. No login, as with RabbitMQ's endpoint."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rabbitish import __version__
from rabbitish.management.format import NODE, RABBITMQ_VERSION
from rabbitish.management.http_server import Response

if TYPE_CHECKING:
    from rabbitish.engine.node import Node
    from rabbitish.engine.queue import Queue
    from rabbitish.management.http_server import Request
    from rabbitish.management.routing import Router

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PATHS = ("/metrics", "/metrics/per-object")

Labels = dict[str, str]


@dataclass
class Family:
    """One metric: its name, type, help text and samples."""

    name: str
    kind: str  # counter, gauge or untyped
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)


# name, help, value of one queue: RabbitMQ's queue figures rabbitish keeps.
QUEUE_GAUGES = (
    ("rabbitmq_queue_messages_ready", "Messages ready to be delivered to consumers"),
    (
        "rabbitmq_queue_messages_unacked",
        "Messages delivered to consumers but not yet acknowledged",
    ),
    ("rabbitmq_queue_messages", "Sum of ready and unacknowledged messages - total queue depth"),
    ("rabbitmq_queue_messages_ready_bytes", "Size in bytes of ready messages"),
    ("rabbitmq_queue_consumers", "Consumers on a queue"),
)


def _queue_values(queue: Queue) -> tuple[int, ...]:
    ready, unacked = queue.message_count, queue.unacked
    return ready, unacked, ready + unacked, queue.ready.bytes, len(queue.consumers)


def collect(node: Node, per_object: bool = False) -> list[Family]:
    """Every family, read from the engine now (no sampling, no delay)."""
    vhosts = [v for _, v in sorted(node.vhosts.items())]
    queues = [(v.name, q) for v in vhosts for _, q in sorted(v.queues.items())]
    families = [Family(name, "gauge", text) for name, text in QUEUE_GAUGES]
    if per_object:
        for vhost_name, queue in queues:
            labels = {"vhost": vhost_name, "queue": queue.name}
            for family, value in zip(families, _queue_values(queue), strict=True):
                family.samples.append((labels, value))
    else:
        sums = [0] * len(families)
        for _, queue in queues:
            sums = [a + b for a, b in zip(sums, _queue_values(queue), strict=True)]
        for family, value in zip(families, sums, strict=True):
            family.samples.append(({}, value))

    half = node.half_transactions()
    totals = {"published": 0, "delivered": 0, "acked": 0}
    for vhost in vhosts:
        for stats in (vhost.deleted_queue_stats, *(q.stats for q in vhost.queues.values())):
            for name in totals:
                totals[name] += stats[name]
    connections = list(node.connections)
    consumers = sum(len(q.consumers) for _, q in queues)
    families += [
        _one("rabbitmq_connections", "gauge", "Connections currently open", len(connections)),
        _one(
            "rabbitmq_channels",
            "gauge",
            "Channels currently open",
            sum(len(c.view().sessions) for c in connections),
        ),
        _one("rabbitmq_consumers", "gauge", "Consumers currently connected", consumers),
        _one("rabbitmq_queues", "gauge", "Queues available", len(queues)),
        _one("rabbitmq_global_consumers", "gauge", "Current number of consumers", consumers),
        _one(
            "rabbitmq_global_messages_received_total",
            "counter",
            "Total number of messages received from publishers",
            sum(v.publishes for v in vhosts),
        ),
        _one(
            "rabbitmq_global_messages_delivered_total",
            "counter",
            "Total number of messages delivered to consumers",
            totals["delivered"],
        ),
        _one(
            "rabbitmq_global_messages_acknowledged_total",
            "counter",
            "Total number of messages acknowledged by consumers",
            totals["acked"],
        ),
        _one(
            "rabbitmq_identity_info",
            "untyped",
            "RabbitMQ node & cluster identity info",
            1,
            {"rabbitmq_node": NODE, "rabbitmq_cluster": NODE},
        ),
        _one(
            "rabbitmq_build_info",
            "untyped",
            "RabbitMQ & Erlang/OTP version info",
            1,
            {"rabbitmq_version": RABBITMQ_VERSION, "product_version": __version__},
        ),
        _one(
            "rabbitish_transactions_committed_total",
            "counter",
            "Transactions committed (AMQP 0-9-1 tx.commit and AMQP 1.0 discharges)",
            node.transactions.committed,
        ),
        _one(
            "rabbitish_transactions_rolled_back_total",
            "counter",
            "Transactions rolled back, explicitly or by their channel or session closing",
            node.transactions.rolled_back,
        ),
        _one(
            "rabbitish_transactions_open",
            "gauge",
            "Transactions open now (active or prepared)",
            len(node.transactions),
        ),
        _one(
            "rabbitish_transactions_prepared_total",
            "counter",
            "Transactions ended by a prepare (handed over to a prepared half transaction)",
            node.transactions.prepared,
        ),
        _one(
            "rabbitish_half_transactions_open",
            "gauge",
            "Half transactions awaiting a decision",
            len(half),
        ),
        _one(
            "rabbitish_half_transactions_prepared",
            "gauge",
            "Prepared transactions awaiting a decision (the recover list)",
            sum(1 for view in half if view.prepared),
        ),
        _one(
            "rabbitish_half_transactions_messages",
            "gauge",
            "Messages held by half and prepared transactions awaiting a decision",
            sum(view.messages for view in half),
        ),
        _one(
            "rabbitish_half_transactions_acks",
            "gauge",
            "Deliveries locked by the acks, nacks and rejects of prepared transactions",
            sum(view.acks for view in half),
        ),
    ]
    if not per_object:  # RabbitMQ labels it per channel and exchange there: not kept here
        families.append(
            _one(
                "rabbitmq_queue_messages_published_total",
                "counter",
                "Total number of messages published to queues",
                totals["published"],
            )
        )
    return families


def _one(name: str, kind: str, text: str, value: float, labels: Labels | None = None) -> Family:
    return Family(name, kind, text, [(labels or {}, value)])


def render(families: Iterable[Family]) -> str:
    """The text exposition format 0.0.4: HELP and TYPE lines, then one line per sample."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# TYPE {family.name} {family.kind}")
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        for labels, value in family.samples:
            lines.append(f"{family.name}{_labels(labels)} {_number(value)}")
    return "\n".join(lines) + "\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape_value(v)}"' for k, v in labels.items()) + "}"


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def add_routes(router: Router, node: Node) -> None:
    """`/metrics` and `/metrics/per-object` on a management router."""

    async def metrics(request: Request) -> Response:
        per_object = request.path.endswith("/per-object")
        return Response(
            body=render(collect(node, per_object)).encode(),
            headers={"Content-Type": CONTENT_TYPE, "Cache-Control": "no-cache"},
        )

    for path in PATHS:
        router.add_get(path, metrics)
