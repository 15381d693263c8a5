"""Routing by exchange type: direct, fanout, topic, headers, the default exchange."""

from __future__ import annotations

from compat_matrix.registry import scenario
from compat_matrix.scenarios.common import route_table, temp_queue
from compat_matrix.session import Session


@scenario("routing.direct.exact_key", "exchange.direct")
def direct_exact_key(s: Session) -> None:
    """A direct exchange routes on the exact key, case-sensitively, to every matching binding."""
    route_table(
        s,
        "direct",
        [("a", None), ("b", None), ("a", None), ("", None)],
        [(k, None) for k in ("a", "b", "c", "A", "", "a.b")],
    )


@scenario("routing.direct.two_keys_one_queue", "exchange.direct", "queue.bind")
def direct_two_keys(s: Session) -> None:
    """A queue bound with two keys gets one copy per matching publish; rebinding is idempotent."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, "direct")
    q = temp_queue(s, ch, "q")
    for key in ("x", "y", "x"):
        s.attempt(f"bind {key}", ch.queue_bind, q, ex, key)
    for key in ("x", "y", "z"):
        s.publish(ch, ex, key, key)
    s.drain(ch, q)


@scenario("routing.direct.amq_direct", "exchange.direct")
def direct_predeclared(s: Session) -> None:
    """amq.direct exists and routes like any direct exchange."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, "amq.direct", s.name("k"))
    s.publish(ch, "amq.direct", s.name("k"), "m")
    s.publish(ch, "amq.direct", "other", "n")
    s.drain(ch, q)


@scenario("routing.direct.unbind", "exchange.direct", "queue.bind")
def direct_unbind(s: Session) -> None:
    """After unbinding, the queue stops receiving; other bindings keep working."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, "direct")
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, ex, "a")
    ch.queue_bind(q, ex, "b")
    s.publish(ch, ex, "a", "1")
    s.attempt("unbind a", ch.queue_unbind, q, ex, "a")
    s.publish(ch, ex, "a", "2")
    s.publish(ch, ex, "b", "3")
    s.drain(ch, q)


@scenario("routing.fanout.ignores_key", "exchange.fanout")
def fanout_ignores_key(s: Session) -> None:
    """Every bound queue gets every message whatever the binding and routing keys."""
    route_table(s, "fanout", [("x", None), ("", None)], [("x", None), ("whatever", None)])


@scenario("routing.fanout.amq_fanout_and_routing_key", "exchange.fanout")
def fanout_predeclared(s: Session) -> None:
    """amq.fanout delivers with the publish's routing key and exchange name intact."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    ch.queue_bind(q, "amq.fanout")
    s.publish(ch, "amq.fanout", "key1", "m")
    got = s.get(ch, q)
    s.log("delivered via", [got.exchange, got.routing_key] if got else None)
    ch.queue_unbind(q, "amq.fanout")


TOPIC_KEYS = ["a.b.c", "a.c", "a", "c", "a..c", "", "a.b.b.c", "x.y", "a.b", ".", "a.b.c.d"]


def _topic(s: Session, patterns: list[str]) -> None:
    route_table(s, "topic", [(p, None) for p in patterns], [(k, None) for k in TOPIC_KEYS])


@scenario("routing.topic.literal_and_star", "exchange.topic")
def topic_star(s: Session) -> None:
    """Literal patterns and `*` (exactly one word, possibly empty)."""
    _topic(s, ["a.b.c", "a.*.c", "*", "*.*", "a..c"])


@scenario("routing.topic.hash", "exchange.topic")
def topic_hash(s: Session) -> None:
    """`#` matches zero or more words, at the start, middle and end."""
    _topic(s, ["a.#", "#", "#.c", "a.#.c"])


@scenario("routing.topic.mixed_wildcards", "exchange.topic")
def topic_mixed(s: Session) -> None:
    """Combinations of `*` and `#`, repeated `#`, and the empty pattern."""
    _topic(s, ["", "a.*.#", "#.#", "*.#.*", "a.b.#.#"])


