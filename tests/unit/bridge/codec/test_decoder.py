"""Decoding: every encoding code of the spec (checked against types.bare.xml), arrays of every
kind, described values, and a DecodeError with a message for each way input can be malformed."""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET

import pytest
from rabbitish.bridge.codec import schema
from rabbitish.bridge.codec.definitions import Accepted, Close, Error, Open, Source, Transfer
from rabbitish.bridge.codec.types import (
    ELEMENT_TYPES,
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
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
    decode_all,
    encode,
)

from tests.support.amqp10_values import same


def h(text: str) -> bytes:
    return bytes.fromhex(text)


# One sample per format code: (code, bytes, value).
SAMPLES = [
    (0x40, "40", None),
    (0x41, "41", True),
    (0x42, "42", False),
    (0x56, "56 01", True),
    (0x56, "56 00", False),
    (0x50, "50 fe", UByte(254)),
    (0x60, "60 ff fe", UShort(0xFFFE)),
    (0x70, "70 00 00 00 01", UInt(1)),
    (0x52, "52 ff", UInt(255)),
    (0x43, "43", UInt(0)),
    (0x80, "80 ff ff ff ff ff ff ff ff", ULong(2**64 - 1)),
    (0x53, "53 10", ULong(16)),
    (0x44, "44", ULong(0)),
    (0x51, "51 80", Byte(-128)),
    (0x61, "61 80 00", Short(-32768)),
    (0x71, "71 80 00 00 00", Int(-(2**31))),
    (0x54, "54 fe", Int(-2)),
    (0x81, "81 80 00 00 00 00 00 00 00", Long(-(2**63))),
    (0x55, "55 05", Long(5)),
    (0x72, "72 3f c0 00 00", Float32(1.5)),
    (0x82, "82 bf f8 00 00 00 00 00 00", -1.5),
    (0x74, "74 01 02 03 04", Decimal32(h("01 02 03 04"))),
    (0x84, "84 01 02 03 04 05 06 07 08", Decimal64(h("01 02 03 04 05 06 07 08"))),
    (0x94, "94" + " 0f" * 16, Decimal128(b"\x0f" * 16)),
    (0x73, "73 00 10 ff ff", Char("\U0010ffff")),
    (0x83, "83 00 00 01 7f 00 00 00 00", Timestamp(0x17F00000000)),
    (0x98, "98" + " 00" * 15 + " 2a", uuid.UUID(int=42)),
    (0xA0, "a0 02 00 ff", b"\x00\xff"),
    (0xB0, "b0 00 00 00 01 61", b"a"),
    (0xA1, "a1 03 e2 82 ac", "\u20ac"),
    (0xB1, "b1 00 00 00 00", ""),
    (0xA3, "a3 03 61 3a 62", Symbol("a:b")),
    (0xB3, "b3 00 00 00 01 78", Symbol("x")),
    (0x45, "45", []),
    (0xC0, "c0 03 02 41 40", [True, None]),
    (0xD0, "d0 00 00 00 07 00 00 00 02 52 07 45", [UInt(7), []]),
    (0xC1, "c1 05 02 a3 01 6b 41", {Symbol("k"): True}),
    (0xD1, "d1 00 00 00 04 00 00 00 00", {}),
    (0xE0, "e0 04 02 50 01 02", Array("ubyte", [1, 2])),
    (0xF0, "f0 00 00 00 08 00 00 00 02 a1 00 01 61", Array("string", ["", "a"])),
    (0x00, "00 a3 01 64 40", Described(Symbol("d"), None)),
]


@pytest.mark.parametrize(("code", "data", "value"), SAMPLES, ids=lambda v: repr(v)[:30])
def test_each_format_code_decodes(code, data, value):
    buf = h(data)
    assert buf[0] == code
    decoded, end = decode(buf)
    assert same(decoded, value)
    assert end == len(buf)


def test_samples_cover_every_encoding_in_the_spec():
    root = ET.fromstring(schema.spec_xml("types"))
    spec_codes = {}
    for element in root.iter():
        if element.tag.endswith("}type"):
            for encoding in element:
                spec_codes[int(encoding.get("code"), 16)] = element.get("name")
    assert len(spec_codes) == 39
    assert {code for code, _, _ in SAMPLES} == set(spec_codes) | {0x00}
    assert spec_codes == ELEMENT_TYPES


