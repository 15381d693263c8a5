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

__all__ = [
    "TXN_EXCHANGE",
    "bodies",
    "decide",
    "half",
    "half_transactions",
    "prepare",
    "queue_json",
    "ready",
]

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


def prepare(ch: Any, txn: str, **headers: Any) -> None:
    """On a tx channel: make the channel's staged work prepared transaction `txn` (publish the
    prepare, then tx.commit, whose commit-ok says it is on disk)."""
    props = pika.BasicProperties(headers={"x-half-txn": txn, **headers})
    ch.basic_publish(TXN_EXCHANGE, "prepare", b"", props)
    ch.tx_commit()


def ready(ch: Any, queue: str) -> int:
    """The message count queue.declare-ok reports."""
    return ch.queue_declare(queue, passive=True).method.message_count


def queue_json(management_url: str, queue: str, vhost: str = "/") -> dict[str, Any]:
    """GET /api/queues/{vhost}/{queue}; `management_url` is http://user:password@host:port."""
    return _get(management_url, f"/api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}")


def half_transactions(management_url: str) -> dict[str, dict[str, Any]]:
    """GET /api/half-transactions, by id."""
    return {t["id"]: t for t in _get(management_url, "/api/half-transactions")}


def _get(management_url: str, path: str) -> Any:
    scheme, rest = management_url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    token = base64.b64encode(credentials.encode()).decode()
    request = urllib.request.Request(
        f"{scheme}://{host}{path}", headers={"Authorization": f"Basic {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())
