"""The basic class with pika: consume, cancel, get, ack, nack, reject, recover, channel close."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.clients import frames, outcome
from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import Delivery, Session


def _tagged(box: list[Delivery]) -> list[list[object]]:
    return [[d.tag, d.body, d.redelivered] for d in box]


def _filled(s: Session, count: int) -> tuple[BlockingChannel, str]:
    """A channel and a queue holding messages "0" .. str(count - 1), confirmed."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    for i in range(count):
        s.publish(ch, "", q, str(i))
    return s.channel(), q


def _consume(s: Session, count: int, **kwargs: Any) -> tuple[BlockingChannel, str, list[Delivery]]:
    ch, q = _filled(s, count)
    box: list[Delivery] = []
    s.consumer(ch, q, box, **kwargs)
    s.pump(ch.connection, lambda: len(box) >= count)
    return ch, q, box


@scenario("basic.consume.order_and_tags", "basic.consume")
def consume_order(s: Session) -> None:
    """A consumer gets messages in order with delivery tags 1..n, not redelivered."""
    _ch, _q, box = _consume(s, 5)
    s.log("deliveries", _tagged(box))


@scenario("basic.consume.duplicate_tag", "basic.consume", "error.530")
def duplicate_tag(s: Session) -> None:
    """Reusing a consumer tag on a channel closes the connection with 530 (raw client: pika
    refuses to send it)."""
    from pamqp import commands

    q = s.name("q")
    s.channel().queue_declare(q)
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Basic.Consume(queue=q, consumer_tag="dup"))
    s.log("first", frames(raw, "Basic.ConsumeOk"))
    raw.send_method(1, commands.Basic.Consume(queue=s.name("q"), consumer_tag="dup"))
    s.log("second", outcome(raw))


@scenario("basic.consume.generated_tag", "basic.consume")
def generated_tag(s: Session) -> None:
    """An empty consumer tag gets a server-generated amq.ctag-* name (raw client: pika and
    aiormq always choose a tag themselves)."""
    from pamqp import commands

    q = s.name("q")
    s.channel(confirm=True).queue_declare(q)
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Basic.Consume(queue=q, consumer_tag=""))
    ok = raw.expect("Basic.ConsumeOk")
    s.log("consume-ok tag", ok.consumer_tag)
    s.publish(s.channel(), "", q, "m")
    deliver = raw.expect("Basic.Deliver")
    s.log("deliver tag", [deliver.consumer_tag, deliver.consumer_tag == ok.consumer_tag])


@scenario("basic.consume.exclusive_consumer", "basic.consume", "error.403")
def exclusive_consumer(s: Session) -> None:
    """An exclusive consumer keeps others out (403), and cannot join a queue in use."""
    ch, q = _filled(s, 0)
    s.attempt("exclusive", ch.basic_consume, q, lambda *a: None, exclusive=True)
    s.attempt("second on other channel", s.channel().basic_consume, q, lambda *a: None)
    q2 = s.name("q2")
    s.channel().queue_declare(q2)
    s.channel().basic_consume(q2, lambda *a: None)
    s.attempt(
        "exclusive on used queue", s.channel().basic_consume, q2, lambda *a: None, exclusive=True
    )


@scenario("basic.consume.round_robin", "basic.consume")
def round_robin(s: Session) -> None:
    """Two consumers on one queue share the messages in turn."""
    ch, q = _filled(s, 0)
    other = s.channel()
    first: list[Delivery] = []
    second: list[Delivery] = []
    s.consumer(ch, q, first, auto_ack=True)
    s.consumer(other, q, second, auto_ack=True)
    pub = s.channel(confirm=True)
    for i in range(6):
        s.publish(pub, "", q, str(i))
    s.pump(ch.connection, lambda: len(first) + len(second) >= 6)
    s.log("first", [d.body for d in first])
    s.log("second", [d.body for d in second])


@scenario("basic.consume.priorities", "basic.consume")
def consumer_priorities(s: Session) -> None:
    """A higher x-priority consumer gets the messages while it has capacity."""
    ch, q = _filled(s, 0)
    low: list[Delivery] = []
    high: list[Delivery] = []
    s.consumer(ch, q, low, auto_ack=True, arguments={"x-priority": 1})
    s.consumer(ch, q, high, auto_ack=True, arguments={"x-priority": 5})
    pub = s.channel(confirm=True)
    for i in range(4):
        s.publish(pub, "", q, str(i))
    s.pump(ch.connection, lambda: len(low) + len(high) >= 4)
    s.log("low", [d.body for d in low])
    s.log("high", [d.body for d in high])


