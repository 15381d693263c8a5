"""Message order across requeue paths, exclusive queues, direct reply-to."""

from __future__ import annotations

import time
from typing import Any

from pamqp import commands

from compat_matrix.clients import outcome
from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import WAIT, Delivery, Session
from tests.support.raw_amqp import content_header_frame, method_frame, raw_frame

REPLY_TO = "amq.rabbitmq.reply-to"


def _filled(s: Session, count: int) -> str:
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    for i in range(1, count + 1):
        s.publish(ch, "", q, str(i))
    return q


@scenario("ordering.nack_recover_close", "ordering", "basic.nack", "basic.recover")
def nack_recover_close(s: Session) -> None:
    """nack 2 and 4, then recover, then close: the queue keeps publication order throughout."""
    q = _filled(s, 5)
    conn = s.connect()
    ch = s.channel(conn)
    box: list[Delivery] = []
    s.consumer(ch, q, box)
    s.pump(conn, lambda: len(box) >= 5)
    ch.basic_nack(2, requeue=True)
    ch.basic_nack(4, requeue=True)
    s.pump(conn, lambda: len(box) >= 7)
    s.attempt("recover", ch.basic_recover, requeue=True)
    s.pump(conn, lambda: len(box) >= 12)
    s.quiet(conn)
    s.log("deliveries", [[d.tag, d.body, d.redelivered] for d in box])
    conn.close()
    fresh: list[Delivery] = []
    other = s.channel(s.connect())
    s.consumer(other, q, fresh)
    s.receive(other, fresh, 5, "after close")


@scenario("ordering.get_requeue_middle", "ordering", "basic.reject")
def requeue_middle(s: Session) -> None:
    """A requeued message goes back to its original place, ahead of later messages."""
    q = _filled(s, 5)
    ch = s.channel()
    got = [s.get(ch, q, ack=False) for _ in range(3)]
    ch.basic_reject(2, requeue=True)
    ch.basic_ack(1)
    ch.basic_reject(3, requeue=True)
    s.log("taken", len([g for g in got if g]))
    s.drain(ch, q)


@scenario("ordering.get_nack_recover_other_connection", "ordering", "basic.recover")
def get_nack_recover(s: Session) -> None:
    """get x5, nack 2 and 4, recover: a consumer on another connection sees 1..5 in order."""
    q = _filled(s, 5)
    ch = s.channel()
    for _ in range(5):
        s.get(ch, q, ack=False)
    ch.basic_nack(2, requeue=True)
    ch.basic_nack(4, requeue=True)
    s.attempt("recover", ch.basic_recover, requeue=True)
    other = s.channel(s.connect())
    box: list[Delivery] = []
    s.consumer(other, q, box, auto_ack=True)
    s.receive(other, box, 5)


@scenario("ordering.two_consumers_one_closes", "ordering", "basic.consume")
def two_consumers(s: Session) -> None:
    """When one of two consumers closes, its messages return to their places in the queue."""
    q = _filled(s, 6)
    a, b = s.channel(s.connect()), s.channel(s.connect())
    a.basic_qos(prefetch_count=3)
    b.basic_qos(prefetch_count=3)
    got_a: list[Delivery] = []
    got_b: list[Delivery] = []
    s.consumer(a, q, got_a)
    s.pump(a.connection, lambda: len(got_a) >= 3)
    s.consumer(b, q, got_b)
    s.pump(b.connection, lambda: len(got_b) >= 3)
    s.log("a", [d.body for d in got_a])
    s.log("b", [d.body for d in got_b])
    b.basic_ack(0, multiple=True)
    a.connection.close()
    s.drain(s.channel(), q)


@scenario("exclusive.other_connection_pika", "queue.exclusive", "error.405")
def exclusive_other(s: Session) -> None:
    """From another connection: every queue operation is 405; publishing to it is allowed."""
    owner = s.channel(s.connect())
    q = s.name("q")
    owner.queue_declare(q, exclusive=True)
    owner.queue_bind(q, "amq.direct", "bound")
    other = s.connect()
    steps = [
        ("declare", lambda ch: ch.queue_declare(q)),
        ("passive", lambda ch: ch.queue_declare(q, passive=True)),
        ("consume", lambda ch: ch.basic_consume(q, lambda *a: None)),
        ("bind", lambda ch: ch.queue_bind(q, "amq.direct", "k")),
        ("unbind existing", lambda ch: ch.queue_unbind(q, "amq.direct", "bound")),
        ("unbind missing", lambda ch: ch.queue_unbind(q, "amq.direct", "nope")),
        ("purge", lambda ch: ch.queue_purge(q)),
        ("delete", lambda ch: ch.queue_delete(q)),
        ("get", lambda ch: ch.basic_get(q)),
    ]
    for label, step in steps:
        s.attempt(label, step, s.channel(other))
    pub = s.channel(other, confirm=True)
    s.publish_confirmed(pub, "publish", "", q, "m")
    s.drain(owner, q, "owner drains")


@scenario("exclusive.same_connection", "queue.exclusive")
def exclusive_same(s: Session) -> None:
    """Other channels of the owning connection use the queue freely."""
    conn = s.connect()
    q = s.name("q")
    s.channel(conn).queue_declare(q, exclusive=True)
    ch = s.channel(conn)
    s.attempt("redeclare", ch.queue_declare, q, exclusive=True)
    s.publish(ch, "", q, "m")
    s.get(ch, q)
    s.attempt("delete", ch.queue_delete, q)