def test_decode_at_an_offset_returns_the_end():
    buf = h("ff ff 52 05 a1 01 61")
    assert decode(buf, 2) == (UInt(5), 4)
    assert decode(buf, 4) == ("a", 7)
    assert decode(bytearray(buf), 2) == (UInt(5), 4)
    assert decode(memoryview(buf), 4) == ("a", 7)
    assert decode_all(buf[2:]) == [UInt(5), "a"]


def test_zero_width_values_are_shared_but_lists_are_fresh():
    first, _ = decode(h("45"))
    second, _ = decode(h("45"))
    first.append(1)
    assert second == []


# ---------------------------------------------------------------------- arrays
ARRAYS = [
    ("e0 02 00 40", Array("null", [])),
    ("e0 02 03 40", Array("null", [None] * 3)),
    ("e0 02 02 41", Array("boolean", [True, True])),
    ("e0 02 01 42", Array("boolean", [False])),
    ("e0 04 02 56 00 01", Array("boolean", [False, True])),
    ("e0 02 02 43", Array("uint", [0, 0])),
    ("e0 02 02 44", Array("ulong", [0, 0])),
    ("e0 02 02 45", Array("list", [[], []])),
    ("e0 0a 02 70 00 00 00 01 00 00 01 00", Array("uint", [1, 256])),
    ("e0 04 02 52 01 02", Array("uint", [1, 2])),
    ("e0 0a 01 80 00 00 00 00 00 00 00 05", Array("ulong", [5])),
    ("e0 03 01 53 05", Array("ulong", [5])),
    ("e0 03 01 54 ff", Array("int", [-1])),
    ("e0 06 01 71 ff ff ff ff", Array("int", [-1])),
    ("e0 03 01 55 ff", Array("long", [-1])),
    ("e0 03 01 51 ff", Array("byte", [-1])),
    ("e0 04 01 61 ff ff", Array("short", [-1])),
    ("e0 04 01 60 00 01", Array("ushort", [1])),
    ("e0 06 01 72 3f c0 00 00", Array("float", [1.5])),
    ("e0 0a 01 82 3f f8 00 00 00 00 00 00", Array("double", [1.5])),
    ("e0 06 01 74 00 00 00 01", Array("decimal32", [Decimal32(h("00 00 00 01"))])),
    ("e0 0a 01 84" + " 00" * 8, Array("decimal64", [Decimal64(bytes(8))])),
    ("e0 12 01 94" + " 00" * 16, Array("decimal128", [Decimal128(bytes(16))])),
    ("e0 06 01 73 00 00 00 61", Array("char", ["a"])),
    ("e0 0a 01 83 00 00 00 00 00 00 00 01", Array("timestamp", [1])),
    ("e0 12 01 98" + " 00" * 16, Array("uuid", [uuid.UUID(int=0)])),
    ("e0 05 02 a0 01 61 00", Array("binary", [b"a", b""])),
    ("e0 0b 02 b0 00 00 00 01 61 00 00 00 00", Array("binary", [b"a", b""])),
    ("e0 07 02 a1 01 61 02 62 63", Array("string", ["a", "bc"])),
    ("e0 09 01 b1 00 00 00 03 61 62 63", Array("string", ["abc"])),
    ("e0 04 01 a3 01 61", Array("symbol", [Symbol("a")])),
    ("e0 08 01 b3 00 00 00 02 61 62", Array("symbol", [Symbol("ab")])),
    ("e0 08 02 c0 01 00 03 01 52 01", Array("list", [[], [UInt(1)]])),
    ("e0 0c 01 d0 00 00 00 06 00 00 00 01 52 01", Array("list", [[UInt(1)]])),
    ("e0 06 01 c1 03 02 40 40", Array("map", [{None: None}])),
    ("e0 0a 01 d1 00 00 00 04 00 00 00 00", Array("map", [{}])),
    ("e0 06 01 e0 03 01 50 01", Array("array", [Array("ubyte", [1])])),
    ("e0 0c 01 f0 00 00 00 06 00 00 00 01 50 01", Array("array", [Array("ubyte", [1])])),
    # Arrays of arrays may mix the inner element types.
    (
        "e0 0a 02 e0 03 01 50 01 03 01 a1 00",
        Array("array", [Array("ubyte", [1]), Array("string", [""])]),
    ),
]


