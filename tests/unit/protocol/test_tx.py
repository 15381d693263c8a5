"""The tx class on the wire (rabbitish/protocol/tx.py): where a commit's commit-ok goes relative
to the deliveries the commit lets out."""

from __future__ import annotations

from pamqp import commands

from rabbitish.protocol.framing import FrameReader, encode_method
from tests.unit.harness import Harness, Out


def _consuming_in_tx(messages: int, prefetch: int = 1) -> Harness:
    """A tx channel consuming `messages` queued messages with `prefetch`; the first deliveries
    taken."""
    h = Harness()
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Queue.Declare(queue="q"))
    for index in range(messages):
        h.publish(1, b"m%d" % index, routing_key="q")
    h.send(1, commands.Basic.Qos(prefetch_count=prefetch))
    h.send(1, commands.Tx.Select())
    h.send(1, commands.Basic.Consume(queue="q", consumer_tag="c"))
    return h


def _names_in(output: bytes) -> list[str]:
    return [Out(t, c, p).name for t, c, p in FrameReader(1 << 30).feed(output)]


def test_an_ack_only_commit_sends_commit_ok_before_the_deliveries_it_lets_out():
    h = _consuming_in_tx(3)
    h.send(1, commands.Basic.Ack(delivery_tag=1))
    conn = h.conn
    conn.receive(encode_method(1, commands.Tx.Commit()))
    # The first flush holds the commit-ok alone: the client need not wait for the deliveries.
    assert _names_in(conn.take_output()) == ["Tx.CommitOk"]
    # Once it went out, the freed credit delivers.
    conn.output_drained()
    assert _names_in(conn.take_output()) == ["Basic.Deliver", "header", "body"]


def test_a_commit_that_publishes_delivers_as_before():
    h = _consuming_in_tx(2)
    h.send(1, commands.Basic.Ack(delivery_tag=1))
    h.publish(1, b"new", routing_key="q")
    frames = h.send(1, commands.Tx.Commit())
    # In memory the commit completes with this input batch: the delivery its ack let out comes
    # first, in the same flush, as before.
    assert [f.name for f in frames] == ["Basic.Deliver", "header", "body", "Tx.CommitOk"]


def test_the_harness_sees_the_whole_exchange_in_order():
    h = _consuming_in_tx(3)
    h.send(1, commands.Basic.Ack(delivery_tag=1))
    frames = h.send(1, commands.Tx.Commit())
    assert [f.name for f in frames] == ["Tx.CommitOk", "Basic.Deliver", "header", "body"]
