"""The AMQP 1.0 connection driven by bytes alone (no socket): the whole handshake fed one byte
at a time gives the same frames as fed at once, and garbage never raises."""

from __future__ import annotations

import random

from rabbitish.bridge.codec import (
    AMQP_HEADER,
    FRAME_SASL,
    SASL_HEADER,
    FrameReader,
    Symbol,
    UInt,
    encode_frame,
)
from rabbitish.bridge.codec.definitions import (
    Attach,
    Begin,
    Close,
    Flow,
    Open,
    SaslInit,
    Source,
)
from rabbitish.bridge.connection import Connection10, State

from rabbitish.config import Config
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.protocol.codec import CODEC

HANDSHAKE = b"".join(
    [
        encode_frame(
            0,
            SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0guest\0guest"),
            frame_type=FRAME_SASL,
        ),
        AMQP_HEADER,
        encode_frame(0, Open(container_id="c", idle_time_out=UInt(0))),
        encode_frame(
            0, Begin(next_outgoing_id=UInt(0), incoming_window=UInt(5), outgoing_window=UInt(5))
        ),
        encode_frame(0, Close()),
    ]
)


def run(chunks: list[bytes]) -> tuple[list, Connection10]:
    conn = Connection10(Node(ManualScheduler()), Config())
    conn.start(SASL_HEADER, b"")
    for chunk in chunks:
        conn.receive(chunk)
    out = conn.take_output()
    assert out[:8] == SASL_HEADER
    frames = []
    rest = out[8:]
    reader = FrameReader(1 << 20)
    # SASL frames, then the AMQP header, then AMQP frames.
    sasl_mechanisms_size = int.from_bytes(rest[:4], "big")
    sasl_outcome_at = sasl_mechanisms_size
    outcome_size = int.from_bytes(rest[sasl_outcome_at : sasl_outcome_at + 4], "big")
    sasl_part = rest[: sasl_outcome_at + outcome_size]
    frames += reader.feed(sasl_part)
    after = rest[sasl_outcome_at + outcome_size :]
    if after:
        assert after[:8] == AMQP_HEADER
        frames += FrameReader(1 << 20).feed(after[8:])
    return [type(f.body).__name__ for f in frames], conn


def test_the_handshake_byte_by_byte_equals_all_at_once():
    whole, conn = run([HANDSHAKE])
    assert whole == ["SaslMechanisms", "SaslOutcome", "Open", "Begin", "Close"]
    assert conn.should_close and conn.user == "guest"
    bytewise, _ = run([HANDSHAKE[i : i + 1] for i in range(len(HANDSHAKE))])
    assert bytewise == whole


def test_random_bytes_after_open_close_the_connection_without_raising(caplog):
    """Garbage is a framing or decode error, never the internal-error path (a bug)."""
    rng = random.Random(7)
    for _ in range(500):
        conn = Connection10(Node(ManualScheduler()), Config())
        conn.start(AMQP_HEADER, encode_frame(0, Open(container_id="c")))
        assert conn.state is State.OPENED
        conn.receive(rng.randbytes(rng.randrange(1, 64)))
        conn.take_output()
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]


def test_a_receivers_first_credit_is_answered_after_its_attach():
    """A client sends its attach and first flow in one write; the deliveries that credit allows
    go out from a timer, after the attach reply was written, as RabbitMQ's queues answer a new
    link's credit from their own process (a 4.x client returns from making its receiver before
    its first message)."""
    scheduler = ManualScheduler()
    node = Node(scheduler, codec=CODEC)
    vhost = node.vhost("/")
    assert vhost is not None
    vhost.declare_queue("q", owner=None)
    vhost.publish("", "q", CODEC.new_message("", "q", CODEC.from_fields({}), b"m"))
    conn = Connection10(node, Config())
    conn.start(AMQP_HEADER, encode_frame(0, Open(container_id="c")))
    begin = Begin(next_outgoing_id=UInt(0), incoming_window=UInt(100), outgoing_window=UInt(100))
    attach = Attach(name="r", handle=UInt(0), role=True, source=Source(address="/queue/q"))
    flow = Flow(
        next_incoming_id=UInt(0),
        incoming_window=UInt(100),
        next_outgoing_id=UInt(0),
        outgoing_window=UInt(100),
        handle=UInt(0),
        delivery_count=UInt(0),
        link_credit=UInt(10),
    )
    conn.take_output()
    conn.receive(b"".join(encode_frame(0, f) for f in (begin, attach, flow)))
    first = [type(f.body).__name__ for f in FrameReader(1 << 20).feed(conn.take_output())]
    assert first == ["Begin", "Attach"]
    for _, callback in scheduler.pending:
        callback()
    later = [type(f.body).__name__ for f in FrameReader(1 << 20).feed(conn.take_output())]
    assert later == ["Transfer"]
