"""Helpers for the management API tests: an HTTP client for one broker's API (urllib), the
RabbitMQ node with fast statistics those tests compare against, request bodies."""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions

from tests.support.real_rabbitmq import RealRabbit, real_rabbitmq
from tests.support.waiting import wait_until

GUEST = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}

NOT_FOUND = {"error": "Object Not Found", "reason": "Not Found"}

LOCKED = (
    "cannot obtain exclusive access to locked queue '{}' in vhost '/'. It could be originally "
    "declared on another connection or the exclusive property value does not match that of the "
    "original declaration."
)


# ---------------------------------------------------------------------- HTTP helpers
@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Api:
    """One broker: its AMQP URL and its management API."""

    amqp_url: str
    base: str
    kind: str
    context: ssl.SSLContext | None = None  # for an https base

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: tuple[str, str] | None = ("guest", "guest"),
        headers: dict[str, str] | None = None,
    ) -> Reply:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            all_headers["Authorization"] = f"Basic {token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, all_headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
                return Reply(response.status, _lower(response.headers), response.read().decode())
        except urllib.error.HTTPError as err:
            return Reply(err.code, _lower(err.headers), err.read().decode())

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        reply = self.call(method, path, body)
        assert reply.status in (200, 201, 204), (reply.status, reply.text)
        return reply.json if reply.text else None


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def q(name: str) -> str:
    return quote(name, safe="")


# ---------------------------------------------------------------------- brokers
class _FastStatsRabbit(RealRabbit):
    """A RabbitMQ whose management statistics refresh every second instead of every 5 s (the
    collectors run at the shortest sample interval of the retention policies)."""

    def _write_config(self) -> None:
        super()._write_config()
        with (self.data_dir / "rabbitmq.conf").open("a") as conf:
            conf.write("collect_statistics_interval = 100\n")
            for section in ("global", "basic", "detailed"):
                conf.write(f"management.sample_retention_policies.{section}.minute = 1\n")


def rabbitmq_with_management() -> contextlib.AbstractContextManager[RealRabbit]:
    return real_rabbitmq(enable_management=True, node_class=_FastStatsRabbit)


def amqp_connection(api: Api, name: str | None = None) -> pika.BlockingConnection:
    params = pika.URLParameters(api.amqp_url)
    if name is not None:
        params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


def ready(api: Api, queue: str, count: int) -> dict[str, Any]:
    """The queue document once it reports `count` ready messages."""

    def check() -> dict[str, Any] | None:
        doc = api.ok("GET", f"/api/queues/%2F/{q(queue)}")
        return doc if doc.get("messages_ready") == count else None

    return wait_until(check)


# ---------------------------------------------------------------------- publish and get
def get_body(count: int, ackmode: str = "ack_requeue_true", **extra: Any) -> dict[str, Any]:
    return {"count": count, "ackmode": ackmode, "encoding": "auto", **extra}


def publish_body(key: str, payload: str, **properties: Any) -> dict[str, Any]:
    return {
        "routing_key": key,
        "payload": payload,
        "payload_encoding": "string",
        "properties": properties,
    }
