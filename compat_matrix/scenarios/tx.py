"""The tx class with pika, row by row of RabbitMQ's tx semantics table: what is transactional
(publish, ack, reject), what is not (wiring, consuming and getting), and when effects show."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import Delivery, Session


def _tx(s: Session) -> tuple[BlockingChannel, BlockingChannel, str]:
    """A transactional channel, an observer channel on another connection, and a queue."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    s.attempt("tx.select", ch.tx_select)
    return ch, s.channel(s.connect()), q


def _tx_filled(s: Session, count: int) -> tuple[BlockingChannel, str, list[Delivery]]:
    """A queue with `count` messages, all taken unacked by basic.get on a tx channel."""
    pub = s.channel(confirm=True)
    q = temp_queue(s, pub, "q")
    for i in range(count):
        s.publish(pub, "", q, str(i))
    ch = s.channel()
    ch.tx_select()
    got = [s.get(ch, q, ack=False) for _ in range(count)]
    return ch, q, [g for g in got if g is not None]


@scenario("tx.publish.commit", "tx.publish", "tx.visibility")
def publish_commit(s: Session) -> None:
    """Publishes are invisible until commit; at commit-ok all are there, in order."""
    ch, observer, q = _tx(s)
    for i in range(3):
        s.publish(ch, "", q, str(i))
    s.sync(ch, "round trip before commit")
    before = s.get(observer, q, "observer before commit")
    s.check("uncommitted publishes are invisible", before is None)
    s.attempt("commit", ch.tx_commit)
    after = s.drain(observer, q, "observer after commit-ok")
    s.check(
        "at commit-ok all publishes are visible, in order",
        after == [[str(i), False] for i in range(3)],
    )


@scenario("tx.publish.rollback", "tx.publish")
def publish_rollback(s: Session) -> None:
    """Rolled back publishes are discarded; the channel stays transactional."""
    ch, observer, q = _tx(s)
    s.publish(ch, "", q, "dropped")
    s.attempt("rollback", ch.tx_rollback)
    s.publish(ch, "", q, "kept")
    s.attempt("commit", ch.tx_commit)
    s.check("rollback discards publishes", s.drain(observer, q) == [["kept", False]])


@scenario("tx.publish.discarded_on_close", "tx.publish", "channel.lifecycle")
def publish_close(s: Session) -> None:
    """Closing the channel (or connection) with uncommitted publishes discards them."""
    ch, observer, q = _tx(s)
    s.publish(ch, "", q, "channel closed")
    ch.close()
    conn = s.connect()
    other = s.channel(conn)
    other.tx_select()
    s.publish(other, "", q, "connection closed")
    conn.close()
    s.drain(observer, q)


@scenario("tx.publish.routing_at_publish_time", "tx.publish", "tx.wiring")
def routed_at_publish(s: Session) -> None:
    """Targets are resolved when the publish arrives, not at commit."""
    ch, observer, q = _tx(s)
    ex = s.name("ex")
    ch.exchange_declare(ex, "fanout")
    ch.queue_bind(q, ex)
    s.publish(ch, ex, "", "bound at publish")
    ch.queue_unbind(q, ex)
    late = temp_queue(s, ch, "late")
    ch.queue_bind(late, ex)
    s.attempt("commit", ch.tx_commit)
    s.drain(observer, q, "queue unbound before commit")
    s.drain(observer, late, "queue bound before commit")


@scenario("tx.publish.queue_deleted_before_commit", "tx.publish", "tx.wiring")
def deleted_before_commit(s: Session) -> None:
    """A queue deleted between publish and commit: the commit still succeeds."""
    ch, observer, q = _tx(s)
    other = temp_queue(s, ch, "other")
    s.publish(ch, "", q, "to deleted")
    s.publish(ch, "", other, "to other")
    observer.queue_delete(q)
    s.attempt("commit", ch.tx_commit)
    s.drain(observer, other)


@scenario("tx.ack.commit_and_rollback", "tx.ack")
def ack_commit(s: Session) -> None:
    """Acks take effect at commit; rolled back acks leave the messages unacked, to ack again."""
    ch, q, _got = _tx_filled(s, 3)
    ch.basic_ack(1)
    s.attempt("rollback", ch.tx_rollback)
    ch.basic_ack(1)
    ch.basic_ack(3)
    s.attempt("commit", ch.tx_commit)
    ch.close()
    left = s.drain(s.channel(), q, "requeued on close")
    s.check("acks are transactional", left == [["1", True]])


