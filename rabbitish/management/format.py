"""Engine objects rendered as the JSON documents RabbitMQ's management plugin returns: the same
field names and shapes, so tools and test code written against RabbitMQ read them unchanged.
Only fields rabbitish can fill truthfully are present (no Erlang process internals)."""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

from rabbitish.engine.queue_args import queue_type_of
from rabbitish.management import stats
from rabbitish.management.rates import Rates
from rabbitish.wire_names import NODE_NAME

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Binding, Exchange
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

NODE = NODE_NAME  # the node every answer names (and traces: engine/tracing.py)
# The RabbitMQ version the AMQP handshake advertises (protocol.connection); tools compare it.
RABBITMQ_VERSION = "3.13.7"
EXCHANGE_TYPES = {
    "direct": "AMQP direct exchange, as per the AMQP specification",
    "fanout": "AMQP fanout exchange, as per the AMQP specification",
    "headers": "AMQP headers exchange, as per the AMQP specification",
    "topic": "AMQP topic exchange, as per the AMQP specification",
    "x-local-random": "Picks one random local binding (queue) to route via (to).",
}


def jsonable(value: Any) -> Any:
    """A field-table value as RabbitMQ's JSON shows it."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.datetime):
        return int(value.replace(tzinfo=value.tzinfo or datetime.UTC).timestamp())
    return value


# ---------------------------------------------------------------------- bindings
def quote_binding(text: str) -> str:
    """rabbit_mgmt_format:quote_binding: form-encoding with '~' escaped too."""
    return quote_plus(text, safe="").replace("~", "%7E")


def args_hash(arguments: dict[str, Any]) -> str:
    """A short stable digest of binding arguments (RabbitMQ hashes the Erlang term; any stable
    digest serves, since clients only read the key back from a listing)."""
    canonical = json.dumps(jsonable(arguments), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha1(canonical.encode()).digest()[:4]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def properties_key(routing_key: str, arguments: dict[str, Any]) -> str:
    if not arguments:
        return "~" if routing_key == "" else quote_binding(routing_key)
    return f"{quote_binding(routing_key)}~{quote_binding(args_hash(arguments))}"


def binding_json(
    vhost: str, source: str, kind: str, destination: str, key: str, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "source": source,
        "vhost": vhost,
        "destination": destination,
        "destination_type": kind,
        "routing_key": key,
        "arguments": jsonable(args),
        "properties_key": properties_key(key, args),
    }


def explicit_binding(vhost: str, binding: Binding) -> dict[str, Any]:
    from rabbitish.engine.queue import Queue

    kind = "queue" if isinstance(binding.destination, Queue) else "exchange"
    return binding_json(
        vhost,
        binding.source.name,
        kind,
        binding.destination.name,
        binding.routing_key,
        binding.arguments,
    )


def default_binding(queue: Queue) -> dict[str, Any]:
    """The implicit binding of every queue to the default exchange, listed as RabbitMQ does."""
    return binding_json(queue.vhost.name, "", "queue", queue.name, queue.name, {})


def vhost_bindings(vhost: VirtualHost) -> list[dict[str, Any]]:
    """Every binding of a vhost: the default exchange's first, then the declared ones."""
    found = [default_binding(q) for _, q in sorted(vhost.queues.items())]
    explicit = [
        explicit_binding(vhost.name, b)
        for _, exchange in sorted(vhost.exchanges.items())
        for b in exchange.bindings.values()
    ]
    explicit.sort(
        key=lambda b: (b["source"], b["destination_type"], b["destination"], b["properties_key"])
    )
    return found + explicit


# ---------------------------------------------------------------------- exchanges
def exchange_json(exchange: Exchange, rates: Rates) -> dict[str, Any]:
    counters = {"publish_in": exchange.published_in, "publish_out": exchange.published_out}
    return {
        "arguments": jsonable(exchange.arguments),
        "auto_delete": exchange.auto_delete,
        "durable": exchange.durable,
        "internal": exchange.internal,
        "message_stats": stats.sampled(rates, exchange, counters),
        "name": exchange.name,
        "type": exchange.type_name or "direct",
        "vhost": exchange.vhost,
    }


