"""The spec's composite and restricted types as Python classes, generated from the XML on import
so the field tables cannot drift from the spec.

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

import re
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import field, make_dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from . import schema
from .decoder import register_described
from .encoder import TYPED_ENCODERS, encode, encode_array_into, encode_keyed_map, write_value
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

SCHEMA = schema.load()
TYPES = SCHEMA.types


class FieldSpec(NamedTuple):
    """One field of a composite, as the XML declares it (name and type as spelled there)."""

    name: str
    type: str
    multiple: bool
    mandatory: bool
    requires: str | None


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
    seen = type_name
    while seen in TYPES and TYPES[seen].klass == "restricted":
        seen = TYPES[seen].source or "*"
    return seen


def _is_keyed_map(type_name: str) -> bool:
    while type_name in TYPES and TYPES[type_name].klass == "restricted":
        if type_name in _KEYED_MAPS:
            return True
        type_name = TYPES[type_name].source or "*"
    return False


def camel(name: str) -> str:
    """``sasl-mechanisms`` -> ``SaslMechanisms``."""
    return "".join(part.capitalize() for part in name.split("-"))


def snake(name: str) -> str:
    """``max-frame-size`` -> ``max_frame_size``."""
    return name.replace("-", "_")


def _literal(primitive: str, text: str) -> Any:
    """A value written in the XML (a default or a choice) as the Python value of `primitive`."""
    if primitive == "boolean":
        return text == "true"
    if primitive == "symbol":
        return Symbol(text)
    if primitive == "string":
        return text
    kinds = _PYTHON_TYPES[primitive]
    return kinds[0](int(text))


def _default(field_def: schema.FieldDef) -> Any:
    if field_def.default is None:
        return None
    choices = CHOICES.get(field_def.type, {})
    if field_def.default in choices:
        return choices[field_def.default]
    return _literal(resolve(field_def.type), field_def.default)


# ---------------------------------------------------------------------- choices and constants
CHOICES: dict[str, dict[str, Any]] = {
    t.name: {c.name: _literal(resolve(t.name), c.value) for c in t.choices}
    for t in TYPES.values()
    if t.choices
}


def condition_constant(value: str) -> str:
    """``amqp:connection:framing-error`` -> ``CONNECTION_FRAMING_ERROR``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", value.removeprefix("amqp:")).upper()


# Error condition symbols by constant name, for every error-condition the spec lists.
CONDITIONS: dict[str, Symbol] = {
    condition_constant(value): value
    for t in TYPES.values()
    if "error-condition" in t.provides
    for value in CHOICES[t.name].values()
}

# <definition> values (PORT, MIN-MAX-FRAME-SIZE...) by constant name.
DEFINITIONS: dict[str, int] = {
    snake(name).upper(): int(value) for name, value in SCHEMA.definitions.items()
}


def _choice_namespace(type_def: schema.TypeDef) -> type:
    values = CHOICES[type_def.name]
    attrs: dict[str, Any] = {snake(name).upper(): value for name, value in values.items()}
    attrs["VALUES"] = dict(values)
    attrs["__doc__"] = f"Values of the restricted type {type_def.name} ({resolve(type_def.name)})."
    attrs["__slots__"] = ()
    return type(camel(type_def.name), (), attrs)


# ---------------------------------------------------------------------- field encoders
def _field_encoder(field_def: schema.FieldDef) -> Callable[[Any, bytearray], None]:
    primitive = resolve(field_def.type)
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


def _writer(cls: type, fields: tuple[schema.FieldDef, ...], defaults: tuple) -> Callable:
    """The class's _write_fields: the field values in order, trailing nulls dropped."""
    attrs = tuple(snake(f.name) for f in fields)
    if len(attrs) > 1:
        get_all = attrgetter(*attrs)
    elif attrs:
        get_one = attrgetter(attrs[0])

        def get_all(obj: Any) -> tuple:
            return (get_one(obj),)
    else:

        def get_all(obj: Any) -> tuple:
            return ()

    plan = tuple((i, _field_encoder(f), defaults[i]) for i, f in enumerate(fields))
    mandatory = tuple(i for i, f in enumerate(fields) if f.mandatory)
    name = cls.__name__

    def write_fields(self: Any, out: bytearray) -> int:
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


def _reader(cls: type, fields: tuple[schema.FieldDef, ...], defaults: tuple) -> Callable:
    """The class's _from_value: a decoded list to an instance, checking each field."""
    name = cls.__name__
    plan = tuple(
        (
            cls.__dict__[snake(f.name)].__set__,  # the slot
            _allowed(f.type),
            defaults[i],
            f.mandatory,
            f.multiple,
            f"{name}.{snake(f.name)}",
        )
        for i, f in enumerate(fields)
    )
    width = len(plan)
    padding = [[None] * (width - n) for n in range(width + 1)]
    new = object.__new__

    def from_value(value: Any) -> Any:
        if type(value) is not list:
            raise DecodeError(f"{name} described {_kind(value)}, expected a list")
        if len(value) < width:
            value = value + padding[len(value)]
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
        return obj

    return from_value


def _as_list(value: Any, allowed: tuple[type, ...] | None, label: str) -> list:
    """A ``multiple`` field: an array (or list) of values, or one value."""
    items = list(value) if isinstance(value, list) else [value]
    if allowed is not None:
        for item in items:
            if type(item) not in allowed:
                raise DecodeError(f"{label} holds {_kind(item)}: {item!r}")
    return items