@scenario("tx.ack.rollback_does_not_requeue", "tx.ack", "tx.consume_get")
def rollback_no_requeue(s: Session) -> None:
    """After get, ack, rollback the message stays unacked on the channel (ready count 0)."""
    ch, q, _got = _tx_filled(s, 1)
    ch.basic_ack(1)
    s.attempt("rollback", ch.tx_rollback)
    s.attempt("count after rollback", s.channel().queue_declare, q, passive=True)
    ch.close()
    s.drain(s.channel(), q, "after close")


@scenario("tx.ack.multiple_and_out_of_order", "tx.ack")
def ack_multiple(s: Session) -> None:
    """Acks in any order and multiple acks all apply at commit."""
    ch, q, _got = _tx_filled(s, 5)
    ch.basic_ack(4)
    ch.basic_ack(2, multiple=True)
    s.attempt("commit", ch.tx_commit)
    ch.close()
    s.drain(s.channel(), q, "left")


@scenario("tx.ack.errors_immediate", "tx.ack", "tx.errors", "error.406")
def ack_errors(s: Session) -> None:
    """An unknown tag, or a tag acked twice in one transaction, fails at once, not at commit."""
    ch, _q, _got = _tx_filled(s, 1)
    ch.basic_ack(7)
    s.sync(ch, "ack 7 in tx")
    ch, _q, _got = _tx_filled(s, 1)
    ch.basic_ack(1)
    ch.basic_ack(1)
    s.sync(ch, "ack 1 twice in tx")


@scenario("tx.ack.staged_holds_prefetch", "tx.ack", "qos.per_consumer")
def staged_prefetch(s: Session) -> None:
    """A staged ack does not free prefetch credit until the commit."""
    pub = s.channel(confirm=True)
    q = temp_queue(s, pub, "q")
    for i in range(3):
        s.publish(pub, "", q, str(i))
    ch = s.channel()
    ch.basic_qos(prefetch_count=1)
    ch.tx_select()
    box: list[Delivery] = []
    s.consumer(ch, q, box)
    s.pump(ch.connection, lambda: bool(box))
    ch.basic_ack(box[0].tag if box else 1)
    s.quiet(ch.connection)
    s.log("before commit", [d.body for d in box])
    ch.tx_commit()
    s.pump(ch.connection, lambda: len(box) >= 2)
    s.log("after commit", [d.body for d in box])


@scenario("tx.reject.commit_requeues", "tx.reject")
def reject_commit(s: Session) -> None:
    """A staged reject(requeue) leaves the message unacked until commit, then requeues it."""
    ch, q, _got = _tx_filled(s, 2)
    ch.basic_reject(2, requeue=True)
    ch.basic_nack(1, requeue=True)
    observer = s.channel(s.connect())
    before = s.get(observer, q, "before commit")
    s.attempt("commit", ch.tx_commit)
    after = s.drain(observer, q, "after commit")
    s.check("rejects are transactional", before is None and len(after) == 2)


@scenario("tx.reject.rollback_keeps_unacked", "tx.reject")
def reject_rollback(s: Session) -> None:
    """A rolled back reject is undone: the message stays unacked and can be acked later."""
    ch, q, _got = _tx_filled(s, 2)
    ch.basic_reject(1, requeue=False)
    ch.basic_nack(2, requeue=True)
    s.attempt("rollback", ch.tx_rollback)
    ch.basic_ack(1)
    s.attempt("commit", ch.tx_commit)
    ch.close()
    s.drain(s.channel(), q, "after close")


@scenario("tx.reject.nack_multiple_order", "tx.reject", "ordering")
def nack_multiple(s: Session) -> None:
    """nack(multiple, requeue) in a transaction requeues in the original order at commit."""
    ch, q, _got = _tx_filled(s, 4)
    ch.basic_ack(2)
    ch.basic_nack(4, multiple=True, requeue=True)
    s.attempt("commit", ch.tx_commit)
    s.drain(ch, q, "after commit")


@scenario("tx.reject.dead_letter_at_commit", "tx.reject", "args.dlx")
def reject_dlx(s: Session) -> None:
    """A staged reject(requeue=false) dead-letters only at commit."""
    ch = s.channel(confirm=True)
    dlq = temp_queue(s, ch, "dlq")
    src = temp_queue(
        s, ch, "src", **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
    )
    s.publish(ch, "", src, "m")
    tx = s.channel()
    tx.tx_select()
    s.get(tx, src, ack=False)
    tx.basic_reject(1, requeue=False)
    s.get(s.channel(), dlq, "dead letters before commit")
    s.attempt("commit", tx.tx_commit)
    s.wait_count(ch, dlq, 1, "dead letters after commit")


