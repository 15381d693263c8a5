"""Queue arguments: message TTL, per-message expiration, x-expires, length limits with both
overflow modes, priorities."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import QUIET, Session


@scenario("args.ttl.expired_never_delivered", "args.message_ttl")
def ttl_expires(s: Session) -> None:
    """Messages older than x-message-ttl leave the queue and are never delivered."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q", **{"x-message-ttl": 50})
    for i in range(3):
        s.publish(ch, "", q, str(i))
    s.wait_count(ch, q, 0)
    s.get(ch, q)


@scenario("args.ttl.zero_only_waiting_consumer", "args.message_ttl")
def ttl_zero(s: Session) -> None:
    """x-message-ttl 0: a message reaches a waiting consumer, otherwise it is dropped."""
    ch = s.channel()
    ch.confirm_delivery()
    q = temp_queue(s, ch, "q", **{"x-message-ttl": 0})
    s.publish(ch, "", q, "nobody waits")
    s.get(ch, q)
    box: list = []
    s.consumer(ch, q, box, auto_ack=True)
    s.publish(ch, "", q, "consumer waits")
    s.receive(ch, box, 1)


@scenario("args.ttl.requeued_after_ttl", "args.message_ttl", "basic.nack")
def ttl_requeued(s: Session) -> None:
    """An unacked message does not expire while held; requeued past its TTL it is dropped."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q", **{"x-message-ttl": 100})
    s.publish(ch, "", q, "m")
    held = s.get(ch, q, "get", ack=False)
    s.quiet(ch.connection, 0.25)
    if held is not None:
        ch.basic_nack(held.tag, requeue=True)
    s.wait_count(ch, q, 0)
    s.get(ch, q, "get after requeue")


@scenario("args.expiration.lowest_wins", "args.per_message_ttl")
def expiration_lowest(s: Session) -> None:
    """The lower of queue TTL and expiration wins; the property is delivered unchanged."""
    ch = s.channel()
    ch.confirm_delivery()
    q = temp_queue(s, ch, "q", **{"x-message-ttl": 60000})
    s.publish(ch, "", q, "gone", expiration="0")
    s.publish(ch, "", q, "kept", expiration="60000")
    got = s.get(ch, q)
    s.log("expiration", got.properties.expiration if got else None)


@scenario("args.expiration.short_behind_long", "args.per_message_ttl")
def expiration_head(s: Session) -> None:
    """A short expiration behind a long one: dropped once it reaches the head, never delivered."""
    ch = s.channel()
    ch.confirm_delivery()
    q = temp_queue(s, ch, "q")
    s.publish(ch, "", q, "long", expiration="60000")
    s.publish(ch, "", q, "short", expiration="1")
    s.publish(ch, "", q, "none")
    s.quiet(ch.connection, 0.1)
    s.drain(ch, q)


@scenario("args.expiration.expired_alone", "args.per_message_ttl")
def expiration_alone(s: Session) -> None:
    """Per-message expiration without any queue TTL."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    s.publish(ch, "", q, "short", expiration="30")
    s.publish(ch, "", q, "kept")
    s.wait_count(ch, q, 1)
    s.drain(ch, q)


@scenario("args.expiration.invalid_values", "args.per_message_ttl", "error.406")
def expiration_invalid(s: Session) -> None:
    """Invalid expiration strings close the channel with RabbitMQ's parse error detail."""
    q = s.name("q")
    s.channel().queue_declare(q)
    for value in ("soon", "", "-5", "1.5", " 10", "315360000001"):
        ch = s.channel()
        s.publish(ch, "", q, "m", expiration=value)
        s.sync(ch, f"expiration {value!r}")


@scenario("args.expires.unused_queue_deleted", "args.expires")
def expires(s: Session) -> None:
    """A queue unused for x-expires ms is deleted."""
    q = s.name("q")
    s.channel().queue_declare(q, arguments={"x-expires": 100})
    s.log("exists right away", s.exists(q))
    s.wait_gone(q)


@scenario("args.expires.consumer_keeps_queue", "args.expires", "basic.cancel")
def expires_consumer(s: Session) -> None:
    """A queue with a consumer does not expire; after the cancel it does."""
    q = s.name("q")
    ch = s.channel()
    ch.queue_declare(q, arguments={"x-expires": 100})
    tag = ch.basic_consume(q, lambda *a: None)
    s.quiet(ch.connection, 0.3)
    s.attempt("with consumer after 300 ms", s.channel().queue_declare, q, passive=True)
    ch.basic_cancel(tag)
    s.wait_gone(q)


@scenario("args.max_length.drop_head", "args.max_length")
def max_length(s: Session) -> None:
    """x-max-length drops the oldest messages (default overflow drop-head)."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length": 2})
    for i in range(5):
        s.publish(ch, "", q, str(i))
    s.drain(ch, q)


@scenario("args.max_length.bytes", "args.max_length")
def max_length_bytes(s: Session) -> None:
    """x-max-length-bytes counts body bytes and drops from the head."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length-bytes": 10})
    for body in ("aaaa", "bbbb", "cccc", "dddddddddddd", "e"):
        s.publish(ch, "", q, body)
    s.drain(ch, q)