@pytest.mark.parametrize(("data", "value"), ARRAYS, ids=lambda v: repr(v)[:40])
def test_arrays_of_every_element_encoding(data, value):
    decoded, end = decode(h(data))
    assert same(decoded, value)
    assert end == len(h(data))


def test_arrays_of_described_elements():
    # Unknown descriptor: each element a Described.
    decoded, _ = decode(h("e0 08 02 00 a3 01 64 52 01 02"))
    d = Symbol("d")
    assert same(decoded, Array("uint", [Described(d, UInt(1)), Described(d, UInt(2))], d))
    # A known composite: each element its class (accepted has no fields: list8 of count 0).
    decoded, _ = decode(h("e0 09 02 00 53 24 c0 01 00 01 00"))
    assert decoded == Array("list", [Accepted(), Accepted()], ULong(0x24))
    assert encode(decoded) == h("e0 09 02 00 53 24 c0 01 00 01 00")
    # Described with a descriptor that is itself a list, over a compound element type.
    decoded, _ = decode(h("e0 0b 01 00 c0 02 01 40 c1 03 02 41 42"))
    assert same(decoded, Array("map", [Described([None], {True: False})], [None]))
    # A composite array with fields, written back the same way.
    errors = Array("list", [Error(condition=Symbol(c)) for c in "ab"], ULong(0x1D))
    assert decode(encode(errors))[0] == errors


def test_arrays_in_fields_decode_as_lists():
    data = encode(Open(container_id="c", offered_capabilities=["a", "b"]))
    assert decode(data)[0].offered_capabilities == [Symbol("a"), Symbol("b")]
    assert type(decode(data)[0].offered_capabilities) is list


# ---------------------------------------------------------------------- described
def test_described_values_with_any_descriptor():
    assert decode(h("00 53 99 40"))[0] == Described(ULong(0x99), None)
    assert decode(h("00 a1 01 78 40"))[0] == Described("x", None)
    assert decode(h("00 00 53 01 53 02 40"))[0] == Described(Described(ULong(1), ULong(2)), None)
    assert decode(h("00 c0 02 01 40 40"))[0] == Described([None], None)
    assert decode(h("00 53 01 00 53 02 40"))[0] == Described(ULong(1), Described(ULong(2), None))


def test_known_descriptors_by_code_in_any_width_and_by_name():
    body = "c0 04 01 a1 01 63"
    expected = Open(container_id="c")
    assert decode(h("00 53 10 " + body))[0] == expected
    assert decode(h("00 80 00 00 00 00 00 00 00 10 " + body))[0] == expected
    name = b"amqp:open:list"
    assert decode(h("00 a3") + bytes([len(name)]) + name + h(body))[0] == expected
    # A string (not a symbol) or a long (not a ulong) descriptor is not the spec's.
    assert isinstance(decode(h("00 a1") + bytes([len(name)]) + name + h(body))[0], Described)
    assert isinstance(decode(h("00 55 10 " + body))[0], Described)


def test_composites_fill_defaults_and_check_fields():
    transfer, _ = decode(h("00 53 14 c0 02 01 43"))
    assert transfer == Transfer(handle=0)
    assert transfer.more is False and transfer.settled is None
    source, _ = decode(h("00 53 28 45"))
    assert source.expiry_policy == Symbol("session-end") and source.timeout == UInt(0)
    # A multiple field given one value is a list of one.
    opened, _ = decode(h("00 53 10 c0 0d 08 a1 01 63 40 40 40 40 40 40 a3 01 61"))
    assert opened.offered_capabilities == [Symbol("a")]
    # More elements than fields: the extra ones are ignored.
    assert decode(h("00 53 18 c0 03 02 40 41"))[0] == Close()
    # Nested composites decode too.
    close, _ = decode(encode(Close(error=Error(condition=Symbol("amqp:x"), description="d"))))
    assert close.error == Error(condition=Symbol("amqp:x"), description="d")


def test_map_keys_python_cannot_hash_become_tuples():
    value, _ = decode(h("c1 08 02 c0 04 02 52 01 45 41"))
    assert value == {(UInt(1), ()): True}
    value, _ = decode(h("c1 07 02 c1 03 02 40 40 41"))
    assert value == {((None, None),): True}