# ---------------------------------------------------------------------- classes
def _namespace(type_def: schema.TypeDef) -> dict[str, Any]:
    code = type_def.descriptor_code
    assert code is not None and type_def.descriptor_name is not None
    return {
        "DESCRIPTOR": ULong(code),
        "DESCRIPTOR_NAME": Symbol(type_def.descriptor_name),
        "AMQP_NAME": type_def.name,
        "PROVIDES": frozenset(type_def.provides),
        "_PREFIX": b"\x00" + encode(ULong(code)),
        "__doc__": f"AMQP {type_def.name} ({type_def.spec}), descriptor 0x{code:08x}.",
        "__module__": __name__,
    }


def _composite(type_def: schema.TypeDef) -> type:
    defaults = tuple(_default(f) for f in type_def.fields)
    namespace = _namespace(type_def)
    namespace["FIELDS"] = tuple(
        FieldSpec(f.name, f.type, f.multiple, f.mandatory, f.requires) for f in type_def.fields
    )
    namespace["ATTRS"] = tuple(snake(f.name) for f in type_def.fields)
    namespace["DEFAULTS"] = defaults
    return make_dataclass(
        camel(type_def.name),
        [
            (snake(f.name), Any, field(default=d))
            for f, d in zip(type_def.fields, defaults, strict=True)
        ],
        bases=(Composite,),
        namespace=namespace,
        kw_only=True,
        slots=True,
        repr=False,
    )


def _finish_composite(cls: Any, type_def: schema.TypeDef) -> None:
    """Attach the field writer and reader (after every class exists: a field may be of another
    composite type, like error) and register the class with the decoder."""
    defaults = tuple(_default(f) for f in type_def.fields)
    cls._write_fields = _writer(cls, type_def.fields, defaults)
    from_value = _reader(cls, type_def.fields, defaults)
    cls._from_value = staticmethod(from_value)
    register_described(cls.DESCRIPTOR, cls.DESCRIPTOR_NAME, from_value)


def _section(type_def: schema.TypeDef) -> type:
    """A described restricted type (a message section): one value of the source type."""
    source = resolve(type_def.name)
    namespace = _namespace(type_def)
    namespace["SOURCE"] = source
    if _is_keyed_map(type_def.name):
        namespace["_encode_value"] = staticmethod(_keyed_map)
    else:
        namespace["_encode_value"] = staticmethod(TYPED_ENCODERS.get(source, write_value))
    cls: Any = make_dataclass(
        camel(type_def.name),
        [("value", Any, field(default=None))],
        bases=(Restricted,),
        namespace=namespace,
        slots=True,
        repr=False,
    )
    allowed = _PYTHON_TYPES.get(source)
    name = cls.__name__

    def from_value(value: Any) -> Any:
        if allowed is not None and value is not None and type(value) not in allowed:
            raise DecodeError(f"{name} holds {_kind(value)}, expected {source}")
        return cls(value)

    cls._from_value = staticmethod(from_value)
    register_described(cls.DESCRIPTOR, cls.DESCRIPTOR_NAME, from_value)
    return cls


COMPOSITES: dict[str, Any] = {
    t.name: _composite(t) for t in TYPES.values() if t.klass == "composite"
}
for _type_def in TYPES.values():
    if _type_def.klass == "composite":
        _finish_composite(COMPOSITES[_type_def.name], _type_def)

SECTION_TYPES: dict[str, Any] = {
    t.name: _section(t)
    for t in TYPES.values()
    if t.klass == "restricted" and t.descriptor_code is not None
}

# Every generated class by XML name, and by descriptor code.
CLASSES: dict[str, Any] = {**COMPOSITES, **SECTION_TYPES}
BY_DESCRIPTOR: dict[int, Any] = {int(cls.DESCRIPTOR): cls for cls in CLASSES.values()}


def providers(archetype: str) -> tuple[type, ...]:
    """The classes that provide `archetype` (``frame``, ``sasl-frame``, ``outcome``...)."""
    return tuple(cls for cls in CLASSES.values() if archetype in cls.PROVIDES)


PERFORMATIVES = providers("frame")
SASL_FRAMES = providers("sasl-frame")
SECTIONS = providers("section")
DELIVERY_STATES = providers("delivery-state")
OUTCOMES = providers("outcome")

CHOICE_TYPES: dict[str, type] = {
    t.name: _choice_namespace(t)
    for t in TYPES.values()
    if t.choices and "error-condition" not in t.provides
}


def _publish(names: dict[str, Any]) -> None:
    """Make the generated names module attributes (``from .definitions import Open``)."""
    clashes = set(names) & set(globals())
    if clashes:
        raise RuntimeError(f"generated names clash with the module's own: {sorted(clashes)}")
    globals().update(names)


_publish({cls.__name__: cls for cls in CLASSES.values()})
_publish({cls.__name__: cls for cls in CHOICE_TYPES.values()})
_publish(dict(CONDITIONS))
_publish(dict(DEFINITIONS))

__all__ = [
    "BY_DESCRIPTOR",
    "CHOICES",
    "CHOICE_TYPES",
    "CLASSES",
    "COMPOSITES",
    "CONDITIONS",
    "DEFINITIONS",
    "DELIVERY_STATES",
    "OUTCOMES",
    "PERFORMATIVES",
    "SASL_FRAMES",
    "SECTIONS",
    "SECTION_TYPES",
    "FieldSpec",
    "camel",
    "condition_constant",
    "providers",
    "resolve",
    "snake",
    *(cls.__name__ for cls in CLASSES.values()),
    *(cls.__name__ for cls in CHOICE_TYPES.values()),
    *CONDITIONS,
    *DEFINITIONS,
]
