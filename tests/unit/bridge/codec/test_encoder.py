"""Encodings of every primitive type against bytes worked out by hand from the spec's types
section, including which of several encodings is chosen (always the smallest)."""

from __future__ import annotations

import enum
import uuid

import pytest
from rabbitish.bridge.codec.definitions import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Close,
    Data,
    Flow,
    MessageAnnotations,
    Open,
    Properties,
    Transfer,
)
from rabbitish.bridge.codec.types import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    EncodeError,
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
    encode,
    encode_as,
    encode_into,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text)


PRIMITIVES = [
    (None, "40"),
    (True, "41"),
    (False, "42"),
    (UByte(0), "50 00"),
    (UByte(255), "50 ff"),
    (UShort(0x1234), "60 12 34"),
    (UShort(0), "60 00 00"),
    # uint: uint0, smalluint up to 255, then four octets.
    (UInt(0), "43"),
    (UInt(1), "52 01"),
    (UInt(255), "52 ff"),
    (UInt(256), "70 00 00 01 00"),
    (UInt(0xFFFFFFFF), "70 ff ff ff ff"),
    (ULong(0), "44"),
    (ULong(255), "53 ff"),
    (ULong(256), "80 00 00 00 00 00 00 01 00"),
    (ULong(2**64 - 1), "80 ff ff ff ff ff ff ff ff"),
    (Byte(-1), "51 ff"),
    (Byte(127), "51 7f"),
    (Short(-2), "61 ff fe"),
    # int: smallint for -128..127, then four octets.
    (Int(0), "54 00"),
    (Int(127), "54 7f"),
    (Int(-128), "54 80"),
    (Int(128), "71 00 00 00 80"),
    (Int(-129), "71 ff ff ff 7f"),
    (Long(-1), "55 ff"),
    (Long(-128), "55 80"),
    (Long(128), "81 00 00 00 00 00 00 00 80"),
    (Long(-129), "81 ff ff ff ff ff ff ff 7f"),
    # A plain int is a long.
    (1, "55 01"),
    (2**63 - 1, "81 7f ff ff ff ff ff ff ff"),
    (Float32(1.5), "72 3f c0 00 00"),
    (Float32(-2.0), "72 c0 00 00 00"),
    (1.5, "82 3f f8 00 00 00 00 00 00"),
    (Decimal32(h("01 02 03 04")), "74 01 02 03 04"),
    (Decimal64(h("01 02 03 04 05 06 07 08")), "84 01 02 03 04 05 06 07 08"),
    (Decimal128(bytes(range(16))), "94 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"),
    (Char("a"), "73 00 00 00 61"),
    (Char("\u20ac"), "73 00 00 20 ac"),
    (Char("\U0001f600"), "73 00 01 f6 00"),
    (Timestamp(0x0102030405060708), "83 01 02 03 04 05 06 07 08"),
    (Timestamp(-1), "83 ff ff ff ff ff ff ff ff"),
    (
        uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"),
        "98 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff",
    ),
    (b"", "a0 00"),
    (b"\x01\x02", "a0 02 01 02"),
    (bytearray(b"\x01"), "a0 01 01"),
    (memoryview(b"\x01"), "a0 01 01"),
    ("", "a1 00"),
    ("\u00e9", "a1 02 c3 a9"),
    (Symbol(""), "a3 00"),
    (Symbol("a"), "a3 01 61"),
    ([], "45"),
    ((), "45"),
    ([None], "c0 02 01 40"),
    ([True, UInt(1)], "c0 04 02 41 52 01"),
    ({}, "c1 01 00"),
    ({Symbol("a"): 1}, "c1 06 02 a3 01 61 55 01"),
    ({"k": None}, "c1 05 02 a1 01 6b 40"),
]


@pytest.mark.parametrize(("value", "expected"), PRIMITIVES, ids=repr)
def test_primitive_encoding(value, expected):
    assert encode(value) == h(expected)


