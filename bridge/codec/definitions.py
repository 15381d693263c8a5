"""The spec's composite and restricted types as the codec uses them: the classes (generated from
the XML into spec_classes.py by generate.py, and re-exported here) get their field writers and
readers, and are registered with the decoder.

Every ``<type class="composite">`` becomes a class named in CamelCase (``sasl-init`` ->
``SaslInit``) with its fields as snake_case attributes (``max-frame-size`` ->
``max_frame_size``), built by keyword: ``Open(container_id="c", channel_max=7)``. A field left
out (or None) means its default from the XML; fields equal to their default go on the wire as
null, and trailing nulls are dropped. Fields are encoded as their declared type (a plain int
given for a ushort field is a ushort; a list given for a ``multiple`` field is an array of that
type; a str key in a ``fields`` map is a symbol). Decoding fills in defaults, turns ``multiple``
fields into lists, and refuses missing mandatory fields and values of the wrong type.

The described restricted types (the message sections: ``Data``, ``AmqpValue``,
``ApplicationProperties``...) are classes holding ``.value``. Restricted types with choices get
their values as tables (``CHOICES["sender-settle-mode"]["mixed"]``), as small name spaces
(``SenderSettleMode.MIXED``, ``Role.RECEIVER``), and error conditions as module constants named
after the symbol (``amqp:connection:framing-error`` -> ``CONNECTION_FRAMING_ERROR``)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from . import spec_classes
from .decoder import register_described
from .encoder import TYPED_ENCODERS, encode_array_into, encode_keyed_map, write_value
from .scalars import binary_head
from .spec_classes import *  # noqa: F403 (the generated names, re-exported)
from .spec_classes import (
    COMPOSITES,
    RESTRICTED_SOURCES,
    SECTION_TYPES,
    Data,
)
from .spec_names import camel, condition_constant, resolve_restricted, restricted_chain, snake
from .values import (
    Array,
    Byte,
    Char,
    Composite,
    Decimal32,
    Decimal64,
    Decimal128,
    DecodeError,
    EncodeError,
    FieldSpec,
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

# A field's encoder: the value and the buffer to append to.
FieldEncoder = Callable[[Any, bytearray], None]


# ---------------------------------------------------------------------- type resolution
# Maps whose keys the spec restricts to symbols (or symbols and ulongs, for annotations).
_KEYED_MAPS = frozenset(("fields", "annotations", "filter-set"))

# Exact Python types a decoded value of each primitive type has.
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "ubyte": (UByte,),
    "ushort": (UShort,),
    "uint": (UInt,),
    "ulong": (ULong,),
    "byte": (Byte,),
    "short": (Short,),
    "int": (Int,),
    "long": (Long,),
    "float": (Float32,),
    "double": (float,),
    "decimal32": (Decimal32,),
    "decimal64": (Decimal64,),
    "decimal128": (Decimal128,),
    "char": (Char,),
    "timestamp": (Timestamp,),
    "uuid": (uuid.UUID,),
    "binary": (bytes,),
    "string": (str,),
    "symbol": (Symbol,),
    "list": (list,),
    "map": (dict,),
    "array": (Array,),
}


def resolve(type_name: str) -> str:
    """The primitive type behind a restricted type (``delivery-number`` -> ``uint``), a
    composite's own name, or ``*``."""
    return resolve_restricted(type_name, RESTRICTED_SOURCES)


def _is_keyed_map(type_name: str) -> bool:
    return any(name in _KEYED_MAPS for name in restricted_chain(type_name, RESTRICTED_SOURCES))


# ---------------------------------------------------------------------- field encoders
def _field_encoder(field_def: FieldSpec) -> FieldEncoder:
    primitive = resolve(field_def.type)
    single: FieldEncoder
    if _is_keyed_map(field_def.type):
        single = _keyed_map
    else:
        single = TYPED_ENCODERS.get(primitive, write_value)
    if not field_def.multiple:
        return single

    def encode_multiple(value: Any, out: bytearray) -> None:
        if type(value) is Array:
            write_value(value, out)
        elif isinstance(value, (list, tuple)):
            encode_array_into(primitive, value, out)
        else:
            single(value, out)

    return encode_multiple


