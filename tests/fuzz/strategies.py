"""Hypothesis strategies for hostile 0-9-1 input: frames that are mostly well formed (real
method payloads, content headers, bodies, field tables of every type, nested deep) with
mutations, on the channels that matter, sliced any way."""

from __future__ import annotations

import struct

from hypothesis import strategies as st
from pamqp import commands

from rabbitish.protocol.field_types import FIELD_TYPES
from tests.support import deep_tables
from tests.unit.protocol.test_states import zero_arguments

_u32 = struct.Struct(">I")
INDEXES = sorted(commands.INDEX_MAPPING)

# ---------------------------------------------------------------------- field tables
_fixed_tags = [tag for tag, field in FIELD_TYPES.items() if field.size is not None]


@st.composite
def field_value(draw: st.DrawFn, depth: int = 0) -> bytes:
    """One typed field value: a known tag with fitting bytes, sometimes a nested table or
    array (deep ones too), sometimes anything at all."""
    choice = draw(st.integers(0, 9))
    if choice <= 4:
        tag = draw(st.sampled_from(_fixed_tags))
        return bytes([tag]) + draw(
            st.binary(min_size=FIELD_TYPES[tag].size, max_size=FIELD_TYPES[tag].size)
        )
    if choice <= 6:
        tag = draw(st.sampled_from(b"Sx"))
        data = draw(st.binary(max_size=12))
        return bytes([tag]) + _u32.pack(len(data)) + data
    if choice == 7 and depth < 3:
        items = draw(st.lists(field_value(depth + 1), max_size=3))
        body = b"".join(items)
        return b"A" + _u32.pack(len(body)) + body
    if choice == 8 and depth < 3:
        return b"F" + draw(field_table(depth + 1))
    if choice == 9 and draw(st.booleans()):
        return deep_tables.nested_value(draw(st.integers(60, 3000)), draw(st.sampled_from("FA")))
    return draw(st.binary(max_size=8))


@st.composite
def field_table(draw: st.DrawFn, depth: int = 0) -> bytes:
    """An encoded field table with its length prefix: entries of field_value, keys of any
    bytes, and now and then a length that lies."""
    entries = draw(st.lists(st.tuples(st.binary(max_size=6), field_value(depth)), max_size=4))
    body = b"".join(bytes([len(k)]) + k + v for k, v in entries)
    size = len(body)
    if draw(st.integers(0, 9)) == 0:
        size = draw(st.integers(0, size + 8))
    return _u32.pack(size) + body


# ---------------------------------------------------------------------- frames
@st.composite
def method_payload(draw: st.DrawFn) -> bytes:
    """A method payload: a known method with its zero arguments, with a field table or short
    string spliced in, or cut or extended; or an unknown class/method."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.binary(max_size=12))
    index = draw(st.sampled_from(INDEXES))
    cls = commands.INDEX_MAPPING[index]
    payload = _u32.pack(index) + zero_arguments(cls)
    mutation = draw(st.integers(0, 5))
    if mutation == 1 and any(cls.amqp_type(n) == "table" for n in cls.__slots__):
        payload = payload[:-4] + draw(field_table())  # the table is the last argument
    elif mutation == 2:
        payload = payload[: draw(st.integers(0, len(payload)))]
    elif mutation == 3:
        payload += draw(st.binary(min_size=1, max_size=4))
    elif mutation == 4 and len(payload) > 4:
        at = draw(st.integers(4, len(payload) - 1))
        payload = payload[:at] + bytes([draw(st.integers(0, 255))]) + payload[at + 1 :]
    return payload


@st.composite
def content_header_payload(draw: st.DrawFn) -> bytes:
    """class 60, a body size (small, or absurd), property flags and property bytes that match
    them or not (headers tables included)."""
    size = draw(st.one_of(st.integers(0, 40), st.integers(0, 2**64 - 1)))
    class_id = draw(st.sampled_from([60, 60, 60, 50, 0]))
    flags = draw(st.sampled_from([0, 0x2000, 0x1000, 0x3800, 0x8000, 0xFFFF, 0x0001]))
    props = b""
    if flags & 0x8000:
        props += b"\x03a/b"
    if flags & 0x2000:
        props += draw(field_table())
    if flags & 0x1000:
        props += bytes([draw(st.integers(0, 3))])
    if flags & 0x0800:
        props += bytes([draw(st.integers(0, 255))])
    if draw(st.integers(0, 4)) == 0:
        props = draw(st.binary(max_size=10))
    return struct.pack(">HHQH", class_id, 0, size, flags) + props


@st.composite
def frame(draw: st.DrawFn) -> bytes:
    """One frame on channel 0, 1 or 2 (sometimes any), with the right frame-end (mostly)."""
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        ftype, payload = 1, draw(method_payload())
    elif kind <= 6:
        ftype, payload = 2, draw(content_header_payload())
    elif kind == 7:
        ftype, payload = 3, draw(st.binary(max_size=40))
    elif kind == 8:
        ftype, payload = 8, b""
    else:
        ftype, payload = draw(st.integers(0, 255)), draw(st.binary(max_size=8))
    channel = draw(st.one_of(st.sampled_from([0, 1, 1, 1, 2]), st.integers(0, 65535)))
    end = b"\xce" if draw(st.integers(0, 29)) else bytes([draw(st.integers(0, 255))])
    size = len(payload)
    if draw(st.integers(0, 49)) == 0:
        size = draw(st.integers(0, 2**32 - 1))  # a size that lies
    return struct.pack(">BHI", ftype, channel, size) + payload + end


def publish(channel: int, routing_key: str, body: bytes, header: bytes) -> bytes:
    """basic.publish to the default exchange, a content header payload, the body in one frame."""
    method = commands.Basic.Publish(routing_key=routing_key)
    payload = _u32.pack(method.index) + method.marshal()
    out = struct.pack(">BHI", 1, channel, len(payload)) + payload + b"\xce"
    out += struct.pack(">BHI", 2, channel, len(header)) + header + b"\xce"
    if body:
        out += struct.pack(">BHI", 3, channel, len(body)) + body + b"\xce"
    return out


frames = st.lists(frame(), min_size=1, max_size=6).map(b"".join)
cuts = st.lists(st.integers(1, 400), max_size=4)


# ---------------------------------------------------------------------- AMQP 1.0
@st.composite
def amqp10_frames(draw: st.DrawFn) -> bytes:
    """1.0 frames after open: performatives with every field generated (transfers with
    payloads), on channels 0-3, with a byte changed now and then; or bytes of any kind."""
    from rabbitish.bridge.codec import encode_frame
    from rabbitish.bridge.codec.definitions import PERFORMATIVES

    from tests.support.amqp10_values import instances

    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)):
            cls = draw(st.sampled_from(sorted(PERFORMATIVES, key=lambda c: c.__name__)))
            body = draw(instances(cls))
            payload = draw(st.binary(max_size=24))
            try:
                data = encode_frame(draw(st.integers(0, 3)), body, payload)
            except Exception:  # an instance the encoder refuses: send garbage instead
                data = draw(st.binary(max_size=24))
        else:
            data = draw(st.binary(max_size=40))
        parts.append(data)
    data = b"".join(parts)
    if data and draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    return data
