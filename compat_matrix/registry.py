"""The scenario registry and the feature rows of the matrix.

A scenario is written once as client-side steps; the same function runs against every target.
Each one names the features it covers, and the generated table has one row per feature, so
the feature list below is also the table's row order."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FEATURES: dict[str, str] = {
    "exchange.direct": "Direct exchange routing",
    "exchange.fanout": "Fanout exchange routing",
    "exchange.topic": "Topic exchange routing",
    "exchange.headers": "Headers exchange routing (x-match all / any)",
    "exchange.default": "Default exchange",
    "exchange.e2e": "Exchange-to-exchange bindings",
    "exchange.alternate": "Alternate exchange",
    "exchange.declare": "Exchange declare, equivalence, internal, auto-delete, delete",
    "queue.declare": "Queue declare, equivalence, server-named queues, counts",
    "queue.bind": "Queue bind / unbind",
    "queue.delete": "Queue delete and purge (if-unused, if-empty)",
    "queue.exclusive": "Exclusive queues",
    "queue.auto_delete": "Auto-delete queues",
    "args.message_ttl": "Queue argument x-message-ttl",
    "args.per_message_ttl": "Per-message TTL (expiration property)",
    "args.expires": "Queue argument x-expires",
    "args.max_length": "x-max-length / x-max-length-bytes, overflow drop-head",
    "args.reject_publish": "x-overflow reject-publish (and reject-publish-dlx)",
    "args.dlx": "Dead-lettering and x-death headers",
    "args.priority": "Priority queues (x-max-priority)",
    "args.validation": "Invalid queue arguments refused",
    "content.properties": "Message properties and headers round trip",
    "content.bodies": "Empty, large and multi-frame bodies",
    "basic.consume": "basic.consume / consumer tags / exclusive consumers",
    "basic.cancel": "basic.cancel and server-sent cancel",
    "basic.get": "basic.get",
    "basic.ack": "basic.ack (single, multiple)",
    "basic.nack": "basic.nack (requeue, multiple)",
    "basic.reject": "basic.reject",
    "basic.recover": "basic.recover",
    "qos.per_consumer": "basic.qos per consumer",
    "qos.global": "basic.qos global (per channel)",
    "confirms": "Publisher confirms",
    "confirms.nack": "Publisher confirms: nack on reject-publish",
    "returns": "Mandatory publishes and basic.return",
    "ordering": "Message order across requeue, recover and channel close",
    "reply_to": "Direct reply-to (amq.rabbitmq.reply-to)",
    "tx.publish": "tx: transactional basic.publish",
    "tx.ack": "tx: transactional basic.ack",
    "tx.reject": "tx: transactional basic.reject / basic.nack",
    "tx.wiring": "tx: exchange/queue/binding creation/deletion not transactional",
    "tx.consume_get": "tx: consuming/getting of messages not transactional",
    "tx.atomicity": "tx: atomicity in a single queue and across multiple queues",
    "tx.errors": "tx: error detection immediate (e.g. invalid exchange)",
    "tx.return": "tx: 'no_route' basic.return on commit, before commit-ok",
    "tx.visibility": "tx: effect visibility on commit",
    "tx.misuse": "tx: mode errors and pipelining during commit",
    "error.403": "Error 403 ACCESS_REFUSED",
    "error.404": "Error 404 NOT_FOUND",
    "error.405": "Error 405 RESOURCE_LOCKED",
    "error.406": "Error 406 PRECONDITION_FAILED",
    "error.501": "Error 501 FRAME_ERROR",
    "error.503": "Error 503 COMMAND_INVALID",
    "error.504": "Error 504 CHANNEL_ERROR",
    "error.505": "Error 505 UNEXPECTED_FRAME",
    "error.530": "Error 530 NOT_ALLOWED",
    "error.540": "Error 540 NOT_IMPLEMENTED",
    "connection.handshake": "Connection handshake, protocol header, tuning",
    "connection.close": "Closing connections after errors",
    "channel.lifecycle": "Channel open / close / flow",
    "restart.durable_wiring": "Restart: durable exchanges, queues, bindings kept",
    "restart.persistent": "Restart: persistent messages kept",
    "restart.transient_gone": "Restart: transient queues, exchanges, messages gone",
    "restart.open_tx": "Restart: open transaction aborted",
}


@dataclass(frozen=True)
class Scenario:
    """One scenario: its key, features, and the steps (a function of a Session).

    A restart scenario's steps are a generator: the part before its `yield` runs, then the
    target is restarted in place, then the part after the `yield` runs."""

    key: str
    features: tuple[str, ...]
    steps: Callable[..., Any]
    restart: bool = False
    doc: str = ""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.steps)


REGISTRY: dict[str, Scenario] = {}


def scenario(
    key: str, *features: str, restart: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated steps under `key`, covering `features` (ids of FEATURES)."""
    unknown = [f for f in features if f not in FEATURES]
    if unknown or not features:
        raise ValueError(f"scenario {key}: unknown or missing features {unknown}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if key in REGISTRY:
            raise ValueError(f"duplicate scenario {key}")
        if restart and not inspect.isgeneratorfunction(fn):
            raise ValueError(f"restart scenario {key} must yield once")
        doc = (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ")
        REGISTRY[key] = Scenario(key, tuple(features), fn, restart, doc)
        return fn

    return register


def all_scenarios() -> list[Scenario]:
    """Every scenario, loading the scenario modules on first use."""
    from compat_matrix import scenarios  # noqa: F401  (registers on import)

    return list(REGISTRY.values())
