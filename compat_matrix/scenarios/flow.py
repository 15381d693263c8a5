"""Flow of messages to and from the client: qos (per consumer and global), publisher
confirms, mandatory returns."""

from __future__ import annotations

from typing import Any

from pamqp import commands
from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.clients import frames, outcome
from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import props_of, temp_queue
from compat_matrix.session import Delivery, Session
from tests.support.raw_amqp import content_header_frame, method_frame, raw_frame


def _queues(s: Session, count: int, messages: int) -> tuple[BlockingChannel, list[str]]:
    pub = s.channel(confirm=True)
    names = []
    for i in range(count):
        q = temp_queue(s, pub, f"q{i}")
        for m in range(messages):
            s.publish(pub, "", q, f"{i}.{m}")
        names.append(q)
    return s.channel(), names


def _held(
    s: Session, ch: BlockingChannel, box: list[Delivery], label: str, ordered: bool = True
) -> None:
    """Let deliveries arrive up to the limit and log which are held (sorted when deliveries
    from several queues may come in any order)."""
    s.settle(ch.connection, box)
    bodies = [d.body for d in box]
    s.log(label, bodies if ordered else sorted(bodies))


@scenario("qos.per_consumer.limit_each", "qos.per_consumer")
def per_consumer(s: Session) -> None:
    """qos(1) applies to each consumer of the channel separately."""
    ch, (qa, qb) = _queues(s, 2, 3)
    s.attempt("qos", ch.basic_qos, prefetch_count=1)
    box: list[Delivery] = []
    s.consumer(ch, qa, box)
    s.consumer(ch, qb, box)
    _held(s, ch, box, "held", ordered=False)


@scenario("qos.per_consumer.ack_frees_credit", "qos.per_consumer", "basic.ack")
def ack_frees(s: Session) -> None:
    """With prefetch 2, each ack lets one more message through; multiple acks free several."""
    ch, (q,) = _queues(s, 1, 6)
    ch.basic_qos(prefetch_count=2)
    box: list[Delivery] = []
    s.consumer(ch, q, box)
    _held(s, ch, box, "first")
    ch.basic_ack(1)
    _held(s, ch, box, "after ack 1")
    ch.basic_ack(3, multiple=True)
    _held(s, ch, box, "after ack 3 multiple")
    ch.basic_nack(4, requeue=False)
    _held(s, ch, box, "after nack 4")


@scenario("qos.per_consumer.change_applies_to_new", "qos.per_consumer")
def change_later(s: Session) -> None:
    """A new per-consumer prefetch applies to consumers started after it."""
    ch, (qa, qb) = _queues(s, 2, 4)
    ch.basic_qos(prefetch_count=1)
    first: list[Delivery] = []
    s.consumer(ch, qa, first)
    ch.basic_qos(prefetch_count=3)
    second: list[Delivery] = []
    s.consumer(ch, qb, second)
    _held(s, ch, first, "first consumer")
    _held(s, ch, second, "second consumer")


def _by_queue(
    s: Session, ch: BlockingChannel, box: list[Delivery], acked: set[str]
) -> dict[str, Any]:
    """Let deliveries arrive up to the limit; log what each queue delivered (in its own order;
    bodies are "<queue>.<n>") and how many deliveries are unacked."""
    s.settle(ch.connection, box)
    queues: dict[str, list[str]] = {}
    for d in box:
        queues.setdefault("q" + d.body.split(".")[0], []).append(d.body)
    return {**dict(sorted(queues.items())), "unacked": len(box) - len(acked)}


def _ack(ch: BlockingChannel, box: list[Delivery], acked: set[str], *bodies: str) -> None:
    """Ack the deliveries of these bodies (those that came), each with its own tag."""
    for d in box:
        if d.body in bodies:
            ch.basic_ack(d.tag)
            acked.add(d.body)


