"""Python representations of the AMQP 1.0 primitive types.

An AMQP value keeps its wire type across a decode and a re-encode: a uint stays a uint, not a
plain int that would come back as a long. Types Python has natively map to themselves (null,
boolean, double, uuid, binary, string, list, map); the others are thin subclasses of the closest
builtin, so they compare and hash like it (``UInt(5) == 5``)."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Self, SupportsIndex


class DecodeError(Exception):
    """Malformed AMQP data; a connection answers it with amqp:decode-error."""


class EncodeError(ValueError):
    """A value with no AMQP encoding: out of range, or the wrong kind for its field."""


class _FixedInt(int):
    """An int with an AMQP width; the range is checked on construction, so a bad value fails
    where it is made, not when a frame is written."""

    __slots__ = ()
    AMQP_TYPE: ClassVar[str]
    MIN: ClassVar[int]
    MAX: ClassVar[int]

    def __new__(cls, value: SupportsIndex = 0) -> Self:
        self = int.__new__(cls, operator.index(value))
        if not cls.MIN <= self <= cls.MAX:
            raise ValueError(f"{cls.__name__} out of range: {int(self)}")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int.__repr__(self)})"

    __str__ = int.__repr__


class UByte(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "ubyte", 0, 0xFF


class UShort(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "ushort", 0, 0xFFFF


class UInt(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "uint", 0, 0xFFFF_FFFF


class ULong(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "ulong", 0, 0xFFFF_FFFF_FFFF_FFFF


class Byte(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "byte", -0x80, 0x7F


class Short(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "short", -0x8000, 0x7FFF


class Int(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "int", -0x8000_0000, 0x7FFF_FFFF


class Long(_FixedInt):
    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "long", -0x8000_0000_0000_0000, 0x7FFF_FFFF_FFFF_FFFF


class Timestamp(_FixedInt):
    """Milliseconds since the Unix epoch (signed 64 bits)."""

    __slots__ = ()
    AMQP_TYPE, MIN, MAX = "timestamp", Long.MIN, Long.MAX


class Float32(float):
    """An IEEE 754 single; a plain float is a double."""

    __slots__ = ()
    AMQP_TYPE: ClassVar[str] = "float"

    def __repr__(self) -> str:
        return f"Float32({float.__repr__(self)})"

    __str__ = float.__repr__


class _RawDecimal(bytes):
    """IEEE 754 decimal bits, kept raw: Python has no decimal32/64/128 and nothing here does
    arithmetic on them."""

    __slots__ = ()
    AMQP_TYPE: ClassVar[str]
    WIDTH: ClassVar[int]

    def __new__(cls, value: bytes) -> Self:
        self = bytes.__new__(cls, value)
        if len(self) != cls.WIDTH:
            raise ValueError(f"{cls.__name__} takes {cls.WIDTH} bytes, not {len(self)}")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({bytes.__repr__(self)})"


class Decimal32(_RawDecimal):
    __slots__ = ()
    AMQP_TYPE, WIDTH = "decimal32", 4


class Decimal64(_RawDecimal):
    __slots__ = ()
    AMQP_TYPE, WIDTH = "decimal64", 8


class Decimal128(_RawDecimal):
    __slots__ = ()
    AMQP_TYPE, WIDTH = "decimal128", 16


class Char(str):
    """One Unicode code point (UTF-32 on the wire)."""

    __slots__ = ()
    AMQP_TYPE: ClassVar[str] = "char"

    def __new__(cls, value: str) -> Self:
        self = str.__new__(cls, value)
        if len(self) != 1:
            raise ValueError(f"Char takes one code point, not {len(self)}")
        return self

    def __repr__(self) -> str:
        return f"Char({str.__repr__(self)})"


class Symbol(str):
    """A name from a constrained domain (ASCII by the spec); distinct from a string on the wire."""

    __slots__ = ()
    AMQP_TYPE: ClassVar[str] = "symbol"

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


# Element types an Array may declare (the primitive type names of the spec, null included).
ARRAY_ELEMENT_TYPES = frozenset(
    (
        *("null", "boolean", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int"),
        *("long", "float", "double", "decimal32", "decimal64", "decimal128", "char"),
        *("timestamp", "uuid", "binary", "string", "symbol", "list", "map", "array"),
    )
)


# Element types whose Python class a plain value is converted to when an Array is built.
_ELEMENT_CLASSES: dict[str, type] = {
    cls.AMQP_TYPE: cls
    for cls in (UByte, UShort, UInt, ULong, Byte, Short, Int, Long, Timestamp, Float32, Char)
}
_ELEMENT_CLASSES.update(
    {"symbol": Symbol, "decimal32": Decimal32, "decimal64": Decimal64, "decimal128": Decimal128}
)


class Array(list[Any]):
    """An AMQP array: every element has the same type (and descriptor, if any), which a plain
    list cannot say. Built from plain values, the elements take the element type's class
    (``Array("uint", [1])[0]`` is a UInt). Equal to another Array only with the same element
    type and descriptor; equal to a plain list with the same items."""

    __slots__ = ("descriptor", "element_type")

    def __init__(self, element_type: str, items: Any = (), descriptor: Any = None) -> None:
        if element_type not in ARRAY_ELEMENT_TYPES:
            raise ValueError(f"not an AMQP array element type: {element_type!r}")
        cls = _ELEMENT_CLASSES.get(element_type)
        if cls is not None and descriptor is None:
            items = [item if type(item) is cls else cls(item) for item in items]
        super().__init__(items)
        self.element_type = element_type
        self.descriptor = descriptor

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Array) and (
            other.element_type != self.element_type or other.descriptor != self.descriptor
        ):
            return False
        return list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        described = "" if self.descriptor is None else f", descriptor={self.descriptor!r}"
        return f"Array({self.element_type!r}, {list.__repr__(self)}{described})"


@dataclass(frozen=True, slots=True)
class Described:
    """A described value whose descriptor is not one of the spec's types (those decode into
    their classes)."""

    descriptor: Any
    value: Any


class FieldSpec(NamedTuple):
    """One field of a composite, as the XML declares it (name and type as spelled there)."""

    name: str
    type: str
    multiple: bool
    mandatory: bool
    requires: str | None


class Composite:
    """Base of the spec's composite types (a described list of fields); the subclasses and their
    field tables are generated from the XML into spec_classes.py."""

    __slots__ = ()
    DESCRIPTOR: ClassVar[ULong]
    DESCRIPTOR_NAME: ClassVar[Symbol]
    AMQP_NAME: ClassVar[str]
    PROVIDES: ClassVar[frozenset[str]]
    FIELDS: ClassVar[tuple[FieldSpec, ...]]
    ATTRS: ClassVar[tuple[str, ...]]
    DEFAULTS: ClassVar[tuple[Any, ...]]
    # The descriptor as written on the wire (00 53 code), generated; the per-class field writer
    # and reader are attached by definitions.py.
    _PREFIX: ClassVar[bytes]

    def _write_fields(self, out: bytearray) -> int:
        """Append the encoded fields (trailing nulls dropped) and return how many there were."""
        raise NotImplementedError

    @classmethod
    def _from_value(cls, value: Any) -> Any:
        """The instance for a decoded described value; DecodeError when it does not fit."""
        raise NotImplementedError

    def __repr__(self) -> str:
        """Only the fields that say something: not null, not the default."""
        kind = type(self)
        shown = []
        for attr, default in zip(kind.ATTRS, kind.DEFAULTS, strict=True):
            value = getattr(self, attr)
            if value is not None and (default is None or value != default):
                shown.append(f"{attr}={value!r}")
        return f"{kind.__name__}({', '.join(shown)})"


class Restricted:
    """Base of the described restricted types (the message sections): one value with a
    descriptor, the value encoded as the type's source."""

    __slots__ = ()
    DESCRIPTOR: ClassVar[ULong]
    DESCRIPTOR_NAME: ClassVar[Symbol]
    AMQP_NAME: ClassVar[str]
    PROVIDES: ClassVar[frozenset[str]]
    SOURCE: ClassVar[str]
    _PREFIX: ClassVar[bytes]
    value: Any

    @staticmethod
    def _encode_value(value: Any, out: bytearray) -> None:
        raise NotImplementedError

    @classmethod
    def _from_value(cls, value: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"
