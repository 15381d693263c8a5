"""Hypothesis strategies over the codec's Python types, and an equality that also compares AMQP
types (``UInt(1) == Long(1)`` in Python, but a round trip must keep the uint a uint)."""

from __future__ import annotations

import math
import string
import uuid
from typing import Any

from hypothesis import strategies as st
from rabbitish.bridge.codec import definitions
from rabbitish.bridge.codec.types import (
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float32,
    Int,
    Long,
    Restricted,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, Array):
        return (
            a.element_type == b.element_type
            and same(a.descriptor, b.descriptor)
            and len(a) == len(b)
            and all(map(same, a, b))
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, Described):
        return same(a.descriptor, b.descriptor) and same(a.value, b.value)
    if isinstance(a, Composite):
        return all(same(getattr(a, attr), getattr(b, attr)) for attr in a.ATTRS)
    if isinstance(a, Restricted):
        return same(a.value, b.value)
    return a == b


def _ints(cls: type) -> st.SearchStrategy:
    return st.integers(cls.MIN, cls.MAX).map(cls)


def _near_boundaries(cls: type) -> st.SearchStrategy:
    """Mostly small values (where the encoding width changes), sometimes any."""
    small = st.integers(max(cls.MIN, -300), min(cls.MAX, 300)).map(cls)
    return st.one_of(small, _ints(cls))


SYMBOLS = st.text(string.ascii_letters + string.digits + ":-._", max_size=20).map(Symbol)
LONG_TEXT = st.text(max_size=300)

# Strategy for each primitive type, producing the Python type the decoder gives back.
PRIMITIVES: dict[str, st.SearchStrategy] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "ubyte": _ints(UByte),
    "ushort": _ints(UShort),
    "uint": _near_boundaries(UInt),
    "ulong": _near_boundaries(ULong),
    "byte": _ints(Byte),
    "short": _ints(Short),
    "int": _near_boundaries(Int),
    "long": _near_boundaries(Long),
    "float": st.floats(width=32).map(Float32),
    "double": st.floats(),
    "decimal32": st.binary(min_size=4, max_size=4).map(Decimal32),
    "decimal64": st.binary(min_size=8, max_size=8).map(Decimal64),
    "decimal128": st.binary(min_size=16, max_size=16).map(Decimal128),
    "char": st.characters(exclude_categories=("Cs",)).map(Char),
    "timestamp": _near_boundaries(Timestamp),
    "uuid": st.uuids(),
    "binary": st.one_of(st.binary(max_size=20), st.binary(min_size=250, max_size=300)),
    "string": st.one_of(st.text(max_size=20), LONG_TEXT),
    "symbol": st.one_of(SYMBOLS, LONG_TEXT.filter(str.isascii).map(Symbol)),
}
SCALARS = st.one_of(*PRIMITIVES.values())
HASHABLE = st.one_of(*(s for name, s in PRIMITIVES.items() if name != "null"))

_KNOWN_NAMES = {str(cls.DESCRIPTOR_NAME) for cls in definitions.CLASSES.values()}
_KNOWN_CODES = set(definitions.BY_DESCRIPTOR)
UNKNOWN_DESCRIPTORS = st.one_of(
    SYMBOLS.filter(lambda s: s not in _KNOWN_NAMES),
    _near_boundaries(ULong).filter(lambda c: c not in _KNOWN_CODES),
    st.one_of(PRIMITIVES["string"], PRIMITIVES["long"]),  # any value may describe
)


def _array_of(element_type: str, children: st.SearchStrategy) -> st.SearchStrategy:
    if element_type == "null":
        elements = st.lists(st.none(), max_size=16)
    elif element_type == "list":
        elements = st.lists(st.lists(children, max_size=4), max_size=4)
    elif element_type == "map":
        elements = st.lists(st.dictionaries(HASHABLE, children, max_size=3), max_size=4)
    elif element_type == "array":
        elements = st.lists(arrays(children), max_size=3)
    else:
        elements = st.lists(PRIMITIVES[element_type], max_size=8)
    return elements.map(lambda items: Array(element_type, items))


ELEMENT_TYPES = (*PRIMITIVES, "list", "map", "array")