@scenario("tx.wiring.not_transactional", "tx.wiring")
def wiring(s: Session) -> None:
    """Declares, binds and deletes in a transaction happen at once; rollback keeps them."""
    ch = s.channel()
    ch.tx_select()
    ex, q, gone = s.name("ex"), s.name("q"), s.name("gone")
    ch.queue_declare(gone)
    ch.exchange_declare(ex, "fanout")
    ch.queue_declare(q)
    ch.queue_bind(q, ex)
    ch.queue_delete(gone)
    observer = s.channel(s.connect())
    s.attempt("exchange before commit", observer.exchange_declare, ex, passive=True)
    s.attempt("rollback", ch.tx_rollback)
    s.attempt("queue after rollback", observer.queue_declare, q, passive=True)
    still_gone = not s.exists(gone)
    s.log("deleted queue after rollback", not still_gone)
    pub = s.channel(confirm=True)
    s.publish(pub, ex, "", "via binding")
    kept = s.drain(observer, q, "binding kept")
    s.check("wiring is not transactional", still_gone and kept == [["via binding", False]])


@scenario("tx.consume_get.not_transactional", "tx.consume_get")
def consume_get(s: Session) -> None:
    """Deliveries and gets happen at once and are not undone by rollback."""
    pub = s.channel(confirm=True)
    q = temp_queue(s, pub, "q")
    for i in range(3):
        s.publish(pub, "", q, str(i))
    ch = s.channel()
    ch.tx_select()
    got = s.get(ch, q, "get no-ack in tx")
    box: list[Delivery] = []
    s.consumer(ch, q, box, auto_ack=True)
    s.receive(ch, box, 2, "consumed in tx")
    s.attempt("rollback", ch.tx_rollback)
    s.attempt("count after rollback", pub.queue_declare, q, passive=True)
    s.check("gets and deliveries happen at once", got is not None and len(box) == 2)


@scenario("tx.errors.publish_missing_exchange", "tx.errors", "tx.publish", "error.404")
def publish_missing(s: Session) -> None:
    """A publish to a missing exchange in a transaction fails at once (404), not at commit."""
    ch, _observer, _q = _tx(s)
    s.publish(ch, s.name("nope"), "k", "m")
    s.check("the error comes before any commit", not s.sync(ch, "round trip before commit"))


@scenario("tx.return.on_commit_pika", "tx.return")
def return_on_commit(s: Session) -> None:
    """A mandatory unroutable publish is returned at commit, not when published."""
    ch, _observer, _q = _tx(s)
    returned: list[Any] = []
    ch.add_on_return_callback(
        lambda _c, method, _p, body: returned.append([method.reply_code, body.decode()])
    )
    s.publish(ch, "amq.direct", s.name("nowhere"), "m", mandatory=True)
    s.sync(ch)
    s.quiet(ch.connection)
    s.log("returned before commit", list(returned))
    early = bool(returned)
    s.attempt("commit", ch.tx_commit)
    s.pump(ch.connection, lambda: bool(returned))
    s.log("returned after commit", returned)
    s.check("basic.return is sent on commit", not early and bool(returned))


@scenario("tx.return.rolled_back_never_returned", "tx.return")
def return_rollback(s: Session) -> None:
    """A rolled back mandatory publish is never returned."""
    ch, _observer, _q = _tx(s)
    returned: list[Any] = []
    ch.add_on_return_callback(lambda *args: returned.append(1))
    s.publish(ch, "amq.direct", s.name("nowhere"), "m", mandatory=True)
    s.attempt("rollback", ch.tx_rollback)
    s.quiet(ch.connection)
    s.log("returned", len(returned))


@scenario("tx.misuse.mode_errors", "tx.misuse", "error.406")
def mode_errors(s: Session) -> None:
    """commit / rollback without select, and switching between tx and confirm: 406."""
    s.attempt("commit without select", s.channel().tx_commit)
    s.attempt("rollback without select", s.channel().tx_rollback)
    ch = s.channel()
    ch.tx_select()
    s.attempt("select twice", ch.tx_select)
    s.attempt("confirm on tx channel", ch.confirm_delivery)
    ch = s.channel(confirm=True)
    s.attempt("tx on confirm channel", ch.tx_select)


@scenario("tx.publish.into_full_reject_publish_queue", "tx.publish", "args.reject_publish")
def tx_reject_publish(s: Session) -> None:
    """Committed publishes meet x-overflow reject-publish at commit: the overflow is dropped."""
    ch, observer, _q = _tx(s)
    full = temp_queue(s, ch, "full", **{"x-max-length": 1, "x-overflow": "reject-publish"})
    for i in range(3):
        s.publish(ch, "", full, str(i))
    s.attempt("commit", ch.tx_commit)
    s.drain(observer, full)
