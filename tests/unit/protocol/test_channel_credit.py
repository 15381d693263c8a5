"""Whose credit a 0-9-1 channel says came back (protocol/channel.py): an ack names only the
consumer it settles, so the queue asks none of the others, which stay blocked; under a global
prefetch (basic.qos global=true) an ack frees credit for every consumer of the channel, and
each of them is named."""

from __future__ import annotations

from pamqp import commands

from rabbitish.protocol.consumers import Consumer091
from tests.unit.harness import Harness, Out


def _consumer(h: Harness, channel: int) -> Consumer091:
    [consumer] = h.conn.channels[channel].consumers.values()
    return consumer


def _delivered_on(frames: list[Out]) -> list[int]:
    return [f.channel for f in frames if f.name == "Basic.Deliver"]


def _tags(frames: list[Out]) -> list[str]:
    return [f.method.consumer_tag for f in frames if f.name == "Basic.Deliver"]


def _ack(h: Harness, channel: int, tag: int) -> list[Out]:
    return h.send(channel, commands.Basic.Ack(delivery_tag=tag))


def test_an_ack_names_only_the_consumer_it_settles():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Queue.Declare(queue="q"))
    channels = range(2, 7)
    for channel in channels:
        h.open_channel(channel)
        h.send(channel, commands.Basic.Qos(prefetch_count=1))
        h.send(channel, commands.Basic.Consume(queue="q"))
    h.frames()
    out = [f for _ in range(6) for f in h.publish(1, b"m", routing_key="q")]
    assert _delivered_on(out) == list(channels)  # the sixth waits: every consumer is full
    assert all(_consumer(h, channel).blocked for channel in channels)
    assert _delivered_on(_ack(h, 4, 1)) == [4]
    # Only the consumer the ack named is back among the active ones (full again, it is found
    # so by the next message).
    assert [_consumer(h, channel).blocked for channel in channels] == [
        True,
        True,
        False,
        True,
        True,
    ]
    assert _delivered_on(h.publish(1, b"m", routing_key="q")) == []
    assert all(_consumer(h, channel).blocked for channel in channels)
    assert _delivered_on(_ack(h, 6, 1)) == [6]


def test_under_a_global_prefetch_an_ack_names_every_consumer_of_the_channel():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    for queue in ("q1", "q2"):
        h.send(1, commands.Queue.Declare(queue=queue))
    h.open_channel(2)
    h.send(2, commands.Basic.Qos(prefetch_count=1, global_=True))
    h.send(2, commands.Basic.Consume(queue="q1", consumer_tag="c1"))
    h.send(2, commands.Basic.Consume(queue="q2", consumer_tag="c2"))
    h.frames()
    assert _tags(h.publish(1, b"one", routing_key="q1")) == ["c1"]
    # The channel's limit is reached: c2 is found without credit.
    assert _tags(h.publish(1, b"two", routing_key="q2")) == []
    assert h.conn.channels[2].consumers["c2"].blocked
    assert _tags(_ack(h, 2, 1)) == ["c2"]  # the ack freed the channel's credit for c2 too