# ---------------------------------------------------------------------- queues
def queue_json(queue: Queue, rates: Rates, owner: dict[str, Any] | None) -> dict[str, Any]:
    ready = queue.message_count
    unacked = queue.unacked
    message_stats = stats.queue_message_stats(queue)
    counters = {
        **message_stats,
        "messages": ready + unacked,
        "messages_ready": ready,
        "messages_unacknowledged": unacked,
    }
    rate = rates.sample(queue, counters)
    utilisation = stats.consumer_utilisation(queue)
    doc: dict[str, Any] = {
        "arguments": jsonable(queue.arguments),
        "auto_delete": queue.auto_delete,
        "consumer_capacity": utilisation,
        "consumer_utilisation": utilisation,
        "consumers": len(queue.consumers),
        "durable": queue.durable,
        "exclusive": queue.exclusive,
        "exclusive_consumer_tag": _exclusive_tag(queue),
        "head_message_timestamp": stats.head_timestamp(queue),
        **stats.queue_breakdown(queue),
        "message_stats": stats.with_details(message_stats, rate),
        "messages": ready + unacked,
        "messages_details": stats.details(rate["messages"]),
        "messages_half": queue.half,  # held half messages (x-half-txn), not in "messages"
        "messages_prepared": queue.prepared,  # locked by prepared acks, not in "messages"
        "messages_ready": ready,
        "messages_ready_details": stats.details(rate["messages_ready"]),
        "messages_unacknowledged": unacked,
        "messages_unacknowledged_details": stats.details(rate["messages_unacknowledged"]),
        "name": queue.name,
        "node": NODE,
        "effective_policy_definition": queue.policy_definition,
        "operator_policy": queue.operator_policy.name if queue.operator_policy else None,
        "policy": queue.policy.name if queue.policy else None,
        "single_active_consumer_tag": None,
        "state": "running",
        "type": queue_type_of(queue.arguments),
        "vhost": queue.vhost.name,
    }
    if owner is not None:
        doc["owner_pid_details"] = owner
    idle = rates.idle_since(queue)
    if idle is not None:
        doc["idle_since"] = idle
    return dict(sorted(doc.items()))


def _exclusive_tag(queue: Queue) -> str | None:
    for consumer in queue.consumers:
        if consumer.exclusive:
            return consumer.tag
    return None


def vhost_json(
    vhost: VirtualHost,
    rates: Rates,
    channel_stats: Iterable[dict[str, int]],
    io: dict[str, int],
) -> dict[str, Any]:
    """`channel_stats` are the message_stats of the vhost's open channels, `io` the byte
    counters of its open connections."""
    ready = unacked = 0
    for queue in vhost.queues.values():
        ready += queue.message_count
        unacked += queue.unacked
    description, tags = vhost.description, list(vhost.tags)
    message_stats = stats.vhost_message_stats(vhost, channel_stats)
    totals = {
        "messages": ready + unacked,
        "messages_ready": ready,
        "messages_unacknowledged": unacked,
    }
    bytes_ = {"recv_oct": io.get("recv_oct", 0), "send_oct": io.get("send_oct", 0)}
    rate = rates.sample(vhost, {**message_stats, **totals, **bytes_})
    return {
        "cluster_state": {NODE: "running"},
        "default_queue_type": "undefined",  # RabbitMQ 3.10 says so until a vhost sets one
        "description": description,
        "message_stats": stats.with_details(message_stats, rate),
        **stats.with_details(totals, rate),
        "metadata": {"description": description, "tags": tags},
        "name": vhost.name,
        **stats.with_details(bytes_, rate),
        "tags": tags,
        "tracing": vhost.tracing,
    }