# ---------------------------------------------------------------------- errors
MALFORMED = [
    ("", "no value at offset 0"),
    ("01", "unknown format code 0x01"),
    ("ff", "unknown format code 0xff"),
    ("56 02", "neither 0 nor 1"),
    ("70 00 00", "truncated uint"),
    ("a1 05 61", "truncated str8-utf8"),
    ("b0 ff ff ff ff 00", "truncated vbin32"),
    ("a1 01 ff", "string at offset 2 is not UTF-8"),
    ("a1 02 c3 28", "not UTF-8"),
    ("a1 03 ed a0 80", "not UTF-8"),  # an encoded surrogate
    ("a3 01 80", "symbol at offset 2 is not UTF-8"),
    ("73 00 11 00 00", "not a Unicode scalar value"),
    ("73 00 00 d8 00", "not a Unicode scalar value"),
    ("c0 00 00", "too small for its count"),
    ("d0 00 00 00 03 00 00 00 00", "too small for its count"),
    ("c0 05 01 40", "truncated list8"),
    ("c0 03 01 40 40", "size does not match"),
    ("c0 02 02 40", "claims 2 items in 1 bytes"),
    ("c0 03 02 a1 01 61", "items run past its size"),
    ("d0 00 00 00 04 ff ff ff ff", "claims 4294967295 items"),
    ("c1 03 01 40 40", "odd count"),
    ("c1 02 01 40", "odd count"),
    ("e0 01 00", "no element constructor"),
    ("e0 02 01 01", "element constructor 0x01 is not a type"),
    ("e0 05 01 00 53 01 00 53", "more than one descriptor"),
    ("e0 03 01 00 53 01", "element descriptor runs past its size"),
    ("e0 03 03 52 01", "claims 3 elements in 1 bytes"),
    ("e0 03 01 a1 01 61", "elements run past its size"),
    ("e0 04 01 52 01 02", "size does not match its elements"),
    ("f0 00 00 00 05 ff ff ff ff 40", "zero-width elements"),
    ("e0 02 ff 40", "255 zero-width elements"),
    ("00", "truncated descriptor"),
    ("00 53 77", "truncated described value"),
    ("00 53 10 45", "Open.container_id is mandatory"),
    ("00 53 10 c0 04 01 a3 01 63", "Open.container_id is symbol"),
    ("00 53 14 c0 02 01 44", "Transfer.handle is ulong"),
    ("00 53 10 40", "Open described null, expected a list"),
    ("00 53 10 c0 0d 08 a1 01 63 40 40 40 40 40 40 a1 01 61", "offered_capabilities holds string"),
    ("00 53 18 c0 03 01 a1 00", "Close.error is string"),
    ("00 53 75 a1 00", "Data holds string, expected binary"),
    ("00 53 74 c0 01 00", "ApplicationProperties holds list, expected map"),
    ("c1 06 02 00 53 23 45 40", "Received.section_number is mandatory"),
]


@pytest.mark.parametrize(("data", "message"), MALFORMED, ids=lambda v: v[:40])
def test_malformed_input_raises_decode_error_with_a_message(data, message):
    with pytest.raises(DecodeError, match=message):
        decode(h(data))


def test_every_truncation_of_a_valid_encoding_is_a_decode_error():
    values = [
        [UInt(300), "text", Symbol("s"), {Symbol("k"): [1.5, None]}],
        Array("list", [[UInt(1)], []], Symbol("d")),
        Open(container_id="c", offered_capabilities=["a"], properties={"p": b"x"}),
        Source(address="q", filter={"f": Described(Symbol("f"), "x")}),
        uuid.UUID(int=7),
    ]
    for value in values:
        data = encode(value)
        for cut in range(len(data)):
            with pytest.raises(DecodeError):
                decode(data[:cut])


def test_deep_nesting_is_a_decode_error_not_a_recursion_error():
    depth = 5000
    # list32 inside list32...: each level 9 octets (code, size, count) around the next.
    levels = (
        h("d0") + (9 * (depth - i) - 4).to_bytes(4, "big") + h("00 00 00 01") for i in range(depth)
    )
    data = b"".join(levels)
    with pytest.raises(DecodeError, match="nested too deeply"):
        decode(data + h("40"))
