"""Request/reply round trips for `python -m benchmarks.amqp10`: a client sends a request and
waits for the reply, one at a time, and the round trip's p50 and p99 are reported. Over AMQP 1.0
the client receives on a dynamic reply queue (a receiver attached with `source.dynamic`, the
address it gets back as reply-to), as Qpid Proton's request/reply examples do; over 0-9-1 it
uses RabbitMQ's direct reply-to (`amq.rabbitmq.reply-to`) with pika. The server is another
connection in a thread that answers each request on its reply-to address."""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from dataclasses import dataclass

import pika
from proton import Message, Timeout
from proton.utils import BlockingConnection, BlockingSender

TIMEOUT = 30.0  # seconds for one reply: longer means the exchange hung


@dataclass(frozen=True)
class Latency:
    p50_us: float
    p99_us: float

    def __str__(self) -> str:
        return f"p50 {self.p50_us:,.0f} us, p99 {self.p99_us:,.0f} us"


def _latency(samples: list[float]) -> Latency:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return Latency(statistics.median(samples) * 1e6, cuts[98] * 1e6)


def amqp10(url: str, rounds: int) -> Latency:
    """1.0: requests to /queue/<name>; replies to the client's dynamic reply queue."""
    requests = f"/queue/bench-rr-{uuid.uuid4().hex[:8]}"
    stop = threading.Event()
    ready = threading.Event()

    def serve() -> None:
        conn = BlockingConnection(url, timeout=TIMEOUT)
        receiver = conn.create_receiver(requests, credit=10)
        senders: dict[str, BlockingSender] = {}
        ready.set()
        try:
            while not stop.is_set():
                try:
                    request = receiver.receive(timeout=0.2)
                except Timeout:  # look at `stop` again
                    continue
                receiver.accept()
                sender = senders.get(request.reply_to)
                if sender is None:
                    sender = senders[request.reply_to] = conn.create_sender(request.reply_to)
                sender.send(Message(body=request.body, correlation_id=request.id))
        finally:
            conn.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    ready.wait(TIMEOUT)
    conn = BlockingConnection(url, timeout=TIMEOUT)
    try:
        replies = conn.create_receiver(None, dynamic=True, credit=10)
        reply_to = replies.link.remote_source.address
        sender = conn.create_sender(requests)
        samples = []
        for n in range(rounds):
            started = time.perf_counter()
            sender.send(Message(body=b"ping", id=n, reply_to=reply_to))
            reply = replies.receive(timeout=TIMEOUT)
            samples.append(time.perf_counter() - started)
            replies.accept()
            assert reply.correlation_id == n, (reply.correlation_id, n)
    finally:
        stop.set()
        conn.close()
        server.join(TIMEOUT)
    return _latency(samples)


def direct_reply_to(amqp_url: str, rounds: int) -> Latency:
    """0-9-1 with pika: requests to a queue; replies through amq.rabbitmq.reply-to."""
    requests = f"bench-rr-{uuid.uuid4().hex[:8]}"
    server_conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    server = server_conn.channel()
    server.queue_declare(requests, auto_delete=True)

    def answer(ch, method, properties, body) -> None:
        reply = pika.BasicProperties(correlation_id=properties.correlation_id)
        ch.basic_publish("", properties.reply_to, body, reply)
        ch.basic_ack(method.delivery_tag)

    server.basic_consume(requests, answer)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            server_conn.process_data_events(time_limit=0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        got: list[bytes] = []
        ch.basic_consume(
            "amq.rabbitmq.reply-to", lambda _c, _m, _p, body: got.append(body), auto_ack=True
        )
        samples = []
        for n in range(rounds):
            started = time.perf_counter()
            ch.basic_publish(
                "",
                requests,
                b"ping",
                pika.BasicProperties(reply_to="amq.rabbitmq.reply-to", correlation_id=str(n)),
            )
            while not got:
                conn.process_data_events(time_limit=TIMEOUT)
            samples.append(time.perf_counter() - started)
            got.clear()
    finally:
        stop.set()
        thread.join(TIMEOUT)
        conn.close()
        server_conn.close()
    return _latency(samples)
