"""Frames: the reader over any slicing of the stream, size checks before buffering, heartbeats,
the extended header, bodies that are not performatives, and splitting a message over transfer
frames."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rabbitish.bridge.codec.definitions import (
    Attach,
    Begin,
    Close,
    Open,
    SaslInit,
    SaslMechanisms,
    Source,
    Transfer,
)
from rabbitish.bridge.codec.framing import (
    AMQP_HEADER,
    FRAME_AMQP,
    FRAME_SASL,
    HEARTBEAT,
    MIN_MAX_FRAME_SIZE,
    SASL_HEADER,
    Frame,
    FrameDecodeError,
    FrameReader,
    FramingError,
    encode_frame,
    encode_transfers,
)
from rabbitish.bridge.codec.types import DecodeError, Symbol, UInt, encode


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def raw_frame(body: bytes, *, doff: int = 2, frame_type: int = 0, channel: int = 0) -> bytes:
    extended = bytes(doff * 4 - 8) if doff >= 2 else b""
    size = 8 + len(extended) + len(body)
    return struct.pack(">IBBH", size, doff, frame_type, channel) + extended + body


def test_constants():
    assert AMQP_HEADER == b"AMQP\x00\x01\x00\x00"
    assert SASL_HEADER == b"AMQP\x03\x01\x00\x00"
    assert (FRAME_AMQP, FRAME_SASL, MIN_MAX_FRAME_SIZE) == (0, 1, 512)


def test_encode_frame_layout():
    assert h("00 00 00 08 02 00 00 00") == HEARTBEAT
    assert encode_frame(0, None) == HEARTBEAT
    assert encode_frame(3, Close()) == h("00 00 00 0c 02 00 00 03 00 53 18 45")
    assert encode_frame(0, SaslMechanisms(sasl_server_mechanisms=["PLAIN"]), frame_type=1) == (
        h("00 00 00 18 02 01 00 00 00 53 40 c0 0b 01 e0 08 01 a3 05") + b"PLAIN"
    )
    frame = encode_frame(1, Transfer(handle=0), b"payload")
    assert frame == h("00 00 00 16 02 00 00 01 00 53 14 c0 02 01 43") + b"payload"


def stream() -> tuple[bytes, list[Frame]]:
    frames = [
        Frame(0, 0, Open(container_id="c", max_frame_size=UInt(4096)), b""),
        Frame(0, 0, Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10), b""),
        Frame(0, 1, Attach(name="l", handle=0, role=True, source=Source(address="q")), b""),
        Frame(0, 1, Transfer(handle=0, delivery_id=0, delivery_tag=b"t"), b"message bytes"),
        Frame(0, 0, None, b""),
        Frame(0, 7, Close(), b""),
    ]
    data = b"".join(encode_frame(f.channel, f.body, f.payload, f.type) for f in frames)
    return data, frames


def test_reader_one_byte_at_a_time():
    data, expected = stream()
    reader = FrameReader(4096)
    got = []
    for i in range(len(data)):
        got += reader.feed(data[i : i + 1])
    assert got == expected
    assert reader.buffered == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 200), max_size=12))
def test_reader_any_slicing(cuts):
    data, expected = stream()
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    reader = FrameReader(4096)
    got = []
    for start, end in itertools.pairwise(points):
        got += reader.feed(memoryview(data)[start:end])
    assert got == expected


def test_payload_and_body_are_bytes_and_values():
    frames = FrameReader(512).feed(encode_frame(2, Transfer(handle=5), b"\x00\x53\x75\xa0\x00"))
    assert frames == [Frame(0, 2, Transfer(handle=5), b"\x00\x53\x75\xa0\x00")]
    assert type(frames[0].payload) is bytes


def test_oversized_frame_is_refused_once_its_size_is_in():
    reader = FrameReader(512)
    size = struct.pack(">I", 1_000_000)
    reader.feed(size[:3])
    with pytest.raises(FramingError, match="1000000 bytes exceeds the maximum frame size 512"):
        reader.feed(size[3:])
    assert reader.buffered == 4  # nothing of the body was waited for


def test_frame_at_the_limit_is_accepted_and_the_limit_can_change():
    big = encode_frame(0, Transfer(handle=0), bytes(600))
    reader = FrameReader(MIN_MAX_FRAME_SIZE)
    with pytest.raises(FramingError):
        reader.feed(big)
    reader = FrameReader(MIN_MAX_FRAME_SIZE)
    reader.max_frame_size = len(big)
    assert len(reader.feed(big)) == 1
    reader.max_frame_size = len(big) - 1
    with pytest.raises(FramingError):
        reader.feed(big)


def test_heartbeats_on_any_channel():
    assert FrameReader(512).feed(HEARTBEAT + raw_frame(b"", channel=9)) == [
        Frame(0, 0, None, b""),
        Frame(0, 9, None, b""),
    ]


def test_extended_header_is_skipped():
    body = encode(Close())
    frames = FrameReader(512).feed(raw_frame(body, doff=5, channel=1))
    assert frames == [Frame(0, 1, Close(), b"")]
    # An empty frame with an extended header is still a heartbeat.
    assert FrameReader(512).feed(raw_frame(b"", doff=3)) == [Frame(0, 0, None, b"")]


def test_sasl_frames():
    init = SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\x00u\x00p")
    frames = FrameReader(512).feed(encode_frame(0, init, frame_type=FRAME_SASL))
    assert frames == [Frame(FRAME_SASL, 0, init, b"")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (h("00 00 00 07 02 00 00 00"), "frame size 7 is smaller than a frame header"),
        (h("00 00 00 00"), "frame size 0"),
        (h("00 00 00 08 01 00 00 00"), "data offset 1 is below the minimum of 2"),
        (h("00 00 00 08 00 00 00 00"), "data offset 0"),
        (h("00 00 00 0c 04 00 00 00 00 00 00 00"), r"data offset 4 \(16 bytes\) exceeds"),
        (h("00 00 00 08 02 02 00 00"), "unknown frame type 0x02"),
        (h("00 00 00 08 02 01 00 00"), "empty SASL frame"),
    ],
)
def test_framing_errors(data, message):
    with pytest.raises(FramingError, match=message):
        FrameReader(512).feed(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (raw_frame(encode("text")), "str is not a performative"),
        (raw_frame(encode(Source())), "Source is not a performative"),
        (raw_frame(encode(SaslInit(mechanism="PLAIN"))), "SaslInit is not a performative"),
        (raw_frame(encode(Close()), frame_type=1), "Close is not a SASL frame body"),
        (raw_frame(h("00 53 10 45")), "Open.container_id is mandatory"),
        (raw_frame(h("c0 05")), "truncated"),
        (raw_frame(h("01")), "unknown format code"),
    ],
)
def test_bodies_that_are_not_performatives(data, message):
    with pytest.raises(FrameDecodeError, match=message) as caught:
        FrameReader(512).feed(data)
    assert isinstance(caught.value, DecodeError)


def test_errors_carry_the_frames_before_them_and_a_decode_error_keeps_the_stream_in_step():
    good = encode_frame(0, Close())
    reader = FrameReader(512)
    with pytest.raises(FrameDecodeError) as caught:
        reader.feed(good + raw_frame(encode("text")) + good[:5])
    assert caught.value.frames == [Frame(0, 0, Close(), b"")]
    assert reader.feed(good[5:]) == [Frame(0, 0, Close(), b"")]
    with pytest.raises(FramingError) as framing:
        FrameReader(512).feed(good + h("00 00 00 02"))
    assert framing.value.frames == [Frame(0, 0, Close(), b"")]


@pytest.mark.parametrize(
    "body",
    [
        h("00 53 18 c0 05 01"),  # close: its list runs past the frame
        h("00 53 18"),  # close: the described value is missing
        h("00 53"),  # the descriptor's code is missing
        h("00 53 10 c0 02 01 a1"),  # open: the container-id's size is missing
    ],
)
def test_a_frame_decoded_where_it_lies_fails_as_it_fails_alone(body):
    """Frames are decoded in the bytes read, where the next frame follows: a body cut short
    must not borrow that frame's bytes, and its error is the one the frame alone gives."""
    bad = raw_frame(body)
    with pytest.raises(FrameDecodeError) as alone:
        FrameReader(512).feed(bad)
    following = encode_frame(0, Open(container_id="c" * 40)) + encode_frame(0, Close())
    with pytest.raises(FrameDecodeError) as followed:
        FrameReader(512).feed(bad + following)
    assert str(followed.value) == str(alone.value)