@scenario("basic.consume.auto_ack", "basic.consume", "basic.ack")
def auto_ack(s: Session) -> None:
    """With no-ack the messages are gone once delivered; acking one is an unknown tag."""
    ch, q, box = _consume(s, 3, auto_ack=True)
    s.log("deliveries", _tagged(box))
    s.attempt("count", s.channel().queue_declare, q, passive=True)
    ch.basic_ack(1)
    s.sync(ch, "ack on no-ack delivery")


@scenario("basic.cancel.unknown_tag", "basic.cancel")
def cancel_unknown(s: Session) -> None:
    """Cancelling an unknown consumer tag is fine."""
    ch = s.channel()
    s.attempt("cancel", ch.basic_cancel, "nosuchtag")
    s.sync(ch, "channel still open")


@scenario("basic.cancel.unacked_stay", "basic.cancel", "basic.ack")
def cancel_unacked(s: Session) -> None:
    """After a cancel, unacked deliveries can still be acked; the rest return on close."""
    ch, q, box = _consume(s, 3)
    ch.basic_cancel(box[0].consumer_tag if box else "")
    ch.basic_ack(1)
    s.sync(ch, "ack after cancel")
    ch.close()
    s.drain(s.channel(), q)


@scenario("basic.cancel.server_sent_on_delete", "basic.cancel", "queue.delete")
def server_cancel(s: Session) -> None:
    """Deleting a consumed queue sends basic.cancel to the consumer; the channel stays open."""
    ch, q = _filled(s, 0)
    cancelled: list[str] = []
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    ch.basic_consume(q, lambda *a: None, consumer_tag="watch")
    s.channel().queue_delete(q)
    s.pump(ch.connection, lambda: bool(cancelled))
    s.log("cancelled", cancelled)
    s.sync(ch, "channel still open")


@scenario("basic.get.replies", "basic.get")
def get_replies(s: Session) -> None:
    """get-ok counts what is left; get-empty when nothing is ready; requeued means redelivered."""
    ch, q = _filled(s, 2)
    first = s.get(ch, q, "first", ack=False)
    s.get(ch, q, "second")
    s.get(ch, q, "empty")
    if first is not None:
        ch.basic_reject(first.tag, requeue=True)
    s.get(ch, q, "after requeue")
    s.log("routing", [first.exchange, first.routing_key] if first else None)


@scenario("basic.get.with_consumer", "basic.get", "basic.consume")
def get_with_consumer(s: Session) -> None:
    """basic.get on a queue that has a busy consumer takes the next ready message."""
    ch, q = _filled(s, 3)
    ch.basic_qos(prefetch_count=1)
    box: list[Delivery] = []
    s.consumer(ch, q, box)
    s.pump(ch.connection, lambda: bool(box))
    s.get(s.channel(), q, "get")
    s.log("consumer", [d.body for d in box])


@scenario("basic.ack.single_and_multiple", "basic.ack", "basic.recover")
def ack_multiple(s: Session) -> None:
    """ack(2), then ack(4, multiple) leaves only 5 unacked for recover."""
    ch, _q, box = _consume(s, 5)
    ch.basic_ack(2)
    ch.basic_ack(4, multiple=True)
    s.attempt("recover", ch.basic_recover, requeue=True)
    s.pump(ch.connection, lambda: len(box) >= 6)
    s.quiet(ch.connection)
    s.log("deliveries", _tagged(box))


@scenario("basic.ack.zero_multiple", "basic.ack")
def ack_zero(s: Session) -> None:
    """ack(0, multiple) acks everything outstanding; with nothing outstanding it is fine too."""
    ch, q, _box = _consume(s, 3)
    ch.basic_ack(0, multiple=True)
    s.sync(ch, "ack all")
    ch.basic_ack(0, multiple=True)
    s.sync(ch, "ack all again")
    ch.close()
    s.attempt("count", s.channel().queue_declare, q, passive=True)


@scenario("basic.ack.unknown_tags", "basic.ack", "error.406")
def ack_unknown(s: Session) -> None:
    """Unknown, repeated and zero delivery tags: 406 unknown delivery tag."""
    for label, tag, multiple in (("99", 99, False), ("99 multiple", 99, True), ("0", 0, False)):
        ch, q = _filled(s, 0)
        ch.basic_ack(tag, multiple=multiple)
        s.sync(ch, f"ack {label}")
    ch, q = _filled(s, 1)
    got = s.get(ch, q, ack=False)
    ch.basic_ack(got.tag if got else 1)
    ch.basic_ack(got.tag if got else 1)
    s.sync(ch, "ack twice")