@scenario("exclusive.gone_with_connection", "queue.exclusive")
def exclusive_gone(s: Session) -> None:
    """An exclusive queue is deleted when its connection closes, messages and all."""
    conn = s.connect()
    q = s.name("q")
    ch = s.channel(conn, confirm=True)
    ch.queue_declare(q, exclusive=True, durable=True)
    s.publish(ch, "", q, "m")
    conn.close()
    s.wait_gone(q)


@scenario("exclusive.server_named", "queue.exclusive", "queue.declare")
def exclusive_named(s: Session) -> None:
    """A server-named exclusive queue is locked to its connection like any other."""
    name = s.channel(s.connect()).queue_declare("", exclusive=True).method.queue
    s.attempt("other connection", s.channel(s.connect()).queue_declare, name, passive=True)


def _requester(s: Session) -> tuple[Any, list[Delivery]]:
    ch = s.channel(s.connect())
    box: list[Delivery] = []
    s.attempt("consume reply-to", s.consumer, ch, REPLY_TO, box, auto_ack=True)
    return ch, box


def _request(s: Session, ch: Any) -> str:
    """Send a request with reply_to set; return the reply_to the server side sees."""
    server = s.channel(s.connect(), confirm=True)
    q = temp_queue(s, server, "requests")
    s.publish(ch, "", q, "request", reply_to=REPLY_TO)
    deadline = time.monotonic() + WAIT
    method, props, body = server.basic_get(q, auto_ack=True)
    while method is None and time.monotonic() < deadline:
        time.sleep(0.01)
        method, props, body = server.basic_get(q, auto_ack=True)
    s.log("request seen", body)
    return props.reply_to if method is not None else ""


@scenario("reply_to.round_trip", "reply_to")
def round_trip(s: Session) -> None:
    """The reply goes straight to the requester's pseudo-queue consumer."""
    ch, box = _requester(s)
    reply_to = _request(s, ch)
    s.log("reply_to", reply_to)
    responder = s.channel(s.connect(), confirm=True)
    s.publish_confirmed(responder, "reply", "", reply_to, "reply", correlation_id="c1")
    s.pump(ch.connection, lambda: bool(box))
    s.log("replies", [[d.body, d.routing_key, d.properties.correlation_id] for d in box])


@scenario("reply_to.wrong_key_and_mandatory", "reply_to", "returns")
def wrong_key(s: Session) -> None:
    """A reply to a mangled token is dropped; mandatory to a valid one: see what comes back."""
    ch, box = _requester(s)
    reply_to = _request(s, ch)
    responder = s.channel(s.connect())
    returned: list[Any] = []
    responder.add_on_return_callback(
        lambda _c, method, _p, _b: returned.append([method.reply_code, method.reply_text])
    )
    s.publish(responder, "", reply_to + "x", "to nowhere")
    s.sync(responder, "after mangled reply")
    s.publish(responder, "", reply_to, "mandatory reply", mandatory=True)
    s.pump(ch.connection, lambda: bool(box))
    s.pump(responder.connection, lambda: bool(returned), 0.5)
    s.log("replies", [d.body for d in box])
    s.log("returned", returned)


@scenario("reply_to.pseudo_queue_rules", "reply_to", "error.406", "error.404")
def pseudo_queue(s: Session) -> None:
    """Passive declare sees the pseudo-queue; get is 404; a second consume on the channel 406."""
    ch, _box = _requester(s)
    s.attempt("passive", ch.queue_declare, REPLY_TO, passive=True)
    s.attempt(
        "consume on other channel",
        s.channel(ch.connection).basic_consume,
        REPLY_TO,
        lambda *a: None,
        auto_ack=True,
    )
    s.attempt("get", s.channel(ch.connection).basic_get, REPLY_TO)
    s.attempt("second consume", ch.basic_consume, REPLY_TO, lambda *a: None, auto_ack=True)


@scenario("reply_to.consume_with_acks", "reply_to", "error.406")
def with_acks(s: Session) -> None:
    """Consuming reply-to in ack mode is refused."""
    s.attempt("consume", s.channel().basic_consume, REPLY_TO, lambda *a: None)


@scenario("reply_to.publish_without_consumer", "reply_to", "error.406")
def without_consumer(s: Session) -> None:
    """Publishing with reply_to set on a channel that is not consuming reply-to: 406."""
    conn = s.connect()
    s.channel(conn).basic_consume(REPLY_TO, lambda *a: None, auto_ack=True)
    ch = s.channel(conn)
    s.publish(ch, "", s.name("q"), "m", reply_to=REPLY_TO)
    s.sync(ch, "publish")


@scenario("reply_to.malformed_token", "reply_to", "connection.close")
def malformed(s: Session) -> None:
    """A reply to a malformed reply-to token closes the connection."""
    raw = s.raw()
    raw.open_channel(1)
    key = REPLY_TO + ".garbage.bogus"
    raw.send(
        method_frame(1, commands.Basic.Publish(exchange="", routing_key=key))
        + content_header_frame(1, 1)
        + raw_frame(3, 1, b"m")
    )
    s.log("closed", outcome(raw))