def test_a_frame_split_over_reads_is_kept_back_and_completed():
    frames = [encode_frame(0, Close()), encode_frame(3, Transfer(handle=1), b"payload")]
    stream = b"".join(frames)
    reader = FrameReader(512)
    assert reader.feed(stream[:-3]) == [Frame(0, 0, Close(), b"")]
    assert reader.buffered == len(frames[1]) - 3
    assert reader.feed(memoryview(stream[-3:])) == [Frame(0, 3, Transfer(handle=1), b"payload")]
    assert reader.buffered == 0
    assert all(type(frame.payload) is bytes for frame in reader.feed(stream))


# ---------------------------------------------------------------------- transfers
def reassemble(frames: list[bytes], max_frame_size: int) -> tuple[list[Transfer], bytes]:
    reader = FrameReader(max_frame_size)
    parsed = []
    for frame in frames:
        assert len(frame) <= max_frame_size
        parsed += reader.feed(frame)
    assert len(parsed) == len(frames)
    return [f.body for f in parsed], b"".join(f.payload for f in parsed)


def test_small_message_is_one_frame():
    transfer = Transfer(handle=1, delivery_id=7, delivery_tag=b"tag", message_format=0)
    frames = encode_transfers(3, transfer, b"hello", 512)
    assert frames == [encode_frame(3, transfer, b"hello")]


