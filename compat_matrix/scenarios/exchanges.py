"""Exchange declare rules, exchange-to-exchange bindings, alternate exchanges, auto-delete."""

from __future__ import annotations

from pika.adapters.blocking_connection import BlockingChannel

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import temp_queue
from compat_matrix.session import Session


@scenario("exchange.redeclare_equivalence", "exchange.declare", "error.406")
def redeclare(s: Session) -> None:
    """Redeclaring with another type, durable, auto-delete, internal or AE: 406 with the field."""
    cases = [
        ("type", {"exchange_type": "direct"}, {"exchange_type": "fanout"}),
        ("durable", {"durable": False}, {"durable": True}),
        ("auto_delete", {"auto_delete": False}, {"auto_delete": True}),
        ("internal", {"internal": False}, {"internal": True}),
        ("ae added", {}, {"arguments": {"alternate-exchange": "ae"}}),
        ("ae removed", {"arguments": {"alternate-exchange": "ae"}}, {}),
        ("unknown arg", {"arguments": {"x-foo": "a"}}, {"arguments": {"x-foo": "b"}}),
        ("same", {"durable": True}, {"durable": True}),
    ]
    for label, first, second in cases:
        ex = s.name("ex-" + label.replace(" ", "-"))
        ch = s.channel()
        ch.exchange_declare(ex, **{"exchange_type": "direct", **first})
        s.attempt(label, ch.exchange_declare, ex, **{"exchange_type": "direct", **second})


@scenario("exchange.passive", "exchange.declare", "error.404")
def passive(s: Session) -> None:
    """Passive declare: 404 for a missing exchange; type and flags ignored for an existing one."""
    ex = s.name("ex")
    s.channel().exchange_declare(ex, "direct")
    s.attempt("passive other type", s.channel().exchange_declare, ex, "fanout", passive=True)
    s.attempt(
        "passive durable", s.channel().exchange_declare, ex, "topic", durable=True, passive=True
    )
    s.attempt("passive missing", s.channel().exchange_declare, s.name("nope"), passive=True)


@scenario("exchange.reserved_names", "exchange.declare", "error.403")
def reserved(s: Session) -> None:
    """amq.* names are reserved; matching redeclares of the predeclared ones are fine."""
    s.attempt("declare amq.foo", s.channel().exchange_declare, "amq.foo" + s.name(""), "direct")
    s.attempt("amq.direct same", s.channel().exchange_declare, "amq.direct", "direct", durable=True)
    s.attempt("amq.direct not durable", s.channel().exchange_declare, "amq.direct", "direct")
    s.attempt("passive amq.foo", s.channel().exchange_declare, "amq.foo", passive=True)
    s.attempt("delete amq.direct", s.channel().exchange_delete, "amq.direct")


@scenario("exchange.unknown_type", "exchange.declare", "error.503")
def unknown_type(s: Session) -> None:
    """An unknown exchange type is a connection error, 503 COMMAND_INVALID."""
    s.attempt("declare nosuchtype", s.channel().exchange_declare, s.name("ex"), "nosuchtype")


@scenario("exchange.empty_type", "exchange.declare", "error.503")
def empty_type(s: Session) -> None:
    """An empty exchange type is a connection error too, with its own text."""
    s.attempt("declare type ''", s.channel().exchange_declare, s.name("ex"), "")


@scenario("exchange.delete_rules", "exchange.declare", "error.406")
def delete_rules(s: Session) -> None:
    """Delete of a missing exchange succeeds; if-unused counts only outgoing bindings."""
    ch = s.channel()
    src, dst = s.name("src"), s.name("dst")
    ch.exchange_declare(src, "fanout")
    ch.exchange_declare(dst, "fanout")
    ch.exchange_bind(dst, src)
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, src)
    s.attempt("delete missing", s.channel().exchange_delete, s.name("nope"))
    s.attempt("delete missing if-unused", s.channel().exchange_delete, s.name("nope"), True)
    s.attempt("delete dst if-unused", s.channel().exchange_delete, dst, if_unused=True)
    s.attempt("delete src if-unused", s.channel().exchange_delete, src, if_unused=True)
    s.attempt("delete src", s.channel().exchange_delete, src)
    s.attempt("passive src", s.channel().exchange_declare, src, passive=True)