@scenario("qos.global.shared_limit", "qos.global", "basic.ack")
def global_limit(s: Session) -> None:
    """qos(2, global) is one limit for the channel's consumers; acks free it for any of them.

    Whenever an ack frees credit, only one queue is waiting for it, so what comes next does not
    depend on the order in which a broker resumes waiting queues (RabbitMQ picks at random)."""
    pub = s.channel(confirm=True)
    q0, q1 = temp_queue(s, pub, "q0"), temp_queue(s, pub, "q1")
    for i in range(2):
        s.publish(pub, "", q0, f"0.{i}")
    for i in range(3):
        s.publish(pub, "", q1, f"1.{i}")
    ch = s.channel()
    s.attempt("qos global", ch.basic_qos, prefetch_count=2, global_qos=True)
    box: list[Delivery] = []
    acked: set[str] = set()
    s.consumer(ch, q0, box)
    s.consumer(ch, q1, box)
    # q0 takes the whole limit with its two messages; q1 waits.
    s.log("held", _by_queue(s, ch, box, acked))
    _ack(ch, box, acked, "0.0", "0.1")
    s.log("after acking q0's two", _by_queue(s, ch, box, acked))
    _ack(ch, box, acked, "1.0")
    s.log("after acking 1.0", _by_queue(s, ch, box, acked))
    # q1 is empty now; a new message for q0 waits for credit held by q1's deliveries.
    s.publish(pub, "", q0, "0.2")
    s.log("after publishing 0.2 to q0", _by_queue(s, ch, box, acked))
    _ack(ch, box, acked, "1.1")
    s.log("after acking 1.1", _by_queue(s, ch, box, acked))


@scenario("qos.global_and_per_consumer", "qos.global", "qos.per_consumer")
def both_limits(s: Session) -> None:
    """Both limits apply: global 3 per channel and 1 per consumer."""
    ch, (qa, qb, qc, qd) = _queues(s, 4, 2)
    ch.basic_qos(prefetch_count=3, global_qos=True)
    ch.basic_qos(prefetch_count=1)
    box: list[Delivery] = []
    for q in (qa, qb, qc, qd):
        s.consumer(ch, q, box)
    s.quiet(ch.connection)
    s.log("held", len(box))


@scenario("qos.get_not_limited", "qos.per_consumer", "basic.get")
def get_unlimited(s: Session) -> None:
    """basic.get ignores the prefetch limit."""
    ch, (q,) = _queues(s, 1, 3)
    ch.basic_qos(prefetch_count=1, global_qos=True)
    for i in range(3):
        s.get(ch, q, f"get {i}", ack=False)


@scenario("qos.prefetch_size", "qos.per_consumer", "error.540")
def prefetch_size(s: Session) -> None:
    """A non-zero prefetch size is not implemented: 540 closes the connection."""
    s.attempt("qos size 1", s.channel().basic_qos, prefetch_size=1)


@scenario("confirms.select_twice_and_acks", "confirms")
def confirm_twice(s: Session) -> None:
    """confirm.select twice is fine; routed and unroutable publishes are both acked."""
    ch = s.channel()
    s.attempt("select", ch.confirm_delivery)
    q = temp_queue(s, ch, "q")
    s.publish_confirmed(ch, "routed", "", q, "m")
    s.publish_confirmed(ch, "unroutable", "", s.name("nowhere"), "m")
    s.publish_confirmed(ch, "fanout nowhere", "amq.fanout", "", "m")


def _raw_confirm_channel(s: Session) -> Any:
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Confirm.Select())
    raw.expect("Confirm.SelectOk")
    return raw


def _publish_raw(raw: Any, exchange: str, key: str, body: bytes, mandatory: bool = False) -> None:
    raw.send(
        method_frame(
            1, commands.Basic.Publish(exchange=exchange, routing_key=key, mandatory=mandatory)
        )
        + content_header_frame(1, len(body))
        + raw_frame(3, 1, body)
    )


def _confirm_frames(raw: Any, last_tag: int) -> tuple[list[str], list[str]]:
    """Frames until tags 1..last_tag are all confirmed: (the frames, acks expanded to the tags
    they cover; the confirmed tags in order). Acks of different tags may come in either order
    on RabbitMQ (unroutable at once, routed after the queue took it), so callers record the
    sorted tags unless the order is guaranteed."""
    seen: list[str] = []
    confirmed: dict[int, str] = {}
    while len(confirmed) < last_tag:
        got = raw.read_frame(3.0)
        if got is None:
            return [*seen, "closed"], []
        _, value = got
        name = getattr(value, "name", type(value).__name__)
        if name not in ("Basic.Ack", "Basic.Nack"):
            seen.append(name)
            continue
        upto = value.delivery_tag
        tags = range(1, upto + 1) if value.multiple else [upto]
        for tag in tags:
            if tag not in confirmed:
                confirmed[tag] = name
                seen.append(f"{name} {tag}")
    return seen, [f"{confirmed[t]} {t}" for t in sorted(confirmed)]


