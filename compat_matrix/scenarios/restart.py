"""Restart scenarios: each sets up before its `yield`, the broker restarts in place (same port
and data), and the part after the `yield` observes what survived."""

from __future__ import annotations

from collections.abc import Iterator

from pamqp import commands

from compat_matrix.clients import outcome
from compat_matrix.registry import scenario
from compat_matrix.session import Delivery, Session
from tests.support.raw_amqp import content_header_frame, method_frame, raw_frame

PERSISTENT = 2


@scenario("restart.durable_wiring", "restart.durable_wiring", restart=True)
def durable_wiring(s: Session) -> Iterator[None]:
    """Durable exchanges, queues (with arguments), queue and e2e bindings all come back."""
    ch = s.channel()
    top, ex, q = s.name("top"), s.name("ex"), s.name("q")
    ch.exchange_declare(top, "fanout", durable=True)
    ch.exchange_declare(ex, "topic", durable=True, arguments={"alternate-exchange": "amq.fanout"})
    ch.exchange_bind(ex, top, "x.y")
    ch.queue_declare(q, durable=True, arguments={"x-max-length": 5, "x-message-ttl": 60000})
    ch.queue_bind(q, ex, "x.*")
    yield
    ch = s.channel(s.connect())
    s.attempt(
        "exchange",
        ch.exchange_declare,
        ex,
        "topic",
        durable=True,
        arguments={"alternate-exchange": "amq.fanout"},
    )
    s.attempt(
        "queue same args",
        ch.queue_declare,
        q,
        durable=True,
        arguments={"x-max-length": 5, "x-message-ttl": 60000},
    )
    s.attempt("queue other args", s.channel().queue_declare, q, durable=True)
    pub = s.channel(confirm=True)
    s.publish(pub, top, "x.y", "via e2e")
    s.publish(pub, ex, "x.z", "direct")
    s.drain(pub, q)


@scenario(
    "restart.persistent_messages", "restart.persistent", "restart.transient_gone", restart=True
)
def persistent_messages(s: Session) -> Iterator[None]:
    """Persistent messages in a durable queue survive, in order; transient ones do not."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    ch.queue_declare(q, durable=True)
    for i in range(4):
        mode = PERSISTENT if i != 2 else 1
        s.publish(ch, "", q, f"{i}:mode{mode}", delivery_mode=mode)
    yield
    s.drain(s.channel(s.connect()), q)


@scenario("restart.unacked_persistent", "restart.persistent", "ordering", restart=True)
def unacked_persistent(s: Session) -> Iterator[None]:
    """A persistent message delivered but unacked at shutdown comes back in its place."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    ch.queue_declare(q, durable=True)
    for i in range(3):
        s.publish(ch, "", q, str(i), delivery_mode=PERSISTENT)
    s.get(ch, q, "taken, unacked", ack=False)
    yield
    s.drain(s.channel(s.connect()), q)


@scenario("restart.acked_stay_gone", "restart.persistent", "basic.ack", restart=True)
def acked_gone(s: Session) -> Iterator[None]:
    """Acked persistent messages do not come back; purged ones neither."""
    ch = s.channel(confirm=True)
    q, purged = s.name("q"), s.name("purged")
    ch.queue_declare(q, durable=True)
    ch.queue_declare(purged, durable=True)
    for i in range(3):
        s.publish(ch, "", q, str(i), delivery_mode=PERSISTENT)
        s.publish(ch, "", purged, str(i), delivery_mode=PERSISTENT)
    s.get(ch, q, "acked")
    ch.queue_purge(purged)
    yield
    ch = s.channel(s.connect())
    s.drain(ch, q, "left")
    s.drain(ch, purged, "purged queue")


@scenario("restart.transient_wiring_gone", "restart.transient_gone", restart=True)
def transient_gone(s: Session) -> Iterator[None]:
    """Non-durable queues and exchanges, exclusive queues and their messages are gone."""
    ch = s.channel(confirm=True)
    q, ex, excl = s.name("q"), s.name("ex"), s.name("excl")
    ch.queue_declare(q)
    ch.exchange_declare(ex, "direct")
    ch.queue_declare(excl, durable=True, exclusive=True)
    s.publish(ch, "", q, "m", delivery_mode=PERSISTENT)
    yield
    s.attempt("queue", s.channel(s.connect()).queue_declare, q, passive=True)
    s.attempt("exchange", s.channel().exchange_declare, ex, passive=True)
    s.attempt("exclusive durable queue", s.channel().queue_declare, excl, passive=True)