def _keyed_map(value: Any, out: bytearray) -> None:
    if not isinstance(value, Mapping):
        raise EncodeError(f"map given {type(value).__name__}: {value!r}")
    encode_keyed_map(value, out)


_ENCODE_FAILURES = (TypeError, ValueError, OverflowError, AttributeError, struct.error)


def _writer(cls: type[Composite]) -> Callable[[Composite, bytearray], int]:
    """The class's _write_fields: the field values in order, trailing nulls dropped."""
    attrs = cls.ATTRS
    defaults = cls.DEFAULTS
    get_all: Callable[[Any], tuple[Any, ...]]
    if len(attrs) > 1:
        get_all = attrgetter(*attrs)
    elif attrs:
        get_one = attrgetter(attrs[0])

        def get_all(obj: Any) -> tuple[Any, ...]:
            return (get_one(obj),)
    else:

        def get_all(obj: Any) -> tuple[Any, ...]:
            return ()

    plan = tuple((i, _field_encoder(f), defaults[i]) for i, f in enumerate(cls.FIELDS))
    mandatory = tuple(i for i, f in enumerate(cls.FIELDS) if f.mandatory)
    name = cls.__name__

    def write_fields(self: Composite, out: bytearray) -> int:
        values = get_all(self)
        for i in mandatory:
            if values[i] is None:
                raise EncodeError(f"{name}.{attrs[i]} is mandatory")
        count = len(values)
        while count:
            value = values[count - 1]
            default = defaults[count - 1]
            if value is None or (default is not None and value == default):
                count -= 1
            else:
                break
        i = 0
        try:
            for i, encoder, default in plan[:count]:
                value = values[i]
                if value is None or (default is not None and value == default):
                    out.append(0x40)
                else:
                    encoder(value, out)
        except EncodeError as exc:
            raise EncodeError(f"{name}.{attrs[i]}: {exc}") from exc
        except _ENCODE_FAILURES as exc:
            raise EncodeError(f"{name}.{attrs[i]}: {exc}") from exc
        return count

    return write_fields


# ---------------------------------------------------------------------- field readers
def _allowed(type_name: str) -> tuple[type, ...] | None:
    """Exact Python types a decoded field of `type_name` may have; None when any will do."""
    primitive = resolve(type_name)
    if primitive in _PYTHON_TYPES:
        return _PYTHON_TYPES[primitive]
    if primitive in COMPOSITES:
        return (COMPOSITES[primitive],)
    return None


_BUILTIN_KINDS = {
    type(None): "null",
    bool: "boolean",
    float: "double",
    str: "string",
    bytes: "binary",
    list: "list",
    dict: "map",
    uuid.UUID: "uuid",
}


def _kind(value: Any) -> str:
    """The AMQP type of a decoded value, for error messages."""
    kind = type(value)
    return _BUILTIN_KINDS.get(kind) or getattr(kind, "AMQP_TYPE", None) or kind.__name__


def _reader(cls: type[Composite]) -> Callable[[Any], Any]:
    """The class's _from_value: a decoded list to an instance, checking each field."""
    name = cls.__name__
    plan = tuple(
        (
            cls.__dict__[attr].__set__,  # the slot
            _allowed(f.type),
            default,
            f.mandatory,
            f.multiple,
            f"{name}.{attr}",
        )
        for f, attr, default in zip(cls.FIELDS, cls.ATTRS, cls.DEFAULTS, strict=True)
    )
    width = len(plan)
    # The fields after the first n items a peer sent (peers leave trailing nulls out): their
    # defaults, and the first of them that is mandatory, by n.
    tails = tuple(
        (
            next((label for _, _, _, mandatory, _, label in plan[n:] if mandatory), None),
            tuple((set_field, default) for set_field, _, default, _, _, _ in plan[n:]),
        )
        for n in range(width + 1)
    )
    new = object.__new__

    def from_value(value: Any) -> Any:
        if type(value) is not list:
            raise DecodeError(f"{name} described {_kind(value)}, expected a list")
        obj = new(cls)
        for (set_field, allowed, default, mandatory, multiple, label), item in zip(
            plan, value, strict=False
        ):
            if item is None:
                if mandatory:
                    raise DecodeError(f"{label} is mandatory")
                item = default
            elif multiple:
                item = _as_list(item, allowed, label)
            elif allowed is not None and type(item) not in allowed:
                raise DecodeError(f"{label} is {_kind(item)}: {item!r}")
            set_field(obj, item)
        if len(value) < width:
            missing, defaults = tails[len(value)]
            if missing is not None:
                raise DecodeError(f"{missing} is mandatory")
            for set_field, default in defaults:
                set_field(obj, default)
        return obj

    return from_value


