"""The AMQP 1.0 type system in one name space: the Python representation of each primitive type
(values.py), the encoder (encoder.py) and the decoder (decoder.py).

    null=None  boolean=bool  ubyte/ushort/uint/ulong=UByte/UShort/UInt/ULong
    byte/short/int/long=Byte/Short/Int/Long (a plain int is a long)  float=Float32
    double=float  decimal32/64/128=Decimal32/64/128 (raw bits)  char=Char
    timestamp=Timestamp (ms)  uuid=uuid.UUID  binary=bytes  string=str  symbol=Symbol
    list=list  map=dict  array=Array  described=Described (or a class of definitions.py)
"""

from __future__ import annotations

from .decoder import (
    ELEMENT_TYPES,
    decode,
    decode_all,
    described,
    register_described,
    value_end,
)
from .encoder import (
    TYPED_ENCODERS,
    encode,
    encode_array_into,
    encode_as,
    encode_into,
    encode_keyed_map,
)
from .values import (
    ARRAY_ELEMENT_TYPES,
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
    Described,
    EncodeError,
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

__all__ = [
    "ARRAY_ELEMENT_TYPES",
    "ELEMENT_TYPES",
    "TYPED_ENCODERS",
    "Array",
    "Byte",
    "Char",
    "Composite",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "DecodeError",
    "Described",
    "EncodeError",
    "Float32",
    "Int",
    "Long",
    "Restricted",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
    "decode",
    "decode_all",
    "described",
    "encode",
    "encode_array_into",
    "encode_as",
    "encode_into",
    "encode_keyed_map",
    "register_described",
    "value_end",
]
