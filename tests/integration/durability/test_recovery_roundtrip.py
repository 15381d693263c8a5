"""Whatever durable wiring the engine accepts, a restart brings back exactly: generated
declarations of exchanges, queues (server-named ones too) and bindings, with argument tables of
every field type, go through the engine's own declare checks; those it accepts must come back
from the store equal, with the same Python types and wire type names, must be declarable again
with the same parameters afterwards, and a binding removed after the restart must stay removed.
Recovery that refused or changed anything accepted would fail here."""

from __future__ import annotations

import asyncio
import datetime
import decimal
import struct
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import decode

from rabbitish.app import Broker
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.node import Node
from rabbitish.protocol.field_tables import decode_table, encode_table

# ---------------------------------------------------------------------- values the decoder makes
scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.builds(
        lambda unscaled, scale: decimal.Decimal(unscaled).scaleb(-scale),
        st.integers(0, 2**32 - 1),  # the decoder reads the mantissa unsigned, as RabbitMQ does
        st.integers(0, 9),
    ),
    st.text(max_size=20),
    st.binary(max_size=20).map(bytearray),
    # Timestamps as the decoder makes them: above 2**32 - 1 it reads milliseconds.
    st.integers(0, 253_402_300_799_000).map(lambda v: decode.timestamp(struct.pack(">Q", v))[1]),
    st.none(),
)
keys = st.text(st.characters(codec="utf-8"), min_size=1, max_size=10).filter(
    lambda k: len(k.encode()) < 256
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
tables = st.dictionaries(keys, values, max_size=5)

TYPE_NAMES = {
    bool: "bool",
    int: "long",
    float: "double",
    decimal.Decimal: "decimal",
    str: "longstr",
    bytearray: "binary",
    datetime.datetime: "timestamp",
    type(None): "void",
    dict: "table",
    list: "array",
}


def typed(value: Any) -> Any:
    """The value with the type of every part spelled out, so 1 == 1.0 == True do not pass."""
    if isinstance(value, dict):
        return ("table", sorted((k, typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", [typed(v) for v in value])
    return (type(value).__name__, repr(value))


@settings(max_examples=300, deadline=None)
@given(tables)
def test_every_table_the_decoder_makes_is_stored_without_loss(table):
    assert typed(decode_table(encode_table(table), 4)) == typed(table)


# ---------------------------------------------------------------------- declarations
def _typed_args(pairs: dict[str, tuple[str, Any]]) -> tuple[dict[str, Any], dict[str, str]]:
    return {k: v for k, (_, v) in pairs.items()}, {k: t for k, (t, _) in pairs.items()}


def _custom(table: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    return {k: (TYPE_NAMES[type(v)], v) for k, v in table.items()}


ints = st.sampled_from(["long", "signedint", "short", "unsignedint"])
queue_x_args = st.fixed_dictionaries(
    {},
    optional={
        "x-message-ttl": st.tuples(ints, st.integers(0, 10**6)),
        "x-expires": st.tuples(ints, st.integers(10**6, 2 * 10**9)),  # none expire here
        "x-max-length": st.tuples(ints, st.integers(0, 100)),
        "x-max-length-bytes": st.tuples(ints, st.integers(0, 10**5)),
        "x-overflow": st.tuples(
            st.just("longstr"),
            st.sampled_from(["drop-head", "reject-publish", "reject-publish-dlx"]),
        ),
        "x-dead-letter-exchange": st.tuples(st.just("longstr"), st.sampled_from(["", "dlx"])),
        "x-dead-letter-routing-key": st.tuples(st.just("longstr"), st.just("dead")),
        "x-max-priority": st.tuples(ints, st.integers(0, 255)),
        "x-queue-mode": st.tuples(st.just("longstr"), st.sampled_from(["default", "lazy"])),
        "x-single-active-consumer": st.tuples(st.just("bool"), st.booleans()),
        "x-queue-type": st.tuples(st.just("longstr"), st.sampled_from(["classic", "quorum"])),
    },
)
names = st.sampled_from(["a", "b", "c", "amq.gen-like", ""])
exchange_names = st.sampled_from(["ex1", "ex2", "ex3"])
exchange_types = st.sampled_from(["direct", "fanout", "topic", "headers"])

declare_exchange = st.tuples(
    st.just("exchange"),
    exchange_names,
    exchange_types,
    st.booleans(),  # durable
    st.booleans(),  # auto_delete
    st.booleans(),  # internal
    st.one_of(st.none(), st.sampled_from(["ex1", "nowhere"])),  # alternate-exchange
    tables,
)
declare_queue = st.tuples(
    st.just("queue"), names, st.booleans(), st.booleans(), queue_x_args, tables
)
bind = st.tuples(
    st.just("bind"),
    st.sampled_from(["queue", "exchange"]),
    st.integers(0, 5),  # which declared queue / exchange name
    st.sampled_from(["ex1", "ex2", "ex3", "amq.direct", "amq.headers"]),
    st.sampled_from(["", "k", "a.#"]),
    st.one_of(st.none(), st.sampled_from(["all", "any"])),  # x-match
    tables,
)
programs = st.lists(st.one_of(declare_exchange, declare_queue, bind), min_size=1, max_size=12)


def run(node: Node, program: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Apply every declaration the engine accepts; the accepted ones, as replayable calls."""
    vhost = node.vhosts["/"]
    accepted: list[tuple[Any, ...]] = []
    queues: list[str] = []
    for step in program:
        try:
            if step[0] == "exchange":
                _, name, type_, durable, auto_delete, internal, ae, table = step
                pairs = _custom(table)
                if ae is not None:
                    pairs["alternate-exchange"] = ("longstr", ae)
                args, types = _typed_args(pairs)
                vhost.declare_exchange(
                    name, type_, durable=durable, auto_delete=auto_delete,
                    internal=internal, arguments=args, arg_types=types,
                )  # fmt: skip
                accepted.append(
                    ("exchange", name, type_, durable, auto_delete, internal, args, types)
                )
            elif step[0] == "queue":
                _, name, durable, auto_delete, x_args, table = step
                args, types = _typed_args({**_custom(table), **x_args})
                queue = vhost.declare_queue(
                    name, owner=None, durable=durable, auto_delete=auto_delete,
                    arguments=args, arg_types=types,
                )  # fmt: skip
                queues.append(queue.name)
                accepted.append(("queue", queue.name, durable, auto_delete, args, types, name))
            else:
                _, kind, index, source, key, match, table = step
                pairs = _custom(table)
                if match is not None:
                    pairs["x-match"] = ("longstr", match)
                args, types = _typed_args(pairs)
                pool = queues if kind == "queue" else ["ex1", "ex2", "ex3"]
                if not pool:
                    continue
                destination = pool[index % len(pool)]
                vhost.add_binding(kind, destination, source, key, args, types, None)
                accepted.append(("bind", kind, destination, source, key, args))
        except AMQPError:
            continue
    return accepted


def snapshot(node: Node) -> dict[str, Any]:
    """The durable wiring of vhost '/', every value typed."""
    vhost = node.vhosts["/"]
    exchanges = {
        name: (x.type_name, x.auto_delete, x.internal, typed(x.arguments),
               vhost.exchange_arg_types.get(name))
        for name, x in vhost.exchanges.items() if x.durable and name
    }  # fmt: skip
    queues = {
        name: (q.auto_delete, typed(q.arguments), vhost.queue_arg_types.get(name))
        for name, q in vhost.queues.items()
        if q.durable
    }
    bindings = sorted(
        (x.name, type(b.destination).__name__, b.destination.name, b.routing_key,
         repr(typed(b.arguments)))
        for x in vhost.exchanges.values() if x.name and x.durable
        for b in x.bindings.values() if b.destination.durable
    )  # fmt: skip
    return {"exchanges": exchanges, "queues": queues, "bindings": bindings}


def replay(node: Node, accepted: list[tuple[Any, ...]]) -> None:
    """Redeclare what was accepted, where it still exists: the same parameters must pass the
    equivalence checks against what recovery rebuilt."""
    vhost = node.vhosts["/"]
    for step in accepted:
        if step[0] == "exchange":
            _, name, type_, durable, auto_delete, internal, args, types = step
            if durable and name in vhost.exchanges:
                vhost.declare_exchange(
                    name, type_, durable=True, auto_delete=auto_delete, internal=internal,
                    arguments=args, arg_types=types,
                )  # fmt: skip
        elif step[0] == "queue":
            _, name, durable, auto_delete, args, types, asked = step
            # A server-named queue cannot be declared by name (403 amq.* prefix, as RabbitMQ).
            if durable and asked and name in vhost.queues:
                vhost.declare_queue(
                    name, owner=None, durable=True, auto_delete=auto_delete,
                    arguments=args, arg_types=types,
                )  # fmt: skip


def unbind_all(node: Node, accepted: list[tuple[Any, ...]]) -> None:
    vhost = node.vhosts["/"]
    for step in accepted:
        if step[0] == "bind":
            _, kind, destination, source, key, args = step
            vhost.remove_binding(kind, destination, source, key, args, None)


async def lifecycle(data: Path, program: list[tuple[Any, ...]]) -> None:
    async with Broker(data_dir=str(data), port=0) as broker:
        assert broker.node is not None
        accepted = run(broker.node, program)
        before = snapshot(broker.node)
    async with Broker(data_dir=str(data), port=0) as broker:
        assert broker.node is not None
        assert snapshot(broker.node) == before
        replay(broker.node, accepted)
        assert snapshot(broker.node) == before
        unbind_all(broker.node, accepted)
        unbound = snapshot(broker.node)
    async with Broker(data_dir=str(data), port=0) as broker:
        assert broker.node is not None
        assert snapshot(broker.node) == unbound


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(programs)
def test_accepted_wiring_comes_back_exactly(tmp_path_factory, program):
    data = tmp_path_factory.mktemp("roundtrip") / "data"
    asyncio.run(lifecycle(data, program))
