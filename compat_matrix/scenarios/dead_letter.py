"""Dead-lettering: every reason, x-death and x-first-death-* headers, CC handling, cycles."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import full, temp_queue, x_death
from compat_matrix.session import Session


def _show(s: Session, ch: BlockingChannel, queue: str, label: str) -> None:
    """Wait for one message in `queue` and log it with its dead-lettering headers."""
    s.wait_count(ch, queue, 1, label + " count")
    got = s.get(ch, queue, label + " get")
    if got is not None:
        record = full(got)
        record["properties"]["headers"] = x_death(got)
        s.log(label, record)


def _with_dlq(s: Session, ch: BlockingChannel, **args: Any) -> tuple[str, str]:
    """A source queue dead-lettering to a fanout exchange with one queue behind it."""
    dlx = s.name("dlx")
    ch.exchange_declare(dlx, "fanout")
    dlq = temp_queue(s, ch, "dlq")
    ch.queue_bind(dlq, dlx)
    src = temp_queue(s, ch, "src", **{"x-dead-letter-exchange": dlx, **args})
    return src, dlq


@scenario("dlx.rejected", "args.dlx", "basic.reject")
def rejected(s: Session) -> None:
    """reject(requeue=false): x-death with reason rejected; properties and headers kept."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch)
    s.publish(ch, "", src, "m", headers={"orig": "v"}, message_id="id1", priority=3)
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=False)
    _show(s, ch, dlq, "dead")


@scenario("dlx.nacked_multiple", "args.dlx", "basic.nack")
def nacked(s: Session) -> None:
    """nack(multiple, requeue=false) dead-letters every message, in order."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch)
    for i in range(3):
        s.publish(ch, "", src, str(i))
    last = None
    for _ in range(3):
        last = s.get(ch, src, ack=False)
    if last is not None:
        ch.basic_nack(last.tag, multiple=True, requeue=False)
    s.wait_count(ch, dlq, 3)
    s.drain(ch, dlq)


@scenario("dlx.requeue_true_not_dead_lettered", "args.dlx", "basic.reject")
def requeued(s: Session) -> None:
    """reject(requeue=true) puts the message back; nothing is dead-lettered."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch)
    s.publish(ch, "", src, "m")
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=True)
    s.get(ch, src, "source")
    s.get(ch, dlq, "dead letter queue")


@scenario("dlx.expired_queue_ttl_routing_key", "args.dlx", "args.message_ttl")
def expired(s: Session) -> None:
    """Queue TTL expiry with x-dead-letter-routing-key: reason expired, key replaced."""
    ch = s.channel(confirm=True)
    dlq = temp_queue(s, ch, "dlq")
    src = temp_queue(
        s,
        ch,
        "src",
        **{"x-message-ttl": 30, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    s.publish(ch, "", src, "m")
    _show(s, ch, dlq, "dead")


@scenario("dlx.expired_per_message", "args.dlx", "args.per_message_ttl")
def expired_per_message(s: Session) -> None:
    """Per-message expiry: original-expiration in x-death, no expiration property left."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch)
    s.publish(ch, "", src, "m", expiration="30")
    _show(s, ch, dlq, "dead")


@scenario("dlx.maxlen_drop_head", "args.dlx", "args.max_length")
def maxlen(s: Session) -> None:
    """Overflow drop-head dead-letters the oldest message with reason maxlen."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch, **{"x-max-length": 1})
    s.publish(ch, "", src, "first")
    s.publish(ch, "", src, "second")
    _show(s, ch, dlq, "dead")
    s.drain(ch, src, "left in source")


@scenario("dlx.reject_publish_dlx", "args.dlx", "args.reject_publish", "confirms.nack")
def reject_publish_dlx(s: Session) -> None:
    """overflow reject-publish-dlx: the refused publish is nacked and dead-lettered."""
    ch = s.channel(confirm=True)
    src, dlq = _with_dlq(s, ch, **{"x-max-length": 1, "x-overflow": "reject-publish-dlx"})
    s.publish_confirmed(ch, "publish 1", "", src, "kept")
    s.publish_confirmed(ch, "publish 2", "", src, "refused")
    s.drain(ch, src, "source")
    s.wait_count(ch, dlq, 1, "dead letter count")
    s.drain(ch, dlq, "dead letter queue")


@scenario("dlx.cc_replaced_by_routing_key", "args.dlx")
def cc_with_key(s: Session) -> None:
    """With a dead-letter routing key the CC header is dropped and listed in routing-keys."""
    ch = s.channel(confirm=True)
    dlq = temp_queue(s, ch, "dlq")
    src = temp_queue(
        s, ch, "src", **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
    )
    other = temp_queue(s, ch, "other")
    s.publish(ch, "", src, "m", headers={"CC": [other]})
    s.drain(ch, other, "other via CC")
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=False)
    _show(s, ch, dlq, "dead")
    s.drain(ch, other, "other after dead-lettering")


@scenario("dlx.cc_kept_without_routing_key", "args.dlx", "exchange.direct")
def cc_without_key(s: Session) -> None:
    """Without a dead-letter routing key the original keys, CC included, route again."""
    ch = s.channel(confirm=True)
    dlx = s.name("dlx")
    ch.exchange_declare(dlx, "direct")
    a, b = temp_queue(s, ch, "a"), temp_queue(s, ch, "b")
    ch.queue_bind(a, dlx, s.name("k"))
    ch.queue_bind(b, dlx, s.name("cc"))
    src = temp_queue(s, ch, "src", **{"x-dead-letter-exchange": dlx})
    ch.queue_bind(src, "amq.direct", s.name("k"))
    ch.queue_bind(src, "amq.direct", s.name("cc"))
    s.publish(ch, "amq.direct", s.name("k"), "m", headers={"CC": [s.name("cc")]})
    s.attempt("src count", ch.queue_declare, src, passive=True)
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=False)
    for label, queue in (("a", a), ("b", b)):
        s.wait_count(ch, queue, 1, label + " count")
        got = s.get(ch, queue, label)
        if got is not None:
            s.log(label + " message", [got.routing_key, x_death(got)])