def test_large_message_is_split_with_more_on_all_but_the_last():
    transfer = Transfer(handle=1, delivery_id=7, delivery_tag=b"tag", message_format=0)
    payload = bytes(range(256)) * 10
    frames = encode_transfers(3, transfer, payload, 512)
    assert len(frames) == 6
    bodies, joined = reassemble(frames, 512)
    assert joined == payload
    assert [b.more for b in bodies] == [True] * 5 + [False]
    assert all(b.delivery_id == 7 and b.delivery_tag == b"tag" for b in bodies)
    assert all(len(frame) == 512 for frame in frames[:-1])


@settings(max_examples=150, deadline=None)
@given(
    st.integers(MIN_MAX_FRAME_SIZE, 2048),
    st.integers(0, 5000),
    st.booleans(),
    st.binary(min_size=0, max_size=32),
)
def test_splitting_never_exceeds_the_frame_size(max_frame_size, size, settled, tag):
    transfer = Transfer(handle=0, delivery_id=1, delivery_tag=tag, settled=settled)
    payload = bytes(i % 251 for i in range(size))
    frames = encode_transfers(0, transfer, payload, max_frame_size)
    bodies, joined = reassemble(frames, max_frame_size)
    assert joined == payload
    assert [b.more for b in bodies] == [True] * (len(frames) - 1) + [False]
    assert all(b.settled is settled for b in bodies)


def test_a_frame_size_too_small_for_the_performative_is_refused():
    transfer = Transfer(handle=0, delivery_tag=b"x" * 32)
    with pytest.raises(ValueError, match="cannot carry any payload"):
        encode_transfers(0, transfer, b"x" * 100, 40)
    with pytest.raises(TypeError):
        encode_transfers(0, Close(), b"", 512)