def _as_list(value: Any, allowed: tuple[type, ...] | None, label: str) -> list[Any]:
    """A ``multiple`` field: an array (or list) of values, or one value."""
    items = list(value) if isinstance(value, list) else [value]
    if allowed is not None:
        for item in items:
            if type(item) not in allowed:
                raise DecodeError(f"{label} holds {_kind(item)}: {item!r}")
    return items


# ---------------------------------------------------------------------- classes
def _bind_composite(cls: type[Composite]) -> None:
    """Attach the field writer and reader (after every class exists: a field may be of another
    composite type, like error) and register the class with the decoder."""
    # The writer and reader are closures built from the generated field table, attached here
    # over the base class's placeholder methods (hence the ignores: mypy sees a method reassigned,
    # with a closure or a staticmethod where it declared a method).
    cls._write_fields = _writer(cls)  # type: ignore[method-assign, assignment]
    from_value = _reader(cls)
    cls._from_value = staticmethod(from_value)  # type: ignore[method-assign, assignment]
    register_described(cls.DESCRIPTOR, cls.DESCRIPTOR_NAME, from_value)


def _bind_section(cls: type[Restricted]) -> None:
    """A described restricted type (a message section): one value of the source type."""
    source = cls.SOURCE
    encode_value: FieldEncoder
    if _is_keyed_map(cls.AMQP_NAME):
        encode_value = _keyed_map
    else:
        encode_value = TYPED_ENCODERS.get(source, write_value)
    cls._encode_value = staticmethod(encode_value)  # type: ignore[method-assign, assignment]
    allowed = _PYTHON_TYPES.get(source)
    name = cls.__name__

    def from_value(value: Any) -> Any:
        if allowed is not None and value is not None and type(value) not in allowed:
            raise DecodeError(f"{name} holds {_kind(value)}, expected {source}")
        # Every generated section class takes its value (the Restricted base declares no
        # __init__ of its own).
        return cls(value)  # type: ignore[call-arg]

    cls._from_value = staticmethod(from_value)  # type: ignore[method-assign]
    register_described(cls.DESCRIPTOR, cls.DESCRIPTOR_NAME, from_value)


for _composite in COMPOSITES.values():
    _bind_composite(_composite)
for _section in SECTION_TYPES.values():
    _bind_section(_section)


def data_section_head(size: int) -> bytes:
    """The bytes of a data section before its value of `size` bytes: a message body goes out
    after them as it is, without a copy into an encoder's buffer first."""
    return Data._PREFIX + binary_head(size)


# Every generated class by XML name, and by descriptor code.
CLASSES: dict[str, type[Composite] | type[Restricted]] = {**COMPOSITES, **SECTION_TYPES}
BY_DESCRIPTOR: dict[int, type[Composite] | type[Restricted]] = {
    int(cls.DESCRIPTOR): cls for cls in CLASSES.values()
}


def providers(archetype: str) -> tuple[type[Composite] | type[Restricted], ...]:
    """The classes that provide `archetype` (``frame``, ``sasl-frame``, ``outcome``...)."""
    return tuple(cls for cls in CLASSES.values() if archetype in cls.PROVIDES)


PERFORMATIVES = providers("frame")
SASL_FRAMES = providers("sasl-frame")
SECTIONS = providers("section")
DELIVERY_STATES = providers("delivery-state")
OUTCOMES = providers("outcome")

# This module's names, then every generated one (the classes, choices, conditions, tables).
__all__ = [
    "BY_DESCRIPTOR",
    "CLASSES",
    "DELIVERY_STATES",
    "OUTCOMES",
    "PERFORMATIVES",
    "SASL_FRAMES",
    "SECTIONS",
    "FieldSpec",
    "camel",
    "condition_constant",
    "data_section_head",
    "providers",
    "resolve",
    "snake",
]
__all__ += spec_classes.__all__