@scenario("basic.ack.other_channel", "basic.ack", "error.406")
def ack_other_channel(s: Session) -> None:
    """Delivery tags belong to their channel: acking on another channel is an unknown tag."""
    ch, q = _filled(s, 1)
    s.get(ch, q, ack=False)
    other = s.channel()
    other.basic_ack(1)
    s.sync(other, "ack on other channel")
    s.sync(ch, "original channel")


@scenario("basic.nack.requeue_order", "basic.nack", "ordering")
def nack_requeue(s: Session) -> None:
    """nack(requeue) of 2 and 4 redelivers them at once, in queue order, flagged."""
    ch, _q, box = _consume(s, 5)
    ch.basic_nack(2, requeue=True)
    ch.basic_nack(4, requeue=True)
    s.pump(ch.connection, lambda: len(box) >= 7)
    s.quiet(ch.connection)
    s.log("deliveries", _tagged(box))


@scenario("basic.nack.multiple", "basic.nack")
def nack_multiple(s: Session) -> None:
    """nack(3, multiple, requeue) returns 1..3 in order; nack without requeue drops."""
    ch, q = _filled(s, 4)
    for _ in range(4):
        s.get(ch, q, ack=False)
    ch.basic_nack(3, multiple=True, requeue=True)
    ch.basic_nack(4, requeue=False)
    s.sync(ch)
    s.drain(ch, q)


@scenario("basic.nack.unknown_tag", "basic.nack", "error.406")
def nack_unknown(s: Session) -> None:
    """nack of an unknown tag: 406."""
    ch, _q = _filled(s, 0)
    ch.basic_nack(7, multiple=True)
    s.sync(ch, "nack 7")


@scenario("basic.reject.requeue_and_drop", "basic.reject", "ordering")
def reject(s: Session) -> None:
    """reject(requeue) puts a message back in its place; reject(false) drops it."""
    ch, q = _filled(s, 3)
    got = [s.get(ch, q, ack=False) for _ in range(3)]
    ch.basic_reject(2, requeue=True)
    ch.basic_reject(3, requeue=False)
    ch.basic_reject(1, requeue=True)
    s.sync(ch)
    s.log("got", len([g for g in got if g]))
    s.drain(ch, q)


@scenario("basic.reject.unknown_tag", "basic.reject", "error.406")
def reject_unknown(s: Session) -> None:
    """reject of an unknown tag: 406."""
    ch, _q = _filled(s, 0)
    ch.basic_reject(5)
    s.sync(ch, "reject 5")


@scenario("basic.recover.requeue", "basic.recover", "ordering")
def recover(s: Session) -> None:
    """recover(requeue) redelivers every unacked message, in order, flagged."""
    ch, _q, box = _consume(s, 3)
    ch.basic_ack(2)
    s.attempt("recover", ch.basic_recover, requeue=True)
    s.pump(ch.connection, lambda: len(box) >= 5)
    s.quiet(ch.connection)
    s.log("deliveries", _tagged(box))


@scenario("basic.recover.no_requeue", "basic.recover", "error.540")
def recover_no_requeue(s: Session) -> None:
    """recover(requeue=false) is not implemented: 540 closes the connection."""
    ch, _q, _box = _consume(s, 1)
    s.attempt("recover false", ch.basic_recover, requeue=False)


@scenario("basic.close_requeues", "ordering", "channel.lifecycle")
def close_requeues(s: Session) -> None:
    """Closing a channel returns its unacked messages in their original order, flagged."""
    ch, q, _box = _consume(s, 4)
    ch.basic_ack(2)
    ch.close()
    s.drain(s.channel(), q)


@scenario("basic.connection_close_requeues", "ordering", "channel.lifecycle")
def connection_close_requeues(s: Session) -> None:
    """Closing the connection does the same for every channel on it."""
    ch, q = _filled(s, 4)
    conn = s.connect()
    a, b = s.channel(conn), s.channel(conn)
    s.get(a, q, ack=False)
    s.get(b, q, ack=False)
    s.get(a, q, ack=False)
    conn.close()
    s.drain(ch, q)