@scenario("routing.topic.amq_topic_and_unbind", "exchange.topic", "queue.bind")
def topic_unbind(s: Session) -> None:
    """amq.topic routes; unbinding one pattern leaves the others."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    base = s.name("t")
    ch.queue_bind(q, "amq.topic", base + ".*")
    ch.queue_bind(q, "amq.topic", base + ".#")
    s.publish(ch, "amq.topic", base + ".x", "1")
    ch.queue_unbind(q, "amq.topic", base + ".#")
    s.publish(ch, "amq.topic", base + ".x", "2")
    s.publish(ch, "amq.topic", base + ".x.y", "3")
    s.drain(ch, q)


HEADER_MESSAGES = [
    ("", {"a": "1", "b": "2"}),
    ("", {"a": "1"}),
    ("", {"b": "2"}),
    ("", {"a": "2"}),
    ("", {}),
    ("", {"a": "1", "b": "2", "c": "3"}),
    ("", None),
]


@scenario("routing.headers.all", "exchange.headers")
def headers_all(s: Session) -> None:
    """x-match all: every binding header must be present and equal."""
    route_table(s, "headers", [("", {"x-match": "all", "a": "1", "b": "2"})], HEADER_MESSAGES)


@scenario("routing.headers.any", "exchange.headers")
def headers_any(s: Session) -> None:
    """x-match any: one matching header is enough."""
    route_table(s, "headers", [("", {"x-match": "any", "a": "1", "b": "2"})], HEADER_MESSAGES)


@scenario("routing.headers.default_is_all", "exchange.headers")
def headers_default(s: Session) -> None:
    """Without x-match the binding means all; an empty binding matches everything."""
    route_table(s, "headers", [("", {"a": "1", "b": "2"}), ("", None)], HEADER_MESSAGES)


@scenario("routing.headers.types_and_key", "exchange.headers")
def headers_types(s: Session) -> None:
    """Values compare with their types (1 vs "1"); the routing key plays no part."""
    route_table(
        s,
        "headers",
        [("ignored", {"n": 1}), ("", {"x-match": "any", "n": "1", "f": True})],
        [("k", {"n": 1}), ("", {"n": "1"}), ("", {"f": True}), ("", {"f": False})],
    )


@scenario("routing.headers.x_keys_ignored", "exchange.headers")
def headers_x_keys(s: Session) -> None:
    """Binding arguments starting with x- are not matched against message headers."""
    route_table(
        s,
        "headers",
        [("", {"x-match": "all", "x-custom": "v", "a": "1"})],
        [("", {"a": "1"}), ("", {"a": "1", "x-custom": "other"})],
    )


@scenario("routing.headers.with_x_variants", "exchange.headers")
def headers_with_x(s: Session) -> None:
    """x-match all-with-x / any-with-x also match the x- headers."""
    route_table(
        s,
        "headers",
        [("", {"x-match": "all-with-x", "x-k": "v"}), ("", {"x-match": "any-with-x", "x-k": "v"})],
        [("", {"x-k": "v"}), ("", {"x-k": "w"}), ("", {"y": "v"})],
    )


@scenario("routing.headers.invalid_x_match", "exchange.headers", "error.406")
def headers_invalid(s: Session) -> None:
    """A headers binding with an unknown x-match value is refused."""
    ch = s.channel()
    ex = s.name("ex")
    ch.exchange_declare(ex, "headers")
    q = temp_queue(s, ch, "q")
    s.attempt("bind x-match=some", ch.queue_bind, q, ex, "", arguments={"x-match": "some"})


@scenario("routing.headers.amq_match", "exchange.headers")
def headers_predeclared(s: Session) -> None:
    """amq.match and amq.headers are predeclared headers exchanges."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    for ex in ("amq.match", "amq.headers"):
        s.attempt(f"passive {ex}", ch.exchange_declare, ex, "headers", passive=True)
        ch.queue_bind(q, ex, "", arguments={"k": s.name("v")})
        s.publish(ch, ex, "", ex, headers={"k": s.name("v")})
    s.drain(ch, q)


@scenario("routing.default.by_queue_name", "exchange.default")
def default_routes(s: Session) -> None:
    """The default exchange routes to the queue named by the routing key, and nowhere else."""
    ch = s.channel()
    q = temp_queue(s, ch, "q")
    s.publish(ch, "", q, "1")
    s.publish(ch, "", q.upper(), "2")
    s.publish(ch, "", s.name("missing"), "3")
    s.drain(ch, q)


@scenario("routing.default.server_named_queue", "exchange.default", "queue.declare")
def default_server_named(s: Session) -> None:
    """A server-named queue is reachable through the default exchange by its generated name."""
    ch = s.channel()
    name = ch.queue_declare("", exclusive=True).method.queue
    s.log("generated name", name)
    s.publish(ch, "", name, "m")
    s.drain(ch, name)


@scenario("routing.default.refuses_wiring", "exchange.default", "error.403")
def default_refuses(s: Session) -> None:
    """Binding to, unbinding from, declaring and deleting the default exchange: 403."""
    q = s.name("q")
    steps = [
        ("bind", lambda ch: ch.queue_bind(q, "", "k")),
        ("unbind", lambda ch: ch.queue_unbind(q, "", "k")),
        ("declare", lambda ch: ch.exchange_declare("", "direct")),
        ("passive declare", lambda ch: ch.exchange_declare("", "direct", passive=True)),
        ("delete", lambda ch: ch.exchange_delete("")),
        ("exchange.bind dest", lambda ch: ch.exchange_bind("", "amq.direct", "k")),
        ("exchange.bind source", lambda ch: ch.exchange_bind("amq.direct", "", "k")),
    ]
    s.channel().queue_declare(q)
    for label, step in steps:
        s.attempt(label, step, s.channel())
