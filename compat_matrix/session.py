"""What a scenario gets: names unique to the run, pika connections, and recording helpers.

Scenarios record what a client can observe (replies, closes with code and text, deliveries with
their redelivered flags, counts) through these helpers, so every scenario records the same way
and the records of two brokers can be compared."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from compat_matrix.record import jsonable

CLOSED = object()
"""Returned by `Session.attempt` when the broker closed the channel or connection instead."""

WAIT = 3.0
"""Longest wait for something that should happen (a delivery, an expiry)."""

QUIET = 0.15
"""How long to watch for something that should not happen (an extra delivery)."""


@dataclass
class Delivery:
    """One message as a consumer or basic.get saw it."""

    tag: int
    body: str
    redelivered: bool
    exchange: str
    routing_key: str
    properties: Any
    consumer_tag: str = ""

    def brief(self) -> list[Any]:
        return [self.body, self.redelivered]


def describe_reply(result: Any) -> Any:
    """A pika reply (a method frame, a basic.get triple, a consumer tag) as a JSON value."""
    method = getattr(result, "method", None)
    if method is not None and hasattr(method, "NAME"):
        fields = {k: jsonable(v) for k, v in vars(method).items() if not k.startswith("_")}
        return {"method": method.NAME, **fields}
    return jsonable(result)


def describe_error(exc: BaseException) -> list[Any]:
    """How a client call failed, in broker terms where the broker said something."""
    if isinstance(exc, pika.exceptions.ChannelClosedByBroker):
        return ["channel-closed", exc.reply_code, exc.reply_text]
    if isinstance(exc, pika.exceptions.ConnectionClosedByBroker):
        return ["connection-closed", exc.reply_code, exc.reply_text]
    if isinstance(exc, pika.exceptions.UnroutableError):
        return ["returned", len(exc.messages)]
    if isinstance(exc, pika.exceptions.NackError):
        return ["nacked", len(exc.messages)]
    if isinstance(exc, pika.exceptions.StreamLostError | pika.exceptions.AMQPConnectionError):
        return ["connection-lost", type(exc).__name__]
    return ["raised", type(exc).__name__]


def properties(**props: Any) -> pika.BasicProperties:
    return pika.BasicProperties(**props)


class Session:
    """Per scenario and target: the URL, a name prefix, the event log, open connections."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.events: list[list[Any]] = []
        self.connections: list[BlockingConnection] = []
        self.stale: list[BlockingConnection] = []
        self.cleanups: list[Callable[[], Any]] = []
        self.async_cleanups: list[Callable[[], Any]] = []

    # ------------------------------------------------------------------ naming and logging
    def name(self, part: str = "q") -> str:
        """A queue or exchange name unique to this run (the prefix is normalised away)."""
        return self.prefix + part

    def log(self, label: str, value: Any = None) -> None:
        self.events.append([label, jsonable(value)])

    def check(self, claim: str, holds: bool) -> None:
        """Record a documented expectation; a failed check on RabbitMQ marks the row."""
        self.events.append(["check: " + claim, bool(holds)])

    # ------------------------------------------------------------------ pika
    def connect(self, **params: Any) -> BlockingConnection:
        parameters = pika.URLParameters(self.url)
        for key, value in params.items():
            setattr(parameters, key, value)
        conn = pika.BlockingConnection(parameters)
        self.connections.append(conn)
        return conn

    def channel(
        self, conn: BlockingConnection | None = None, confirm: bool = False
    ) -> BlockingChannel:
        """A new channel, on `conn` or on the session's first connection.

        `confirm` puts it in confirm mode, so each publish returns once the message is in its
        queues: RabbitMQ answers queue.declare (its counts) ahead of queued deliveries, so a
        count read after unconfirmed publishes may not include them yet."""
        if conn is None:
            conn = self.connections[0] if self.connections else self.connect()
            if not conn.is_open:
                conn = self.connect()
        ch = conn.channel()
        if confirm:
            ch.confirm_delivery()
        return ch

    def attempt(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one client call; log its reply, or how the broker refused it (CLOSED)."""
        try:
            result = fn(*args, **kwargs)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.log(label, describe_error(exc))
            return CLOSED
        self.log(label, ["ok", describe_reply(result)])
        return result

    def sync(self, ch: BlockingChannel, label: str = "sync") -> bool:
        """A round trip on `ch`, so an asynchronous error (after a publish or an ack) shows."""
        return (
            self.attempt(
                label, ch.exchange_declare, "amq.fanout", "fanout", passive=True, durable=True
            )
            is not CLOSED
        )

    def publish(
        self, ch: BlockingChannel, exchange: str, key: str, body: str | bytes, **props: Any
    ) -> None:
        mandatory = props.pop("mandatory", False)
        payload = body.encode() if isinstance(body, str) else body
        ch.basic_publish(exchange, key, payload, properties(**props), mandatory=mandatory)

    def publish_confirmed(
        self, ch: BlockingChannel, label: str, exchange: str, key: str, body: str, **props: Any
    ) -> None:
        """Publish on a confirm channel and log acked / nacked / returned."""
        try:
            self.publish(ch, exchange, key, body, **props)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.log(label, describe_error(exc))
        else:
            self.log(label, "acked")

    def declare(self, ch: BlockingChannel, queue: str, **kwargs: Any) -> Any:
        kwargs.setdefault("auto_delete", False)
        return ch.queue_declare(queue, **kwargs)

    def count(self, ch: BlockingChannel, queue: str) -> int:
        return int(ch.queue_declare(queue, passive=True).method.message_count)

    def wait_count(self, ch: BlockingChannel, queue: str, want: int, label: str = "count") -> int:
        """Poll the ready count until it is `want` (or time runs out); log the last count."""
        deadline = time.monotonic() + WAIT
        while (got := self.count(ch, queue)) != want and time.monotonic() < deadline:
            ch.connection.process_data_events(0.02)
        self.log(label, got)
        return got

    def exists(self, queue: str) -> bool:
        """Whether a passive declare finds `queue` (on a channel of its own)."""
        ch = self.channel()
        try:
            ch.queue_declare(queue, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                return False
            raise
        ch.close()
        return True

    def routable(self, ch: BlockingChannel, queue: str) -> bool:
        """Whether a mandatory publish to `queue` (on confirm channel `ch`) is accepted. Unlike a
        passive declare, a publish does not count as use, so it does not renew x-expires."""
        try:
            ch.basic_publish("", queue, b"probe", mandatory=True)
        except pika.exceptions.UnroutableError:
            return False
        return True

    def wait_gone(self, queue: str, label: str = "exists after waiting") -> None:
        """Poll until `queue` is gone (or time runs out); log whether it still exists."""
        probe = self.channel(confirm=True)
        deadline = time.monotonic() + WAIT
        while self.routable(probe, queue) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.log(label, self.exists(queue))

    def get(
        self, ch: BlockingChannel, queue: str, label: str = "get", ack: bool = True
    ) -> Delivery | None:
        """basic.get; log [body, redelivered, message_count] or "empty"."""
        method, props, body = ch.basic_get(queue, auto_ack=ack)
        if method is None:
            self.log(label, "empty")
            return None
        got = Delivery(
            method.delivery_tag,
            body.decode(errors="replace"),
            method.redelivered,
            method.exchange,
            method.routing_key,
            props,
        )
        self.log(label, [got.body, got.redelivered, method.message_count])
        return got

    def drain(self, ch: BlockingChannel, queue: str, label: str = "drain") -> list[list[Any]]:
        """Take every ready message (auto-ack); log their [body, redelivered] in order."""
        got: list[list[Any]] = []
        while True:
            method, _props, body = ch.basic_get(queue, auto_ack=True)
            if method is None:
                break
            got.append([body.decode(errors="replace"), method.redelivered])
        self.log(label, got)
        return got

    def consumer(self, ch: BlockingChannel, queue: str, box: list[Delivery], **kwargs: Any) -> str:
        """Start a consumer that appends deliveries to `box`; return its tag."""

        def on_message(_ch: Any, method: Any, props: Any, body: bytes) -> None:
            box.append(
                Delivery(
                    method.delivery_tag,
                    body.decode(errors="replace"),
                    method.redelivered,
                    method.exchange,
                    method.routing_key,
                    props,
                    method.consumer_tag,
                )
            )

        return ch.basic_consume(queue, on_message, **kwargs)

    def pump(
        self, conn: BlockingConnection, done: Callable[[], bool], timeout: float = WAIT
    ) -> bool:
        """Process events until `done()` holds or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            conn.process_data_events(min(0.02, remaining))
        return True

    def receive(
        self, ch: BlockingChannel, box: list[Delivery], count: int, label: str = "deliveries"
    ) -> list[Delivery]:
        """Wait for `count` deliveries in `box`, watch briefly for extras, log them all."""
        self.pump(ch.connection, lambda: len(box) >= count)
        self.pump(ch.connection, lambda: len(box) > count, QUIET)
        self.log(label, [d.brief() for d in box])
        return box

    def settle(self, conn: BlockingConnection, box: list[Any]) -> None:
        """Process events until no new item reaches `box` for QUIET seconds (for counts that
        are the thing measured, such as how many deliveries a prefetch limit lets through)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            seen = len(box)
            if not self.pump(conn, lambda seen=seen: len(box) > seen, QUIET):
                return

    def quiet(self, conn: BlockingConnection, timeout: float = QUIET) -> None:
        """Let in-flight frames arrive (used only to show that nothing else comes)."""
        self.pump(conn, lambda: False, timeout)

    # ------------------------------------------------------------------ raw client
    def raw(self, *, open_: bool = True, **handshake: Any) -> Any:
        """A raw client (for frame order and malformed input), opened unless told."""
        from tests.support.raw_amqp import RawClient

        client = RawClient(self.url, timeout=WAIT)
        self.cleanups.append(client.close)
        if open_:
            client.open(**handshake)
        return client

    # ------------------------------------------------------------------ teardown
    def restarted(self) -> None:
        """The target restarted: connections from before are dead, new channels need new ones."""
        self.stale += self.connections
        self.connections = []

    def close(self) -> None:
        """Close whatever the scenario left open; errors here are not part of the record."""
        for conn in self.connections:
            try:
                if conn.is_open:
                    conn.close()
            except Exception:
                pass
        for cleanup in self.cleanups:
            try:
                cleanup()
            except Exception:
                pass
