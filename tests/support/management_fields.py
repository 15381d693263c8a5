"""The scenario behind the management field recording (tests/integration/management/
rabbitmq_3_10_fields.json): a connection with a confirm-mode channel publishing persistent and
transient messages through an exchange to a durable queue, a consumer holding some of them
unacknowledged. The documents' key paths are compared with RabbitMQ 3.10's; re-record them from
a RabbitMQ with its management plugin with
`python -m tests.support.management_fields AMQP_URL HTTP_URL`."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pika

from tests.support.management import Api, amqp_connection, q
from tests.support.waiting import wait_until

RECORDING = (
    Path(__file__).parent.parent / "integration" / "management" / "rabbitmq_3_10_fields.json"
)


def key_paths(doc: Any, prefix: str = "") -> set[str]:
    """Dotted paths of every key of nested objects (list elements share the path `[]`)."""
    found: set[str] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            if prefix == "cluster_state":
                key = "NODE"  # keyed by the node's name
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            found |= key_paths(value, path)
    elif isinstance(doc, list):
        for item in doc:
            found |= key_paths(item, f"{prefix}[]")
    return found


def scenario(api: Api, uid: str, stack: ExitStack) -> dict[str, Any]:
    """Run the traffic and return the documents once the broker's statistics show it."""
    conn = stack.enter_context(amqp_connection(api, name=uid))
    ch = conn.channel()
    ch.confirm_delivery()
    exchange, queue = f"{uid}-x", f"{uid}-q"
    ch.exchange_declare(exchange, "direct")
    ch.queue_declare(queue, durable=True)
    ch.queue_bind(queue, exchange, "k")
    for n in range(4):
        mode = pika.DeliveryMode.Persistent if n % 2 else pika.DeliveryMode.Transient
        ch.basic_publish(exchange, "k", b"x" * 10, pika.BasicProperties(delivery_mode=mode))
    ch.basic_qos(prefetch_count=2)
    ch.basic_consume(queue, lambda *args: None)
    conn.process_data_events(time_limit=0.2)

    def documents() -> dict[str, Any] | None:
        queue_doc = api.ok("GET", f"/api/queues/%2F/{q(queue)}")
        if queue_doc.get("messages_unacknowledged") != 2 or "message_stats" not in queue_doc:
            return None
        exchange_doc = api.ok("GET", f"/api/exchanges/%2F/{q(exchange)}")
        connections = [
            c
            for c in api.ok("GET", "/api/connections")
            if c.get("user_provided_name") == uid
            or c.get("client_properties", {}).get("connection_name") == uid
        ]
        if "message_stats" not in exchange_doc or not connections:
            return None
        channels = api.ok("GET", f"/api/connections/{q(connections[0]['name'])}/channels")
        if not channels or "message_stats" not in channels[0]:
            return None
        vhost = api.ok("GET", "/api/vhosts/%2F")
        if "message_stats" not in vhost or "recv_oct" not in vhost:
            return None
        connection = api.ok("GET", f"/api/connections/{q(connections[0]['name'])}")
        overview = api.ok("GET", "/api/overview")
        if not {"recv_cnt", "recv_oct"} <= set(connection) or "churn_rates" not in overview:
            return None  # RabbitMQ's statistics of the connection are not in yet
        return {
            "queue": queue_doc,
            "exchange": exchange_doc,
            "connection": connection,
            "channel": api.ok("GET", f"/api/channels/{q(channels[0]['name'])}"),
            "vhost": vhost,
            "overview": overview,
        }

    docs = wait_until(documents, timeout=30)
    conn.process_data_events(time_limit=0)
    stack.callback(lambda: api.call("DELETE", f"/api/queues/%2F/{q(queue)}"))
    stack.callback(lambda: api.call("DELETE", f"/api/exchanges/%2F/{q(exchange)}"))
    return docs


def record(amqp_url: str, http_url: str) -> None:
    api = Api(amqp_url, http_url, "rabbitmq")
    with ExitStack() as stack:
        docs = scenario(api, "fields-recording", stack)
    paths = {kind: sorted(key_paths(doc)) for kind, doc in docs.items()}
    RECORDING.write_text(json.dumps(paths, indent=1) + "\n")


if __name__ == "__main__":
    record(sys.argv[1], sys.argv[2])