@scenario("exchange.internal", "exchange.declare", "exchange.e2e", "error.403")
def internal(s: Session) -> None:
    """An internal exchange refuses publishes (403) but routes traffic from a bound exchange."""
    ch = s.channel()
    inner, outer = s.name("inner"), s.name("outer")
    ch.exchange_declare(inner, "fanout", internal=True)
    ch.exchange_declare(outer, "fanout")
    ch.exchange_bind(inner, outer)
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, inner)
    s.publish(ch, outer, "", "via outer")
    s.drain(ch, q)
    pub = s.channel()
    s.publish(pub, inner, "", "direct")
    s.sync(pub, "publish to internal")


@scenario("exchange.auto_delete_last_binding", "exchange.declare", "queue.bind")
def auto_delete(s: Session) -> None:
    """An auto-delete exchange survives until its last binding goes, then disappears."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, "direct", auto_delete=True)
    s.attempt("unused auto-delete exists", s.channel().exchange_declare, ex, passive=True)
    q1, q2 = temp_queue(s, ch, "q1"), temp_queue(s, ch, "q2")
    ch.queue_bind(q1, ex, "a")
    ch.queue_bind(q2, ex, "b")
    ch.queue_unbind(q1, ex, "a")
    s.attempt("after first unbind", s.channel().exchange_declare, ex, passive=True)
    ch.queue_delete(q2)
    s.attempt("after queue deleted", s.channel().exchange_declare, ex, passive=True)


@scenario("exchange.e2e.chain", "exchange.e2e")
def e2e_chain(s: Session) -> None:
    """Messages flow along an exchange-to-exchange chain, with keys matched at each hop."""
    ch = s.channel()
    a, b, c = s.name("a"), s.name("b"), s.name("c")
    ch.exchange_declare(a, "topic")
    ch.exchange_declare(b, "direct")
    ch.exchange_declare(c, "fanout")
    ch.exchange_bind(b, a, "k.*")
    ch.exchange_bind(c, b, "k.x")
    qb, qc = temp_queue(s, ch, "qb"), temp_queue(s, ch, "qc")
    ch.queue_bind(qb, b, "k.y")
    ch.queue_bind(qc, c)
    for key in ("k.x", "k.y", "k.z", "other"):
        s.publish(ch, a, key, key)
    s.drain(ch, qb, "via b")
    s.drain(ch, qc, "via c")


@scenario("exchange.e2e.unbind", "exchange.e2e")
def e2e_unbind(s: Session) -> None:
    """exchange.unbind cuts the path; unbinding what does not exist succeeds."""
    ch = s.channel()
    a, b = s.name("a"), s.name("b")
    ch.exchange_declare(a, "fanout")
    ch.exchange_declare(b, "fanout")
    ch.exchange_bind(b, a)
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, b)
    s.publish(ch, a, "", "1")
    s.attempt("unbind", ch.exchange_unbind, b, a)
    s.publish(ch, a, "", "2")
    s.attempt("unbind again", ch.exchange_unbind, b, a)
    s.attempt("unbind missing source", ch.exchange_unbind, b, s.name("nope"))
    s.drain(ch, q)


@scenario("exchange.e2e.cycle_delivers_once", "exchange.e2e")
def e2e_cycle(s: Session) -> None:
    """A cycle of exchanges delivers each message once to each queue."""
    ch = s.channel()
    a, b = s.name("a"), s.name("b")
    ch.exchange_declare(a, "fanout")
    ch.exchange_declare(b, "fanout")
    ch.exchange_bind(b, a)
    ch.exchange_bind(a, b)
    qa, qb = temp_queue(s, ch, "qa"), temp_queue(s, ch, "qb")
    ch.queue_bind(qa, a)
    ch.queue_bind(qb, b)
    ch.queue_bind(qb, a)
    s.publish(ch, a, "", "m")
    s.drain(ch, qa, "qa")
    s.drain(ch, qb, "qb")


@scenario("exchange.e2e.missing_ends", "exchange.e2e", "error.404")
def e2e_missing(s: Session) -> None:
    """exchange.bind names the missing source first, then a missing destination."""
    real = s.name("real")
    s.channel().exchange_declare(real, "fanout")
    nope_src, nope_dst = s.name("nope-src"), s.name("nope-dst")
    s.attempt("missing source", s.channel().exchange_bind, real, nope_src)
    s.attempt("missing destination", s.channel().exchange_bind, nope_dst, real)
    s.attempt("both missing", s.channel().exchange_bind, nope_dst, nope_src)


@scenario("exchange.e2e.auto_delete_cascade", "exchange.e2e", "exchange.declare")
def e2e_cascade(s: Session) -> None:
    """Deleting a queue removes an auto-delete exchange, then one bound only to it."""
    ch = s.channel()
    top, mid = s.name("top"), s.name("mid")
    ch.exchange_declare(top, "fanout", auto_delete=True)
    ch.exchange_declare(mid, "fanout", auto_delete=True)
    ch.exchange_bind(mid, top)
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, mid)
    ch.queue_delete(q)
    s.attempt("mid after queue delete", s.channel().exchange_declare, mid, passive=True)
    s.attempt("top after queue delete", s.channel().exchange_declare, top, passive=True)


def _ae_setup(s: Session, main_type: str = "direct") -> tuple[BlockingChannel, str, str, str]:
    ch = s.channel()
    main, ae = s.name("main"), s.name("ae")
    ch.exchange_declare(ae, "fanout")
    ch.exchange_declare(main, main_type, arguments={"alternate-exchange": ae})
    routed, stray = temp_queue(s, ch, "routed"), temp_queue(s, ch, "stray")
    ch.queue_bind(routed, main, "known")
    ch.queue_bind(stray, ae)
    return ch, main, routed, stray


@scenario("exchange.alternate.takes_unroutable", "exchange.alternate")
def ae_unroutable(s: Session) -> None:
    """Unroutable messages go to the alternate exchange; routed ones do not."""
    ch, main, routed, stray = _ae_setup(s)
    for key in ("known", "unknown", "other"):
        s.publish(ch, main, key, key)
    s.drain(ch, routed, "routed")
    s.drain(ch, stray, "alternate")


@scenario("exchange.alternate.mandatory_not_returned", "exchange.alternate", "returns")
def ae_mandatory(s: Session) -> None:
    """A mandatory publish taken by the alternate exchange is not returned."""
    ch, main, _routed, stray = _ae_setup(s)
    ch.confirm_delivery()
    s.publish_confirmed(ch, "publish unknown", main, "unknown", "m", mandatory=True)
    s.drain(ch, stray, "alternate")


@scenario("exchange.alternate.unroutable_there_too", "exchange.alternate", "returns")
def ae_also_unroutable(s: Session) -> None:
    """When the alternate exchange cannot route it either, a mandatory publish is returned."""
    ch = s.channel()
    main, ae = s.name("main"), s.name("ae")
    ch.exchange_declare(ae, "direct")
    ch.exchange_declare(main, "direct", arguments={"alternate-exchange": ae})
    ch.confirm_delivery()
    s.publish_confirmed(ch, "publish", main, "x", "m", mandatory=True)


@scenario("exchange.alternate.missing_ae", "exchange.alternate", "returns")
def ae_missing(s: Session) -> None:
    """An alternate exchange that does not exist just means unroutable."""
    ch = s.channel()
    main = s.name("main")
    ch.exchange_declare(main, "direct", arguments={"alternate-exchange": s.name("nope")})
    ch.confirm_delivery()
    s.publish_confirmed(ch, "mandatory", main, "x", "m", mandatory=True)
    s.publish_confirmed(ch, "plain", main, "x", "m")


@scenario("exchange.alternate.chain_and_e2e", "exchange.alternate", "exchange.e2e")
def ae_chain(s: Session) -> None:
    """An AE's own AE is followed; a match through an e2e binding means routed (no AE)."""
    ch = s.channel()
    main, ae1, ae2, bound = s.name("main"), s.name("ae1"), s.name("ae2"), s.name("bound")
    ch.exchange_declare(ae2, "fanout")
    ch.exchange_declare(ae1, "direct", arguments={"alternate-exchange": ae2})
    ch.exchange_declare(main, "direct", arguments={"alternate-exchange": ae1})
    ch.exchange_declare(bound, "fanout")
    ch.exchange_bind(bound, main, "via-e2e")
    q_end, q_bound = temp_queue(s, ch, "end"), temp_queue(s, ch, "bound")
    ch.queue_bind(q_end, ae2)
    ch.queue_bind(q_bound, bound)
    s.publish(ch, main, "lost", "1")
    s.publish(ch, main, "via-e2e", "2")
    s.drain(ch, q_end, "end of AE chain")
    s.drain(ch, q_bound, "through e2e")


@scenario("exchange.alternate.wrong_type_arg", "exchange.alternate", "exchange.declare")
def ae_wrong_type(s: Session) -> None:
    """An alternate-exchange argument that is not a string."""
    s.attempt(
        "declare ae=5",
        s.channel().exchange_declare,
        s.name("main"),
        "direct",
        arguments={"alternate-exchange": 5},
    )