@scenario("dlx.missing_exchange_drops", "args.dlx")
def missing_dlx(s: Session) -> None:
    """A dead-letter exchange that does not exist: the message is dropped."""
    ch = s.channel(confirm=True)
    src = temp_queue(s, ch, "src", **{"x-dead-letter-exchange": s.name("nope")})
    s.publish(ch, "", src, "m")
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=False)
    s.drain(ch, src, "source")


@scenario("dlx.rejection_ring_counts", "args.dlx")
def ring(s: Session) -> None:
    """Rejections around a ring of two queues: one x-death entry per queue and reason."""
    ch = s.channel(confirm=True)
    qa, qb = s.name("a"), s.name("b")
    ch.queue_declare(qa, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": qb})
    ch.queue_declare(qb, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": qa})
    s.publish(ch, "", qa, "m")
    for hop, queue in enumerate((qa, qb, qa)):
        s.wait_count(ch, queue, 1, f"hop {hop} count")
        got = s.get(ch, queue, f"hop {hop}", ack=False)
        if got is not None:
            ch.basic_reject(got.tag, requeue=False)
    _show(s, ch, qb, "after three rejections")


@scenario("dlx.automatic_cycle_dropped", "args.dlx", "args.message_ttl")
def cycle(s: Session) -> None:
    """A queue whose expired messages dead-letter back to itself: the cycle is cut (dropped)."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-message-ttl": 20, "x-dead-letter-exchange": ""})
    s.publish(ch, "", q, "m")
    s.wait_count(ch, q, 0)
    s.quiet(ch.connection, 0.1)
    s.get(ch, q, "after expiry")


@scenario("dlx.dead_lettered_twice_same_reason", "args.dlx", "args.message_ttl")
def twice(s: Session) -> None:
    """Expired twice from the same queue via a rejection in between: count goes to 2."""
    ch = s.channel(confirm=True)
    q, back = s.name("q"), s.name("back")
    ch.queue_declare(back)
    ch.queue_declare(
        q,
        arguments={
            "x-message-ttl": 20,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": back,
        },
    )
    s.publish(ch, "", q, "m")
    s.wait_count(ch, back, 1, "first expiry")
    got = s.get(ch, back, "from back")
    if got is not None:
        s.publish(ch, "", q, "m", headers=got.properties.headers)
    _show(s, ch, back, "second expiry")
