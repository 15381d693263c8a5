"""Queues: declare and equivalence, counts, bind errors, delete and purge, auto-delete."""

from __future__ import annotations

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import Session


@scenario("queue.declare_ok_counts", "queue.declare")
def declare_counts(s: Session) -> None:
    """declare-ok reports ready messages and consumers; unacked messages are not counted."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    s.attempt("declare", ch.queue_declare, q)
    for i in range(5):
        s.publish(ch, "", q, str(i))
    s.attempt("redeclare", ch.queue_declare, q)
    consumer = s.channel()
    consumer.basic_qos(prefetch_count=2)
    box: list = []
    s.consumer(consumer, q, box)
    s.receive(consumer, box, 2)
    s.attempt("passive with 2 unacked", ch.queue_declare, q, passive=True)
    s.attempt("purge", ch.queue_purge, q)
    s.attempt("after purge", ch.queue_declare, q, passive=True)


@scenario("queue.redeclare_equivalence", "queue.declare", "error.406", "error.405")
def redeclare(s: Session) -> None:
    """Redeclaring with other flags or arguments: 406 naming the field (405 for exclusive)."""
    cases = [
        ("durable", {}, {"durable": True}),
        ("not durable", {"durable": True}, {}),
        ("auto_delete", {}, {"auto_delete": True}),
        ("exclusive", {}, {"exclusive": True}),
        (
            "ttl changed",
            {"arguments": {"x-message-ttl": 1000}},
            {"arguments": {"x-message-ttl": 2000}},
        ),
        ("ttl removed", {"arguments": {"x-message-ttl": 1000}}, {}),
        ("ttl added", {}, {"arguments": {"x-message-ttl": 1000}}),
        (
            "max-length type",
            {"arguments": {"x-max-length": 10}},
            {"arguments": {"x-max-length": "10"}},
        ),
        ("unknown arg", {"arguments": {"x-foo": "a"}}, {"arguments": {"x-foo": "b"}}),
        ("same", {"durable": True}, {"durable": True}),
        ("passive differs", {"durable": True}, {"passive": True}),
    ]
    for label, first, second in cases:
        q = s.name("q-" + label.replace(" ", "-"))
        ch = s.channel()
        ch.queue_declare(q, **first)
        s.attempt(label, ch.queue_declare, q, **second)


@scenario("queue.passive_missing", "queue.declare", "error.404")
def passive_missing(s: Session) -> None:
    """Passive declare of a missing queue: 404 (also for an amq.* name)."""
    s.attempt("passive missing", s.channel().queue_declare, s.name("nope"), passive=True)
    s.attempt("passive amq.foo", s.channel().queue_declare, "amq.foo", passive=True)


@scenario("queue.reserved_prefix", "queue.declare", "error.403")
def reserved_prefix(s: Session) -> None:
    """Queue names starting with amq. are reserved."""
    s.attempt("declare amq.x", s.channel().queue_declare, "amq.x" + s.name(""))


@scenario("queue.server_named", "queue.declare")
def server_named(s: Session) -> None:
    """An empty name gets a generated amq.gen-* name; the channel remembers it for '' later."""
    ch = s.channel()
    ok = s.attempt("declare ''", ch.queue_declare, "", exclusive=True)
    name = ok.method.queue
    s.publish(ch, "", name, "m")
    s.attempt("bind ''", ch.queue_bind, "", "amq.fanout")
    s.attempt("get ''", ch.basic_get, "", auto_ack=True)
    s.attempt("purge ''", ch.queue_purge, "")
    s.attempt("unbind ''", ch.queue_unbind, "", "amq.fanout")
    s.attempt("delete ''", ch.queue_delete, "")
    s.attempt("passive name", s.channel().queue_declare, name, passive=True)


@scenario("queue.no_previous_queue", "queue.declare", "queue.bind", "error.404")
def no_previous(s: Session) -> None:
    """Using '' as queue name before any declare on the channel: 404 no previously declared."""
    s.attempt("bind ''", s.channel().queue_bind, "", "amq.fanout")
    s.attempt("get ''", s.channel().basic_get, "")
    s.attempt("purge ''", s.channel().queue_purge, "")
    s.attempt("delete ''", s.channel().queue_delete, "")


@scenario("queue.names_unusual", "queue.declare")
def unusual_names(s: Session) -> None:
    """Names with spaces, punctuation and non-ASCII are fine; 255 bytes is the limit."""
    ch = s.channel()
    for label, name in (
        ("spaces", s.name("bad name!*")),
        ("unicode", s.name("café ☃")),
        ("255 bytes", s.name("") + "x" * (255 - len(s.name("")))),
    ):
        s.attempt(label, ch.queue_declare, name)
        s.publish(ch, "", name, label)
        s.attempt(label + " get", ch.basic_get, name, auto_ack=True)


@scenario("queue.bind_errors", "queue.bind", "error.404")
def bind_errors(s: Session) -> None:
    """Binding a missing queue or to a missing exchange: 404; unbinding them succeeds."""
    q = s.name("q")
    s.channel().queue_declare(q)
    nope_q, nope_x = s.name("nope-q"), s.name("nope-x")
    s.attempt("bind to missing exchange", s.channel().queue_bind, q, nope_x, "k")
    s.attempt("bind missing queue", s.channel().queue_bind, nope_q, "amq.direct", "k")
    s.attempt("bind both missing", s.channel().queue_bind, nope_q, nope_x, "k")
    s.attempt("unbind not bound", s.channel().queue_unbind, q, "amq.direct", "k")
    s.attempt("unbind missing exchange", s.channel().queue_unbind, q, nope_x, "k")
    s.attempt("unbind missing queue", s.channel().queue_unbind, nope_q, "amq.direct", "k")


@scenario("queue.delete_conditions", "queue.delete", "error.406")
def delete_conditions(s: Session) -> None:
    """if-empty and if-unused refuse with 406; a plain delete reports the message count."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    s.publish(ch, "", q, "m")
    s.attempt("delete if-empty", s.channel().queue_delete, q, if_empty=True)
    holder = s.channel()
    holder.basic_consume(q, lambda *a: None, consumer_tag="c1")
    s.attempt("delete if-unused", s.channel().queue_delete, q, if_unused=True)
    s.attempt("delete", s.channel().queue_delete, q)
    s.attempt("delete again", s.channel().queue_delete, q)
    s.attempt("delete missing if-empty", s.channel().queue_delete, s.name("nope"), if_empty=True)


