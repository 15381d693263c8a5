"""Round trips over generated values (every Python type of the codec, nested), and a fuzz test:
random and mutated bytes thrown at the decoder, of which only DecodeError may escape."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rabbitish.bridge.codec import definitions
from rabbitish.bridge.codec.framing import FrameReader, FramingError, encode_frame
from rabbitish.bridge.codec.types import (
    Array,
    DecodeError,
    Long,
    Symbol,
    UInt,
    decode,
    decode_all,
    encode,
    encode_into,
)

from tests.support.amqp10_values import VALUES, filled, instances, same

SLOW = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(VALUES)
def test_round_trip_keeps_value_and_type(value):
    data = encode(value)
    decoded, end = decode(data)
    assert end == len(data)
    assert same(decoded, value), (value, decoded)
    # Encoding is deterministic, so the bytes round-trip too.
    assert encode(decoded) == data


@SLOW
@given(st.lists(VALUES, max_size=5), st.binary(max_size=4))
def test_values_back_to_back_and_at_an_offset(values, prefix):
    out = bytearray(prefix)
    for value in values:
        encode_into(value, out)
    data = bytes(out)
    pos = len(prefix)
    for value in values:
        decoded, pos = decode(data, pos)
        assert same(decoded, value)
    assert pos == len(data)
    assert len(decode_all(data[len(prefix) :])) == len(values)


@given(st.integers(Long.MIN, Long.MAX))
def test_plain_ints_come_back_as_longs(number):
    decoded, _ = decode(encode(number))
    assert type(decoded) is Long and decoded == number


@given(st.lists(st.text(max_size=3), max_size=4), st.booleans())
def test_tuples_and_lists_encode_alike(items, as_tuple):
    value = tuple(items) if as_tuple else list(items)
    assert decode(encode(value))[0] == list(items)


_SPEC_CLASSES = sorted(definitions.CLASSES.values(), key=lambda cls: int(cls.DESCRIPTOR))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SPEC_CLASSES).flatmap(instances))
def test_spec_types_inside_values_round_trip(value):
    wrapped = [value, {Symbol("k"): value}]
    assert same(decode(encode(wrapped))[0], wrapped)


# ---------------------------------------------------------------------- fuzz
def _decode_or_decode_error(data: bytes) -> None:
    try:
        decode_all(data)
    except DecodeError as exc:
        assert str(exc)  # always a message


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(data):
    _decode_or_decode_error(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, st.data())
def test_mutated_encodings_raise_only_decode_error(value, data):
    buf = bytearray(encode(value))
    for _ in range(data.draw(st.integers(1, 4))):
        if not buf:
            break
        at = data.draw(st.integers(0, len(buf) - 1))
        action = data.draw(st.sampled_from(["flip", "set", "delete", "insert", "truncate"]))
        if action == "flip":
            buf[at] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "set":
            buf[at] = data.draw(st.sampled_from([0x00, 0x40, 0x45, 0x53, 0xA1, 0xC0, 0xE0, 0xFF]))
        elif action == "delete":
            del buf[at]
        elif action == "insert":
            buf.insert(at, data.draw(st.integers(0, 255)))
        else:
            del buf[at:]
    _decode_or_decode_error(bytes(buf))


def _corpus() -> list[bytes]:
    """Encodings of every spec class with fields set, and compound values of every kind."""
    values = [
        [UInt(1), "text", Symbol("s"), b"\x00", {Symbol("k"): [None, 1.5]}],
        Array("list", [[UInt(1)], []]),
        Array("array", [Array("uint", [1, 2]), Array("symbol", ["a"])]),
        Array("map", [{1: 2}], descriptor=Symbol("d")),
        {(1, 2): "list key"},
    ]
    corpus = [encode(value) for value in values]
    corpus += [encode(filled(cls)) for cls in definitions.CLASSES.values()]
    return corpus


def test_seeded_mutation_sweep_over_every_spec_class():
    """Many cheap mutations (no shrinking needed): byte flips, size fields pushed up and
    down, truncations, over encodings of every spec class."""
    rng = random.Random(1234)
    corpus = _corpus()
    for _ in range(20000):
        buf = bytearray(rng.choice(corpus))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(buf))
            choice = rng.random()
            if choice < 0.5:
                buf[at] = rng.randrange(256)
            elif choice < 0.7:
                buf[at] = (buf[at] + rng.choice((-1, 1))) % 256
            elif choice < 0.85:
                del buf[at:]
                if not buf:
                    break
            else:
                buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        _decode_or_decode_error(bytes(buf))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_random_frames_raise_only_framing_or_decode_errors(data):
    reader = FrameReader(512)
    frame = encode_frame(0, definitions.Close())
    try:
        reader.feed(frame + data)
    except (FramingError, DecodeError):
        pass
