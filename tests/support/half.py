"""Helpers for the half-message tests: properties of a half message, publishing a decision,
queue counts and the management view of a queue."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any
from urllib.parse import quote

import pika

from tests.support.clients import bodies

__all__ = ["TXN_EXCHANGE", "bodies", "decide", "half", "queue_json", "ready"]

TXN_EXCHANGE = "amq.rabbitish.txn"


def half(txn: str, persistent: bool = True, **headers: Any) -> pika.BasicProperties:
    """Properties of a half message of `txn` (extra headers: x-check-queue and so on)."""
    return pika.BasicProperties(
        delivery_mode=2 if persistent else 1, headers={"x-half-txn": txn, **headers}
    )


def decide(ch: Any, txn: str, outcome: str = "commit", mandatory: bool = False) -> None:
    """Publish the decision `outcome` (commit / rollback) for `txn`."""
    props = pika.BasicProperties(headers={"x-half-txn": txn})
    ch.basic_publish(TXN_EXCHANGE, outcome, b"", props, mandatory=mandatory)


def ready(ch: Any, queue: str) -> int:
    """The message count queue.declare-ok reports."""
    return ch.queue_declare(queue, passive=True).method.message_count


def queue_json(management_url: str, queue: str, vhost: str = "/") -> dict[str, Any]:
    """GET /api/queues/{vhost}/{queue}; `management_url` is http://user:password@host:port."""
    scheme, rest = management_url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    token = base64.b64encode(credentials.encode()).decode()
    request = urllib.request.Request(
        f"{scheme}://{host}/api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}",
        headers={"Authorization": f"Basic {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())