@scenario(
    "restart.durable_binding_to_transient",
    "restart.transient_gone",
    "restart.durable_wiring",
    restart=True,
)
def mixed_binding(s: Session) -> Iterator[None]:
    """A binding between a durable exchange and a transient queue goes with the queue."""
    ch = s.channel()
    ex, transient, durable = s.name("ex"), s.name("transient"), s.name("durable")
    ch.exchange_declare(ex, "fanout", durable=True)
    ch.queue_declare(transient)
    ch.queue_declare(durable, durable=True)
    ch.queue_bind(transient, ex)
    ch.queue_bind(durable, ex)
    yield
    pub = s.channel(s.connect(), confirm=True)
    s.publish(pub, ex, "", "after restart")
    s.drain(pub, durable)
    s.log("transient queue exists", s.exists(transient))


@scenario("restart.dead_letter_args_kept", "restart.durable_wiring", "args.dlx", restart=True)
def dlx_kept(s: Session) -> Iterator[None]:
    """Queue arguments survive: a recovered queue still dead-letters."""
    ch = s.channel()
    src, dlq = s.name("src"), s.name("dlq")
    ch.queue_declare(dlq, durable=True)
    ch.queue_declare(
        src,
        durable=True,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    yield
    ch = s.channel(s.connect(), confirm=True)
    s.publish(ch, "", src, "m", delivery_mode=PERSISTENT)
    got = s.get(ch, src, ack=False)
    if got is not None:
        ch.basic_reject(got.tag, requeue=False)
    s.wait_count(ch, dlq, 1, "dead-lettered")


@scenario("restart.open_tx_aborted", "restart.open_tx", "tx.publish", "tx.ack", restart=True)
def open_tx(s: Session) -> Iterator[None]:
    """An open transaction at shutdown is aborted: staged publishes lost, staged acks undone."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    ch.queue_declare(q, durable=True)
    for i in range(2):
        s.publish(ch, "", q, f"kept {i}", delivery_mode=PERSISTENT)
    tx = s.channel()
    tx.tx_select()
    got = s.get(tx, q, "taken in tx", ack=False)
    if got is not None:
        tx.basic_ack(got.tag)
    s.publish(tx, "", q, "staged", delivery_mode=PERSISTENT)
    s.sync(tx, "staged")
    yield
    s.drain(s.channel(s.connect()), q)


@scenario(
    "restart.open_connection_forced_close", "restart.open_tx", "connection.close", restart=True
)
def forced_close(s: Session) -> Iterator[None]:
    """Connections open at shutdown are closed with 320 CONNECTION_FORCED; a raw transaction
    in progress among them."""
    q = s.name("q")
    s.channel().queue_declare(q, durable=True)
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Tx.Select())
    raw.expect("Tx.SelectOk")
    publish = commands.Basic.Publish(exchange="", routing_key=q)
    raw.send(
        method_frame(1, publish)
        + content_header_frame(1, 1, delivery_mode=2)
        + raw_frame(3, 1, b"x")
    )
    yield
    s.log("how it ended", outcome(raw))
    s.attempt("queue", s.channel(s.connect()).queue_declare, q, passive=True)


@scenario("restart.consumer_state_reset", "restart.persistent", "basic.consume", restart=True)
def consumer_reset(s: Session) -> Iterator[None]:
    """After a restart, a new consumer gets the recovered messages from tag 1, in order."""
    ch = s.channel(confirm=True)
    q = s.name("q")
    ch.queue_declare(q, durable=True)
    for i in range(3):
        s.publish(ch, "", q, str(i), delivery_mode=PERSISTENT)
    box_before: list[Delivery] = []
    s.consumer(ch, q, box_before)
    s.pump(ch.connection, lambda: len(box_before) >= 3)
    ch.basic_ack(1)
    yield
    after = s.channel(s.connect())
    box: list[Delivery] = []
    s.consumer(after, q, box)
    s.pump(after.connection, lambda: len(box) >= 2)
    s.quiet(after.connection)
    s.log("deliveries", [[d.tag, d.body, d.redelivered] for d in box])