@scenario("queue.purge_and_missing", "queue.delete", "error.404")
def purge(s: Session) -> None:
    """Purge drops ready messages only and reports how many; purge of a missing queue is 404."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    for i in range(3):
        s.publish(ch, "", q, str(i))
    held = s.get(ch, q, "get unacked", ack=False)
    s.attempt("purge", ch.queue_purge, q)
    if held is not None:
        ch.basic_reject(held.tag, requeue=True)
    s.drain(ch, q, "after requeue")
    s.attempt("purge missing", s.channel().queue_purge, s.name("nope"))


@scenario("queue.operations_on_missing", "queue.declare", "error.404")
def missing_queue_ops(s: Session) -> None:
    """basic.get and basic.consume on a missing queue: 404 with the queue named."""
    nope = s.name("nope")
    s.attempt("get", s.channel().basic_get, nope)
    s.attempt("consume", s.channel().basic_consume, nope, lambda *a: None)


@scenario("queue.auto_delete_last_consumer", "queue.auto_delete", "basic.cancel")
def auto_delete(s: Session) -> None:
    """An auto-delete queue lives until its last consumer goes (not before the first one)."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, auto_delete=True)
    s.attempt("exists before any consumer", s.channel().queue_declare, q, passive=True)
    first = ch.basic_consume(q, lambda *a: None)
    second = ch.basic_consume(q, lambda *a: None)
    ch.basic_cancel(first)
    s.attempt("one consumer left", s.channel().queue_declare, q, passive=True)
    ch.basic_cancel(second)
    s.wait_gone(q, "exists after last cancel")


@scenario("queue.auto_delete_on_channel_close", "queue.auto_delete", "channel.lifecycle")
def auto_delete_close(s: Session) -> None:
    """Closing the consuming channel removes an auto-delete queue."""
    q = s.name("q")
    ch = s.channel()
    ch.queue_declare(q, auto_delete=True)
    ch.basic_consume(q, lambda *a: None)
    ch.close()
    s.wait_gone(q, "exists after channel close")


@scenario("queue.durable_flag_on_exclusive", "queue.declare", "queue.exclusive")
def exclusive_durable(s: Session) -> None:
    """A durable exclusive queue may be redeclared non-durable (exclusive means transient)."""
    ch = s.channel()
    q = s.name("q")
    s.attempt("durable exclusive", ch.queue_declare, q, durable=True, exclusive=True)
    s.attempt("redeclare transient", ch.queue_declare, q, exclusive=True)


@scenario("queue.delete_with_unacked", "queue.delete", "basic.ack")
def delete_with_unacked(s: Session) -> None:
    """Deleting a queue while messages are unacked: the consumer is cancelled and acking the
    orphaned deliveries is still fine."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    for i in range(2):
        s.publish(ch, "", q, str(i))
    consumer = s.channel()
    cancelled: list[str] = []
    consumer.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    box: list = []
    s.consumer(consumer, q, box, consumer_tag="c")
    s.receive(consumer, box, 2)
    s.attempt("delete", ch.queue_delete, q)
    s.pump(consumer.connection, lambda: bool(cancelled))
    s.log("cancelled", cancelled)
    consumer.basic_ack(2, multiple=True)
    s.sync(consumer, "ack after delete")