@pytest.mark.parametrize(
    ("value", "head"),
    [
        (b"x" * 255, "a0 ff"),
        (b"x" * 256, "b0 00 00 01 00"),
        ("x" * 255, "a1 ff"),
        ("x" * 256, "b1 00 00 01 00"),
        ("\u00e9" * 128, "b1 00 00 01 00"),  # 256 UTF-8 octets: the octet count decides
        (Symbol("s" * 255), "a3 ff"),
        (Symbol("s" * 300), "b3 00 00 01 2c"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)
def test_variable_width_switches_to_32_bit_lengths_past_255(value, head):
    data = value.encode() if isinstance(value, str) else value
    assert encode(value) == h(head) + data


def test_list_and_map_switch_to_32_bit_past_255():
    # list8 holds 255 octets after the size (count + items): a 252-octet binary is 254 of items.
    assert encode([b"x" * 252]) == h("c0 ff 01 a0 fc") + b"x" * 252
    assert encode([b"x" * 253]) == h("d0 00 00 01 03 00 00 00 01 a0 fd") + b"x" * 253
    # 256 items: the count no longer fits an octet.
    assert encode([None] * 256) == h("d0 00 00 01 04 00 00 01 00") + b"\x40" * 256
    many = {Long(i): None for i in range(128)}
    encoded = encode(many)
    assert encoded[:9] == h("d1") + (4 + 128 * 3).to_bytes(4, "big") + (256).to_bytes(4, "big")


ARRAYS = [
    (Array("uint", [1, 2]), "e0 04 02 52 01 02"),
    (Array("uint", [1, 256]), "e0 0a 02 70 00 00 00 01 00 00 01 00"),
    (Array("uint", []), "e0 02 00 52"),
    (Array("ulong", [0]), "e0 03 01 53 00"),
    (Array("int", [-1, 127]), "e0 04 02 54 ff 7f"),
    (Array("long", [-1, 200]), "e0 12 02 81 ff ff ff ff ff ff ff ff 00 00 00 00 00 00 00 c8"),
    (Array("ubyte", [1, 2]), "e0 04 02 50 01 02"),
    (Array("ushort", [1]), "e0 04 01 60 00 01"),
    (Array("byte", [-2]), "e0 03 01 51 fe"),
    (Array("short", [-2]), "e0 04 01 61 ff fe"),
    (Array("boolean", [True, False]), "e0 04 02 56 01 00"),
    (Array("null", [None, None]), "e0 02 02 40"),
    (Array("float", [1.5]), "e0 06 01 72 3f c0 00 00"),
    (Array("double", [1.5]), "e0 0a 01 82 3f f8 00 00 00 00 00 00"),
    (Array("char", ["a"]), "e0 06 01 73 00 00 00 61"),
    (Array("timestamp", [1]), "e0 0a 01 83 00 00 00 00 00 00 00 01"),
    (Array("decimal32", [Decimal32(h("01 02 03 04"))]), "e0 06 01 74 01 02 03 04"),
    (Array("uuid", [uuid.UUID(int=1)]), "e0 12 01 98" + " 00" * 15 + " 01"),
    (Array("binary", [b"a", b""]), "e0 05 02 a0 01 61 00"),
    (Array("string", ["a", "bc"]), "e0 07 02 a1 01 61 02 62 63"),
    (Array("symbol", ["a", "b"]), "e0 06 02 a3 01 61 01 62"),
    (Array("symbol", []), "e0 02 00 a3"),
    # Compound elements: size, count, items, without a constructor of their own.
    (Array("list", [[], [UInt(1)]]), "e0 08 02 c0 01 00 03 01 52 01"),
    (Array("map", [{}]), "e0 04 01 c1 01 00"),
    (Array("array", [Array("ubyte", [1])]), "e0 06 01 e0 03 01 50 01"),
    # A described element constructor: 00, the descriptor, then the primitive code.
    (Array("symbol", [Symbol("a")], descriptor=Symbol("d")), "e0 08 01 00 a3 01 64 a3 01 61"),
    (
        Array("string", [Described(ULong(5), "a")], descriptor=ULong(5)),
        "e0 07 01 00 53 05 a1 01 61",
    ),
]


@pytest.mark.parametrize(("value", "expected"), ARRAYS, ids=repr)
def test_array_encoding(value, expected):
    assert encode(value) == h(expected)


def test_array_elements_share_the_widest_encoding_any_element_needs():
    assert encode(Array("string", ["a", "x" * 256]))[:4] == h("f0 00 00 01")
    assert encode(Array("string", ["a", "x" * 256]))[9] == 0xB1
    long_list = [b"x" * 300]
    assert encode(Array("list", [[], long_list]))[9] == 0xD0  # list32 for both elements


def test_array_of_256_elements_is_array32():
    assert encode(Array("uint", [1] * 256)) == h("f0 00 00 01 05 00 00 01 00 52") + b"\x01" * 256


def test_described_values():
    assert encode(Described(Symbol("x"), "y")) == h("00 a3 01 78 a1 01 79")
    assert encode(Described(ULong(0x1000), None)) == h("00 80 00 00 00 00 00 00 10 00 40")
    assert encode(Described(ULong(1), Described(ULong(2), None))) == h("00 53 01 00 53 02 40")


def test_composites_drop_trailing_nulls_and_fields_at_their_default():
    assert encode(Open(container_id="c")) == h("00 53 10 c0 04 01 a1 01 63")
    assert encode(Close()) == h("00 53 18 45")
    assert encode(Transfer(handle=0, more=False)) == h("00 53 14 c0 02 01 43")
    assert encode(Open(container_id="c", max_frame_size=0xFFFFFFFF)) == encode(
        Open(container_id="c")
    )
    # A null in the middle stays.
    assert encode(Open(container_id="c", channel_max=5)) == h(
        "00 53 10 c0 09 04 a1 01 63 40 40 60 00 05"
    )


def test_fields_are_encoded_as_their_declared_type():
    # channel-max is a ushort even given a plain int; offered-capabilities (multiple symbol)
    # takes a list as an array of symbols, or one str as a single symbol.
    assert encode(Open(container_id="c", offered_capabilities=["a"])) == h(
        "00 53 10 c0 10 08 a1 01 63 40 40 40 40 40 40 e0 04 01 a3 01 61"
    )
    assert encode(Open(container_id="c", offered_capabilities="a")) == h(
        "00 53 10 c0 0d 08 a1 01 63 40 40 40 40 40 40 a3 01 61"
    )
    # A fields map: str keys are symbols.
    assert encode(
        Flow(incoming_window=0, next_outgoing_id=0, outgoing_window=0, properties={"k": 1})
    ) == h("00 53 13 c0 13 0b 40 43 43 43 40 40 40 40 40 40 c1 06 02 a3 01 6b 55 01")
    assert encode(Properties(content_type="text")) == h(
        "00 53 73 c0 0d 07 40 40 40 40 40 40 a3 04 74 65 78 74"
    )


def test_message_sections():
    assert encode(Data(b"ab")) == h("00 53 75 a0 02 61 62")
    assert encode(AmqpValue("x")) == h("00 53 77 a1 01 78")
    assert encode(AmqpSequence([1])) == h("00 53 76 c0 03 01 55 01")
    # Application properties keep string keys; annotations make str keys symbols.
    assert encode(ApplicationProperties({"k": "v"})) == h("00 53 74 c1 07 02 a1 01 6b a1 01 76")
    assert encode(MessageAnnotations({"k": "v"})) == h("00 53 72 c1 07 02 a3 01 6b a1 01 76")


def test_encode_as_a_declared_type():
    assert encode_as("uint", 5) == h("52 05")
    assert encode_as("ushort", 5) == h("60 00 05")
    assert encode_as("symbol", "a") == h("a3 01 61")
    assert encode_as("float", 1.5) == h("72 3f c0 00 00")


@pytest.mark.parametrize(
    "cls", [UByte, UShort, UInt, ULong, Byte, Short, Int, Long, Timestamp], ids=repr
)
def test_fixed_width_integers_refuse_values_out_of_range(cls):
    with pytest.raises(ValueError):
        cls(cls.MAX + 1)
    with pytest.raises(ValueError):
        cls(cls.MIN - 1)
    assert cls(cls.MAX) == cls.MAX


def appended(array: Array, item: object) -> Array:
    """An array holding an element its constructor would have refused."""
    array.append(item)
    return array


def test_arrays_convert_plain_elements_to_the_element_type():
    assert type(Array("uint", [1])[0]) is UInt
    assert type(Array("symbol", ["a"])[0]) is Symbol
    assert type(Array("float", [1])[0]) is Float32
    with pytest.raises(ValueError):
        Array("ubyte", [256])
    with pytest.raises(ValueError):
        Array("decimal32", [b"x"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**64, "cannot encode int"),
        (-(2**63) - 1, "cannot encode int"),
        (object(), "no AMQP encoding for object"),
        ({1, 2}, "no AMQP encoding for set"),
        (Array("null", [1]), "only None"),
        (appended(Array("decimal32"), b"x"), "expected 4"),
        (appended(Array("uint"), -1), "cannot encode Array"),
        (Array("binary", ["text"]), "binary array element given str"),
        (Array("list", [5]), "list array element given int"),
        (Array("array", [[1]]), "array array element given list"),
        (Open(), "Open.container_id is mandatory"),
        (Open(container_id=5), "Open.container_id"),
        (Open(container_id="c", channel_max=70000), "Open.channel_max"),
        (Open(container_id="c", properties=[1]), "Open.properties"),
        (Data("text"), "binary given str"),
        (["ok", object()], "no AMQP encoding"),
    ],
    ids=repr,
)
def test_values_without_an_encoding_raise_encode_error(value, message):
    with pytest.raises(EncodeError, match=message):
        encode(value)


def test_encode_into_leaves_the_buffer_as_it_was_on_error():
    out = bytearray(b"keep")
    with pytest.raises(EncodeError):
        encode_into([1, 2, object()], out)
    assert out == b"keep"
    encode_into(UInt(1), out)
    assert out == b"keep\x52\x01"


def test_encode_error_is_a_value_error_and_unknown_type_names_are_refused():
    assert issubclass(EncodeError, ValueError)
    with pytest.raises(EncodeError):
        encode_as("nonsense", 1)
    with pytest.raises(ValueError):
        Array("nonsense", [])


def test_subclasses_encode_as_their_nearest_amqp_type():
    class Mode(enum.IntEnum):
        A = 1

    class Tag(Symbol):
        pass

    assert encode(Mode.A) == h("55 01")
    assert encode(Tag("a")) == h("a3 01 61")
    assert encode(Described(Symbol("x"), Mode.A)) == h("00 a3 01 78 55 01")


def test_self_containing_list_is_an_encode_error():
    loop: list = []
    loop.append(loop)
    with pytest.raises(EncodeError):
        encode(loop)
