"""The frames FramePublisher writes are the ones pika's own basic_publish would write, byte for
byte: small and empty bodies, bodies split over several frames, property lists, and messages
interleaved with pika's own methods in one buffer."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

import pika
from pika import frame, spec

from rabbitish.spark.frames import DeliveryReader, FramePublisher, encoded_properties


class _Connection:
    """What FramePublisher uses of pika's connection: the body frame size it negotiated and
    the output buffer."""

    def __init__(self, body_max: int) -> None:
        self._body_max_length = body_max
        self.written: list[bytes] = []
        self.is_closed = False

    def _output_marshaled_frames(self, frames: list[bytes]) -> None:
        self.written.extend(frames)


class _Impl:
    def __init__(self, connection: _Connection) -> None:
        self.channel_number = 3
        self.connection = connection


class _Channel:
    """A BlockingChannel's surface as FramePublisher sees it; flushing records nothing."""

    def __init__(self, body_max: int) -> None:
        self._impl = _Impl(_Connection(body_max))
        self.is_closed = False
        self.flushes = 0

    def _flush_output(self) -> None:
        self.flushes += 1


def _pika_frames(exchange: str, key: str, props: pika.BasicProperties, body: bytes, most: int):
    """What pika.connection.Connection._send_message marshals for one message."""
    out = [
        frame.Method(3, spec.Basic.Publish(exchange=exchange, routing_key=key)).marshal(),
        frame.Header(3, len(body), props).marshal(),
    ]
    out += [frame.Body(3, body[i : i + most]).marshal() for i in range(0, len(body), most)]
    return b"".join(out)


@pytest.mark.parametrize("body", [b"", b"x", b"hello" * 100, bytes(range(256)) * 41])
def test_each_message_is_the_frames_pika_would_send(body):
    props = pika.BasicProperties(
        headers={"x-half-txn": "spark-1", "n": 5}, delivery_mode=2, content_type="text/plain"
    )
    channel = _Channel(body_max=4088)
    publisher = FramePublisher(channel)  # type: ignore[arg-type]
    publisher.publish("ex", "rk", encoded_properties(props), body)
    publisher.publish("", "other", encoded_properties(pika.BasicProperties()), body)
    publisher.flush()
    expected = _pika_frames("ex", "rk", props, body, 4088)
    expected += _pika_frames("", "other", pika.BasicProperties(), body, 4088)
    assert b"".join(channel._impl.connection.written) == expected
    assert channel.flushes == 1


def test_buffered_frames_reach_the_socket_in_runs():
    channel = _Channel(body_max=131_064)
    publisher = FramePublisher(channel)  # type: ignore[arg-type]
    props = encoded_properties(pika.BasicProperties(delivery_mode=2))
    for _ in range(3000):
        publisher.publish("", "q", props, b"x" * 1000)
    assert channel.flushes == 2  # every FLUSH_BYTES (1 MiB): after ~1040 and ~2080 messages
    publisher.flush()
    assert channel.flushes == 3
    one = _pika_frames("", "q", pika.BasicProperties(delivery_mode=2), b"x" * 1000, 131_064)
    assert b"".join(channel._impl.connection.written) == one * 3000


class _PikaInput:
    """pika's connection as DeliveryReader sees it: its frame handler (recording what it
    gets) and its byte count."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.bytes_received = 0

    def _on_data_available(self, data: bytes) -> None:
        self.frames.append(data)


class _BlockingConnection:
    def __init__(self) -> None:
        self._impl = _PikaInput()


def _delivery(channel: int, tag: int, body: bytes, props: pika.BasicProperties, most: int):
    deliver = spec.Basic.Deliver(
        consumer_tag="ctag",
        delivery_tag=tag,
        redelivered=tag % 2 == 0,
        exchange="ex",
        routing_key=f"rk{tag}",
    )
    out = [
        frame.Method(channel, deliver).marshal(),
        frame.Header(channel, len(body), props).marshal(),
    ]
    out += [frame.Body(channel, body[i : i + most]).marshal() for i in range(0, len(body), most)]
    return out


@pytest.mark.parametrize("cut", [1, 7, 100, 4096, 1 << 20])
def test_deliveries_are_taken_and_every_other_frame_goes_to_pika_whole(cut):
    props = pika.BasicProperties(headers={"a": "b"}, delivery_mode=2, message_id="m")
    other = [
        frame.Method(2, spec.Tx.CommitOk()).marshal(),  # this channel, not a delivery
        frame.Heartbeat().marshal(),
        frame.Method(
            3, spec.Basic.GetOk(delivery_tag=9, exchange="", routing_key="q", message_count=0)
        ).marshal(),
        frame.Header(3, 2, pika.BasicProperties()).marshal(),
        frame.Body(3, b"hi").marshal(),
    ]
    stream = [
        *_delivery(2, 1, b"first", props, 4088),
        other[0],
        *_delivery(2, 2, b"", pika.BasicProperties(), 4088),
        other[1],
        other[2],
        *_delivery(2, 3, bytes(range(256)) * 40, props, 4088)[:2],
        other[3],  # another channel's frames between two body frames of this one
        *_delivery(2, 3, bytes(range(256)) * 40, props, 4088)[2:],
        other[4],
    ]
    data = b"".join(stream)
    connection = _BlockingConnection()
    reader = DeliveryReader(connection, 2)  # type: ignore[arg-type]
    for start in range(0, len(data), cut):
        connection._impl._on_data_available(data[start : start + cut])
    assert connection._impl.frames == other
    encoded = encoded_properties(props)
    assert reader.take() == [
        (1, False, "ex", "rk1", encoded, b"first"),
        (2, True, "ex", "rk2", encoded_properties(pika.BasicProperties()), b""),
        (3, False, "ex", "rk3", encoded, bytes(range(256)) * 40),
    ]
    assert reader.take() == []
    assert connection._impl.bytes_received == len(data) - sum(len(f) for f in other)