@scenario("args.max_length.zero", "args.max_length")
def max_length_zero(s: Session) -> None:
    """x-max-length 0 keeps nothing, but a waiting consumer still gets messages."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length": 0})
    s.publish(ch, "", q, "dropped")
    s.get(ch, q)
    box: list = []
    s.consumer(ch, q, box, auto_ack=True)
    s.publish(ch, "", q, "to consumer")
    s.receive(ch, box, 1)


@scenario("args.max_length.ready_only", "args.max_length", "basic.nack")
def max_length_ready(s: Session) -> None:
    """Unacked messages do not count toward the limit; requeue applies the limit again."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q", **{"x-max-length": 2})
    for i in range(2):
        s.publish(ch, "", q, str(i))
    held = [s.get(ch, q, "get", ack=False) for _ in range(2)]
    for i in range(2, 5):
        s.publish(ch, "", q, str(i))
    s.attempt("count", ch.queue_declare, q, passive=True)
    for got in held:
        if got is not None:
            ch.basic_nack(got.tag, requeue=True)
    s.drain(ch, q)


@scenario("args.reject_publish.confirms_nacked", "args.reject_publish", "confirms.nack")
def reject_publish_confirms(s: Session) -> None:
    """overflow reject-publish: publishes past the limit are nacked and not enqueued."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    for i in range(3):
        s.publish_confirmed(ch, f"publish {i}", "", q, str(i))
    s.drain(ch, q)
    s.publish_confirmed(ch, "after drain", "", q, "again")


@scenario("args.reject_publish.without_confirms", "args.reject_publish")
def reject_publish_plain(s: Session) -> None:
    """Without confirms, rejected publishes are dropped silently."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length": 2, "x-overflow": "reject-publish"})
    for i in range(4):
        s.publish(ch, "", q, str(i))
    s.drain(ch, q)


@scenario("args.reject_publish.other_queues", "args.reject_publish", "confirms.nack")
def reject_publish_fanout(s: Session) -> None:
    """A full reject-publish queue nacks the publish; other queues still get the message."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, "fanout")
    full = temp_queue(s, ch, "full", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    other = temp_queue(s, ch, "other")
    ch.queue_bind(full, ex)
    ch.queue_bind(other, ex)
    ch.confirm_delivery()
    s.publish_confirmed(ch, "publish", ex, "", "m")
    s.drain(ch, full, "full")
    s.drain(ch, other, "other")


@scenario("args.reject_publish.mandatory_nacked_not_returned", "args.reject_publish", "returns")
def reject_publish_mandatory(s: Session) -> None:
    """A mandatory publish refused by a full queue is nacked, not returned."""
    ch = s.channel()
    q = temp_queue(s, ch, "q", **{"x-max-length": 0, "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    s.publish_confirmed(ch, "publish", "", q, "m", mandatory=True)


def _priority_queue(
    s: Session, ch: BlockingChannel, priorities: list[int | None], **args: Any
) -> str:
    q = temp_queue(s, ch, "q", **args)
    for i, priority in enumerate(priorities):
        s.publish(ch, "", q, f"{i}:p{priority}", priority=priority)
    return q


@scenario("args.priority.order", "args.priority")
def priority_order(s: Session) -> None:
    """Higher priorities first, FIFO within a priority; above the maximum counts as the maximum."""
    ch = s.channel()
    q = _priority_queue(s, ch, [1, 5, None, 10, 5, 0, 20, 3], **{"x-max-priority": 5})
    s.drain(ch, q)


@scenario("args.priority.ignored_without_max", "args.priority")
def priority_ignored(s: Session) -> None:
    """Without x-max-priority the priority property does not reorder."""
    ch = s.channel()
    q = _priority_queue(s, ch, [1, 9, None, 5])
    s.drain(ch, q)


@scenario("args.priority.to_consumer_and_requeue", "args.priority", "basic.nack")
def priority_requeue(s: Session) -> None:
    """Requeued messages take their priority place again; a consumer sees priority order."""
    ch = s.channel()
    q = _priority_queue(s, ch, [1, 3, 2], **{"x-max-priority": 3})
    held = [s.get(ch, q, "get", ack=False) for _ in range(3)]
    for got in reversed(held):
        if got is not None:
            ch.basic_nack(got.tag, requeue=True)
    box: list = []
    s.consumer(ch, q, box, auto_ack=True)
    s.receive(ch, box, 3)


@scenario("args.priority.prefetch_sees_order", "args.priority", "qos.per_consumer")
def priority_prefetch(s: Session) -> None:
    """With prefetch 1, a later high-priority message overtakes queued low ones."""
    ch = s.channel()
    q = _priority_queue(s, ch, [1, 1], **{"x-max-priority": 9})
    ch.basic_qos(prefetch_count=1)
    box: list = []
    s.consumer(ch, q, box)
    s.pump(ch.connection, lambda: len(box) >= 1)
    s.publish(ch, "", q, "urgent", priority=9)
    s.quiet(ch.connection, QUIET)
    while len(box) < 3:
        before = len(box)
        ch.basic_ack(box[-1].tag)
        if not s.pump(ch.connection, lambda n=before: len(box) > n):
            break
    s.log("order", [d.body for d in box])


@scenario("args.expiration.zero_waiting_consumer", "args.per_message_ttl", "basic.consume")
def expiration_zero_consumer(s: Session) -> None:
    """expiration "0": delivered to a waiting consumer, dropped when nobody waits."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    s.publish(ch, "", q, "nobody waits", expiration="0")
    s.get(ch, q)
    box: list = []
    s.consumer(ch, q, box, auto_ack=True)
    s.publish(ch, "", q, "consumer waits", expiration="0")
    s.receive(ch, box, 1)
    s.log("expiration delivered", [d.properties.expiration for d in box])