def arrays(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.sampled_from(ELEMENT_TYPES).flatmap(lambda t: _array_of(t, children))


def described_arrays(children: st.SearchStrategy) -> st.SearchStrategy:
    """An array whose elements share a descriptor: each decodes as a Described."""

    def build(descriptor: Any, plain: Array) -> Array:
        items = [Described(descriptor, item) for item in plain]
        return Array(plain.element_type, items, descriptor)

    return st.builds(build, UNKNOWN_DESCRIPTORS, arrays(children))


def _compounds(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(HASHABLE, children, max_size=6),
        arrays(children),
        described_arrays(children),
        st.builds(Described, UNKNOWN_DESCRIPTORS, children),
    )


VALUES = st.recursive(SCALARS, _compounds, max_leaves=25)


# ---------------------------------------------------------------------- composites
def for_field(field: definitions.FieldSpec) -> st.SearchStrategy:
    """A non-null value a decoder gives back for this field."""
    primitive = definitions.resolve(field.type)
    if primitive in PRIMITIVES:
        single = PRIMITIVES[primitive]
        if primitive == "symbol":
            single = SYMBOLS
    elif primitive in ("map",):
        keys = SYMBOLS if definitions.resolve(field.type) != field.type else HASHABLE
        single = st.dictionaries(keys, SCALARS, max_size=3)
    elif primitive in definitions.COMPOSITES:
        single = composites(definitions.COMPOSITES[primitive])
    else:  # "*": any value but null (null is the field left out)
        single = HASHABLE
    if field.multiple:
        return st.lists(single, max_size=3)
    return single


def composites(cls: type) -> st.SearchStrategy:
    """An instance with every field set."""
    return st.fixed_dictionaries(
        {attr: for_field(spec) for attr, spec in zip(cls.ATTRS, cls.FIELDS, strict=True)}
    ).map(lambda fields: cls(**fields))


def sections(cls: type) -> st.SearchStrategy:
    """An instance of a described restricted type (a message section) holding a fitting value."""
    source = cls.SOURCE
    if source == "binary":
        return PRIMITIVES["binary"].map(cls)
    if source == "list":
        return st.lists(VALUES, max_size=4).map(cls)
    if source == "map":
        string_keys = cls.AMQP_NAME == "application-properties"
        keys = PRIMITIVES["string"] if string_keys else SYMBOLS
        return st.dictionaries(keys, SCALARS, max_size=4).map(cls)
    return VALUES.map(cls)


def instances(cls: type) -> st.SearchStrategy:
    """Any spec class, fully populated."""
    if issubclass(cls, Composite):
        return composites(cls)
    return sections(cls)


# One fixed value per primitive type, for deterministic fully-populated instances.
SAMPLES: dict[str, Any] = {
    "null": None,
    "boolean": True,
    "ubyte": UByte(1),
    "ushort": UShort(2),
    "uint": UInt(300),
    "ulong": ULong(2**40),
    "byte": Byte(-1),
    "short": Short(-2),
    "int": Int(-3),
    "long": Long(-4),
    "float": Float32(0.5),
    "double": 0.25,
    "decimal32": Decimal32(b"\x01\x02\x03\x04"),
    "decimal64": Decimal64(bytes(range(8))),
    "decimal128": Decimal128(bytes(range(16))),
    "char": Char("c"),
    "timestamp": Timestamp(1_700_000_000_000),
    "uuid": uuid.UUID(int=5),
    "binary": b"\x00bin",
    "string": "string \u00e9",
    "symbol": Symbol("sym"),
}


def filled(cls: type) -> Any:
    """A deterministic instance with every field (or the value) set."""
    if issubclass(cls, Restricted):
        source = {"binary": b"data", "list": [UInt(1), "two"], "map": {Symbol("k"): "v"}}
        if cls.AMQP_NAME == "application-properties":
            return cls({"k": Long(1)})
        return cls(source.get(cls.SOURCE, [Symbol("any"), None]))
    values = {}
    for attr, spec in zip(cls.ATTRS, cls.FIELDS, strict=True):
        primitive = definitions.resolve(spec.type)
        if primitive in SAMPLES:
            value: Any = SAMPLES[primitive]
        elif primitive == "map":
            value = {Symbol("key"): Long(7)}
        elif primitive in definitions.COMPOSITES:
            value = filled(definitions.COMPOSITES[primitive])
        else:
            value = Described(Symbol("x-any"), "value")
        values[attr] = [value, value] if spec.multiple else value
    return cls(**values)
