"""Cross-check against another AMQP 1.0 implementation when python-qpid-proton happens to be
installed (it is not a dependency): what it encodes we decode to the same value, and what we
encode it decodes to the same value as its own encoding."""

from __future__ import annotations

import uuid

import pytest
from rabbitish.bridge.codec.definitions import Open, Transfer
from rabbitish.bridge.codec.types import (
    Array,
    Byte,
    Char,
    Described,
    Float32,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode,
    encode,
)

from tests.support.amqp10_values import same

proton = pytest.importorskip("proton")


def _theirs():
    p = proton
    return [
        (None, None),
        (True, True),
        (UByte(7), p.ubyte(7)),
        (UShort(700), p.ushort(700)),
        (UInt(0), p.uint(0)),
        (UInt(70), p.uint(70)),
        (UInt(70000), p.uint(70000)),
        (ULong(0), p.ulong(0)),
        (ULong(2**40), p.ulong(2**40)),
        (Byte(-7), p.byte(-7)),
        (Short(-700), p.short(-700)),
        (Int(-70000), p.int32(-70000)),
        (Long(-(2**40)), -(2**40)),
        (Float32(1.5), p.float32(1.5)),
        (2.25, 2.25),
        (Char("\u20ac"), p.char("\u20ac")),
        (Timestamp(1_700_000_000_000), p.timestamp(1_700_000_000_000)),
        (uuid.UUID(int=99), uuid.UUID(int=99)),
        (b"\x00\x01" * 200, b"\x00\x01" * 200),
        ("text \u00e9" * 60, "text \u00e9" * 60),
        (Symbol("sym"), p.symbol("sym")),
        ([Long(1), "a", None, Symbol("s")], [1, "a", None, p.symbol("s")]),
        ({Symbol("k"): Long(1), "s": [True]}, {p.symbol("k"): 1, "s": [True]}),
        (
            Array("symbol", ["a", "b"]),
            p.Array(p.UNDESCRIBED, p.Data.SYMBOL, p.symbol("a"), p.symbol("b")),
        ),
        (Array("uint", [1, 70000]), p.Array(p.UNDESCRIBED, p.Data.UINT, p.uint(1), p.uint(70000))),
        (Described(Symbol("d"), "v"), p.Described(p.symbol("d"), "v")),
        (Described(ULong(0x1234), [None]), p.Described(p.ulong(0x1234), [None])),
    ]


def _proton_encode(value) -> bytes:
    data = proton.Data()
    data.put_object(value)
    return data.encode()


def _proton_decode(encoded: bytes):
    data = proton.Data()
    data.decode(encoded)
    data.rewind()
    data.next()
    return _owned(data.get_object())


def _owned(value):
    """Proton hands binaries back as views of its own buffer: copy them while it is alive."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, proton.Described):
        return proton.Described(value.descriptor, _owned(value.value))
    if isinstance(value, list):
        return [_owned(item) for item in value]
    if isinstance(value, dict):
        return {_owned(key): _owned(item) for key, item in value.items()}
    return value


@pytest.mark.parametrize(("ours", "theirs"), _theirs(), ids=lambda v: repr(v)[:30])
def test_both_ways(ours, theirs):
    decoded, end = decode(_proton_encode(theirs))
    assert same(decoded, ours)
    assert end == len(_proton_encode(theirs))
    back = _proton_decode(encode(ours))
    assert back == theirs
    assert type(back) is type(theirs)


def test_performatives_read_by_proton():
    opened = _proton_decode(
        encode(Open(container_id="c", channel_max=5, offered_capabilities=["a"]))
    )
    assert opened.descriptor == proton.ulong(0x10)
    assert opened.value[0] == "c"
    assert type(opened.value[3]) is proton.ushort and opened.value[3] == 5
    assert list(opened.value[7]) == [proton.symbol("a")]
    transfer = _proton_decode(encode(Transfer(handle=1, delivery_tag=b"t", settled=True)))
    assert transfer.value == [proton.uint(1), None, b"t", None, True]
