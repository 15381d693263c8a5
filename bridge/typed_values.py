"""AMQP 1.0 values <-> 0-9-1 field values (engine FieldValues), types kept where both sides
have them: application-properties become headers of the closest 0-9-1 type, and headers come
back as the 1.0 type of the same width and sign. 0-9-1 has no ulong, symbol, char, uuid,
millisecond timestamp or IEEE decimal: those take the nearest type and `same` tells the message
mapping when a value did not survive, so it can keep the exact 1.0 encoding beside it."""

from __future__ import annotations

import decimal
import uuid
from typing import Any

from rabbitish.bridge.codec import (
    Array,
    Byte,
    Decimal32,
    Decimal64,
    Decimal128,
    Float32,
    Int,
    Long,
    Short,
    Timestamp,
    UByte,
    UInt,
    UShort,
)

from rabbitish.engine.message import FieldValue

_INT_KINDS: dict[type, str] = {
    UByte: "unsignedbyte",
    UShort: "unsignedshort",
    UInt: "unsignedint",
    Byte: "byte",
    Short: "short",
    Int: "signedint",
    Long: "long",
}
_INT_CLASSES: dict[str, type] = {kind: cls for cls, kind in _INT_KINDS.items()}
# IEEE 754-2008 decimals in the binary integer encoding: exponent bits and bias per width.
_BID = {Decimal32: (8, 101), Decimal64: (10, 398), Decimal128: (14, 6176)}
_INT32 = 1 << 31


def to_field(value: Any) -> FieldValue:
    """The closest 0-9-1 field value for a 1.0 value."""
    if value is None:
        return FieldValue("void", None)
    if isinstance(value, bool):
        return FieldValue("bool", value)
    if isinstance(value, Timestamp):
        return FieldValue("timestamp", value // 1000) if value >= 0 else _text(value)
    kind = _INT_KINDS.get(type(value))
    if kind is not None:
        return FieldValue(kind, int(value))
    if isinstance(value, int):  # ulong, or a plain int (a long)
        return FieldValue("long", int(value)) if Long.MIN <= value <= Long.MAX else _text(value)
    if isinstance(value, Float32):
        return FieldValue("float", float(value))
    if isinstance(value, float):
        return FieldValue("double", value)
    if isinstance(value, (Decimal32, Decimal64, Decimal128)):
        number = bid_to_decimal(value)
        return FieldValue("decimal", number) if _fits_091(number) else _text(number)
    if isinstance(value, str):  # string, symbol, char
        return FieldValue("longstr", value.encode())
    if isinstance(value, bytes):
        return FieldValue("binary", value)
    if isinstance(value, dict):
        return FieldValue("table", {str(k): to_field(v) for k, v in value.items()})
    if isinstance(value, list):
        return FieldValue("array", [to_field(v) for v in value])
    return _text(value)  # uuid, described values


def _text(value: Any) -> FieldValue:
    return FieldValue("longstr", str(value).encode())


def _fits_091(number: decimal.Decimal | None) -> bool:
    """0-9-1's decimal holds up to 255 digits after the point on a signed 32-bit integer."""
    if number is None or not number.is_finite():
        return False
    scale = max(0, -int(number.as_tuple().exponent))
    return scale <= 255 and -_INT32 <= int(number.scaleb(scale)) < _INT32


def from_field(field: FieldValue) -> Any:
    """The 1.0 value of the same type for a 0-9-1 field value."""
    kind, value = field.kind, field.value
    cls = _INT_CLASSES.get(kind)
    if cls is not None:
        return cls(value)
    if kind == "float":
        return Float32(value)
    if kind == "decimal":
        return decimal_to_bid64(value)
    if kind == "timestamp":
        return Timestamp(value * 1000)
    if kind == "longstr":
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    if kind == "table":
        return {k: from_field(v) for k, v in value.items()}
    if kind == "array":
        return [from_field(v) for v in value]
    return value  # bool, double, binary, void


def bid_to_decimal(raw: Decimal32 | Decimal64 | Decimal128) -> decimal.Decimal | None:
    """The number in an IEEE decimal32/64/128 (binary integer encoding); None for infinities
    and NaNs."""
    exp_bits, bias = _BID[type(raw)]
    width = len(raw) * 8
    bits = int.from_bytes(raw, "big")
    if (bits >> (width - 3)) & 3 == 3:
        if (bits >> (width - 5)) & 15 == 15:
            return None
        low = width - 3 - exp_bits
        coefficient = (4 << low) | (bits & ((1 << low) - 1))
    else:
        low = width - 1 - exp_bits
        coefficient = bits & ((1 << low) - 1)
    exponent = ((bits >> low) & ((1 << exp_bits) - 1)) - bias
    digits = tuple(int(d) for d in str(coefficient))
    return decimal.Decimal((bits >> (width - 1), digits, exponent))


def decimal_to_bid64(number: decimal.Decimal) -> Decimal64:
    """A 0-9-1 decimal (at most ten digits, exponent 0 to -255) as an IEEE decimal64."""
    sign, digits, exponent = number.as_tuple()
    coefficient = int("".join(map(str, digits)) or "0")
    bits = (sign << 63) | ((int(exponent) + 398) << 53) | coefficient
    return Decimal64(bits.to_bytes(8, "big"))


def type_name(value: Any) -> str:
    """The 1.0 type a decoded value has (a plain int is a long, a plain float a double)."""
    if isinstance(value, Array):
        return f"array:{value.element_type}"
    named: str | None = getattr(type(value), "AMQP_TYPE", None)
    if named is not None:
        return named
    for cls, name in _PLAIN_TYPES:
        if isinstance(value, cls):
            return name
    return type(value).__name__


_PLAIN_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "long"),
    (float, "double"),
    (str, "string"),
    (bytes, "binary"),
    (type(None), "null"),
    (dict, "map"),
    (list, "list"),
    (uuid.UUID, "uuid"),
)


def same(a: Any, b: Any) -> bool:
    """Equal in value and in 1.0 type, all the way down."""
    if a is b:
        return True  # the common case of two absent fields, checked for every message
    if type_name(a) != type_name(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