@scenario("confirms.return_before_ack", "confirms", "returns")
def return_before_ack(s: Session) -> None:
    """In confirm mode a basic.return comes before the ack of the same publish."""
    raw = _raw_confirm_channel(s)
    _publish_raw(raw, "", s.name("nowhere"), b"a", mandatory=True)
    _publish_raw(raw, "", s.name("nowhere"), b"b")
    s.log("frames", _confirm_frames(raw, 2)[0])


@scenario("confirms.tags_count_every_publish", "confirms")
def tags_count(s: Session) -> None:
    """Delivery tags count every publish on the channel, routed or not."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _raw_confirm_channel(s)
    for key in (q, s.name("nowhere"), q, q):
        _publish_raw(raw, "", key, b"m")
    s.log("confirmed", _confirm_frames(raw, 4)[1])


@scenario("confirms.error_closes_channel", "confirms", "error.404")
def confirm_error(s: Session) -> None:
    """A publish to a missing exchange on a confirm channel closes the channel (404)."""
    ch = s.channel(confirm=True)
    s.publish_confirmed(ch, "publish", s.name("nope"), "k", "m")


@scenario("returns.mandatory_no_route", "returns", "content.properties")
def mandatory(s: Session) -> None:
    """basic.return carries 312 NO_ROUTE, the exchange, the key, the properties and body."""
    ch = s.channel()
    returned: list[Any] = []

    def on_return(_ch: Any, method: Any, props: Any, body: bytes) -> None:
        fields = [method.reply_code, method.reply_text, method.exchange, method.routing_key]
        returned.append([*fields, body, props_of(Delivery(0, "", False, "", "", props))])

    ch.add_on_return_callback(on_return)
    s.publish(ch, "amq.direct", s.name("nowhere"), "m1", mandatory=True, message_id="x")
    s.publish(ch, "", s.name("missing-queue"), "m2", mandatory=True, headers={"h": 1})
    s.publish(ch, "amq.direct", s.name("nowhere"), "m3")
    s.pump(ch.connection, lambda: len(returned) >= 2)
    s.quiet(ch.connection)
    s.log("returned", returned)


@scenario("returns.routed_not_returned", "returns")
def routed(s: Session) -> None:
    """A routed mandatory publish is not returned."""
    ch = s.channel(confirm=True)
    q = temp_queue(s, ch, "q")
    s.publish_confirmed(ch, "mandatory routed", "", q, "m", mandatory=True)
    s.drain(ch, q)


@scenario("returns.missing_exchange_no_return", "returns", "error.404")
def missing_exchange(s: Session) -> None:
    """A mandatory publish to a missing exchange is a 404 channel error, not a return."""
    ch = s.channel()
    returned: list[Any] = []
    ch.add_on_return_callback(lambda *args: returned.append(1))
    s.publish(ch, s.name("nope"), "k", "m", mandatory=True)
    s.sync(ch, "after publish")
    s.log("returns", len(returned))


@scenario("returns.immediate_not_implemented", "returns", "error.540")
def immediate(s: Session) -> None:
    """immediate=true is not implemented: 540 closes the connection."""
    raw = s.raw()
    raw.open_channel(1)
    raw.send(
        method_frame(1, commands.Basic.Publish(exchange="", routing_key="q", immediate=True))
        + content_header_frame(1, 1)
        + raw_frame(3, 1, b"m")
    )
    s.log("closed", outcome(raw))


@scenario("returns.raw_frames", "returns")
def raw_return(s: Session) -> None:
    """The wire shape of a return: basic.return, content header, body."""
    raw = s.raw()
    raw.open_channel(1)
    _publish_raw(raw, "amq.direct", s.name("nowhere"), b"body", mandatory=True)
    s.log("frames", frames(raw, "ContentBody"))
