"""Writes spec_classes.py, the spec's composite and restricted types as Python source, from the
spec's XML (spec/*.bare.xml, read by schema.py).

The classes are checked in rather than built on import so a type checker sees every class and
field, and so importing the codec does not parse XML. A test regenerates the source in memory
and fails when the checked-in file differs; after changing the XML or this generator, run

    python -m rabbitish.bridge.codec.generate

The output is already in ruff's format (lines of at most 100 characters, one item a line when a
collection does not fit on one)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from . import schema
from .encoder import encode
from .spec_names import camel, condition_constant, resolve_restricted, snake
from .values import ULong

TARGET = Path(__file__).with_name("spec_classes.py")
_WIDTH = 100

# The Python class of a value of each primitive type, for literals (defaults and choices).
_CLASSES = {
    "ubyte": "UByte",
    "ushort": "UShort",
    "uint": "UInt",
    "ulong": "ULong",
    "byte": "Byte",
    "short": "Short",
    "int": "Int",
    "long": "Long",
    "timestamp": "Timestamp",
}

# What a field of each primitive type holds, as an annotation: what decoding gives (an int
# subclass is an int) and what encoding accepts.
_ANNOTATIONS = {
    "null": "None",
    "boolean": "bool",
    **dict.fromkeys(_CLASSES, "int"),
    "float": "float",
    "double": "float",
    "decimal32": "bytes",
    "decimal64": "bytes",
    "decimal128": "bytes",
    "char": "str",
    "uuid": "UUID",
    "binary": "bytes",
    "string": "str",
    "symbol": "str",
    "list": "list[Any]",
    "map": "dict[Any, Any]",
    "array": "Array",
    "*": "Any",
}

_HEADER = '''\
"""The AMQP 1.0 spec's composite and restricted types as classes, with their field tables,
choices, error conditions and definitions.

Generated from the spec's XML (spec/*.bare.xml) by `python -m rabbitish.bridge.codec.generate`:
do not edit (tests/unit/bridge/codec/test_generate.py fails when this file and the XML differ).
definitions.py gives the classes their field writers and readers; see there for how fields are
encoded and decoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar
{imports}

# The default of a mandatory field: None until the caller sets one (encoding refuses None),
# typed Any so the field's annotation says what a decoded frame always holds.
_MANDATORY: Any = None
'''


class _Source:
    """Accumulates lines of ruff-formatted source."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def collection(
        self, indent: str, head: str, items: Iterable[str], close: str, *, is_tuple: bool = False
    ) -> None:
        """``head item, item close`` on one line if it fits, else one item a line."""
        items = list(items)
        joined = f"{items[0]}," if is_tuple and len(items) == 1 else ", ".join(items)
        one_line = f"{indent}{head}{joined}{close}"
        if len(one_line) <= _WIDTH or not items:
            self.add(one_line)
            return
        self.add(f"{indent}{head}")
        self.add(*(f"{indent}    {item}," for item in items))
        self.add(f"{indent}{close}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _isort_order(name: str) -> tuple[int, str]:
    """ruff's order for __all__: CONSTANTS, then Classes, then the rest."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


class _Generator:
    def __init__(self, spec: schema.Schema) -> None:
        self.types = spec.types
        self.definitions = spec.definitions
        self.sources = {
            t.name: t.source or "*" for t in spec.types.values() if t.klass == "restricted"
        }
        self.out = _Source()
        self.names: set[str] = set()

    # ------------------------------------------------------------------ values
    def resolve(self, type_name: str) -> str:
        return resolve_restricted(type_name, self.sources)

    def literal(self, primitive: str, text: str) -> str:
        """A value written in the XML (a default or a choice) as a Python expression."""
        if primitive == "boolean":
            return "True" if text == "true" else "False"
        if primitive == "symbol":
            return f'Symbol("{text}")'
        if primitive == "string":
            return f'"{text}"'
        return f"{_CLASSES[primitive]}({int(text)})"

    def default(self, field: schema.FieldDef) -> str:
        if field.default is None:
            return "None"
        type_def = self.types.get(field.type)
        if type_def is not None:
            for choice in type_def.choices:
                if choice.name == field.default:
                    return self.literal(self.resolve(field.type), choice.value)
        return self.literal(self.resolve(field.type), field.default)

    def annotation(self, field: schema.FieldDef) -> str:
        primitive = self.resolve(field.type)
        if primitive in _ANNOTATIONS:
            kind = _ANNOTATIONS[primitive]
        elif self.types.get(primitive) is not None and self.types[primitive].klass == "composite":
            kind = camel(primitive)
        else:
            raise ValueError(f"field {field.name} of unknown type {field.type}")
        return f"list[{kind}]" if field.multiple else kind

    # ------------------------------------------------------------------ output
    def claim(self, name: str) -> str:
        if name in self.names:
            raise ValueError(f"generated name {name} defined twice")
        self.names.add(name)
        return name

    def generate(self) -> str:
        self.section("restricted types")
        self.out.add("# Each restricted type's source (``delivery-number`` -> ``sequence-no``).")
        self.claim("RESTRICTED_SOURCES")
        self.out.collection(
            "",
            "RESTRICTED_SOURCES: dict[str, str] = {",
            (f'"{name}": "{source}"' for name, source in self.sources.items()),
            "}",
        )
        self.conditions()
        self.choice_types()
        self.choices()
        self.definition_constants()
        composites = [t for t in self.types.values() if t.klass == "composite"]
        sections = [
            t
            for t in self.types.values()
            if t.klass == "restricted" and t.descriptor_code is not None
        ]
        self.section("composite types")
        for type_def in composites:
            self.composite(type_def)
        self.section("message sections")
        for type_def in sections:
            self.restricted(type_def)
        self.section("tables")
        self.out.add("# The composite classes by XML name, in the order of the spec.")
        self.table("COMPOSITES", "dict[str, type[Composite]]", composites)
        self.out.add("", "# The described restricted classes (the sections) by XML name.")
        self.table("SECTION_TYPES", "dict[str, type[Restricted]]", sections)
        self.out.add("", "# The choice name spaces by XML name.")
        self.table("CHOICE_TYPES", "dict[str, type]", self.choice_defs())
        self.out.add("")
        names = sorted(self.names, key=_isort_order)
        self.out.collection("", "__all__ = [", (f'"{n}"' for n in names), "]")
        return self.header() + self.out.text()

    def header(self) -> str:
        """The docstring and the imports, of what the body uses."""
        text = "\n".join(self.out.lines)
        values = ["Composite", "FieldSpec", "Restricted", "Symbol", "ULong"]
        values += [name for name in _CLASSES.values() if re.search(rf"\b{name}\(", text)]
        values += ["Array"] if ": Array" in text or "[Array]" in text else []
        imports = "from uuid import UUID\n\n" if ": UUID" in text else "\n"
        line = f"from .values import {', '.join(sorted(set(values)))}"
        if len(line) > _WIDTH:
            source = _Source()
            source.collection("", "from .values import (", sorted(set(values)), ")")
            line = "\n".join(source.lines)
        return _HEADER.format(imports=imports + line)

    def section(self, title: str) -> None:
        self.out.add("", "", f"# {'-' * 70} {title}")

    def table(self, name: str, kind: str, type_defs: Iterable[schema.TypeDef]) -> None:
        self.claim(name)
        self.out.collection(
            "", f"{name}: {kind} = {{", (f'"{t.name}": {camel(t.name)}' for t in type_defs), "}"
        )

    def conditions(self) -> None:
        self.section("error conditions")
        constants = []
        for type_def in self.types.values():
            if "error-condition" not in type_def.provides:
                continue
            self.out.add(f"# {type_def.name}")
            for choice in type_def.choices:
                constant = self.claim(condition_constant(choice.value))
                self.out.add(f'{constant} = Symbol("{choice.value}")')
                constants.append(constant)
        self.out.add("", "# Every error condition symbol by constant name.")
        self.claim("CONDITIONS")
        self.out.collection(
            "", "CONDITIONS: dict[str, Symbol] = {", (f'"{c}": {c}' for c in constants), "}"
        )

    def choice_defs(self) -> list[schema.TypeDef]:
        return [t for t in self.types.values() if t.choices and "error-condition" not in t.provides]

    def choice_types(self) -> None:
        self.section("choices")
        for type_def in self.choice_defs():
            primitive = self.resolve(type_def.name)
            kind = "bool" if primitive == "boolean" else _CLASSES.get(primitive, "Symbol")
            name = self.claim(camel(type_def.name))
            self.out.add(
                "",
                "",
                f"class {name}:",
                f'    """Values of the restricted type {type_def.name} ({primitive})."""',
                "",
                "    __slots__ = ()",
            )
            for choice in type_def.choices:
                value = self.literal(primitive, choice.value)
                self.out.add(f"    {snake(choice.name).upper()}: ClassVar[{kind}] = {value}")
            self.out.collection(
                "    ",
                f"VALUES: ClassVar[dict[str, {kind}]] = {{",
                (f'"{c.name}": {snake(c.name).upper()}' for c in type_def.choices),
                "}",
            )

    def choices(self) -> None:
        self.out.add(
            "",
            "",
            "# Every restricted type with choices: its values by choice name (error conditions",
            "# included).",
        )
        self.claim("CHOICES")
        self.out.add("CHOICES: dict[str, dict[str, Any]] = {")
        for type_def in self.types.values():
            if not type_def.choices:
                continue
            if "error-condition" in type_def.provides:
                values = (f'"{c.name}": {condition_constant(c.value)}' for c in type_def.choices)
                self.out.collection("    ", f'"{type_def.name}": {{', values, "},")
            else:
                self.out.add(f'    "{type_def.name}": dict({camel(type_def.name)}.VALUES),')
        self.out.add("}")

    def definition_constants(self) -> None:
        self.section("definitions")
        constants = []
        for name, value in self.definitions.items():
            constant = self.claim(snake(name).upper())
            self.out.add(f"{constant} = {int(value)}")
            constants.append(constant)
        self.out.add("", "# The <definition> values (PORT, MIN-MAX-FRAME-SIZE...) by name.")
        self.claim("DEFINITIONS")
        self.out.collection(
            "", "DEFINITIONS: dict[str, int] = {", (f'"{c}": {c}' for c in constants), "}"
        )

    def class_head(self, type_def: schema.TypeDef, decorator: str, base: str) -> None:
        code = type_def.descriptor_code
        assert code is not None and type_def.descriptor_name is not None
        prefix = b"\x00" + encode(ULong(code))
        self.out.add(
            "",
            "",
            decorator,
            f"class {self.claim(camel(type_def.name))}({base}):",
            f'    """AMQP {type_def.name} ({type_def.spec}), descriptor 0x{code:08x}."""',
            "",
            f"    DESCRIPTOR = ULong(0x{code:08X})",
            f'    DESCRIPTOR_NAME = Symbol("{type_def.descriptor_name}")',
            f'    AMQP_NAME = "{type_def.name}"',
        )
        provides = ", ".join(f'"{p}"' for p in type_def.provides)
        provides = f"{{{provides}}}" if provides else ""
        self.out.add(f"    PROVIDES = frozenset({provides})")
        escaped = "".join(f"\\x{octet:02x}" for octet in prefix)
        self.out.add(f'    _PREFIX = b"{escaped}"')

    def composite(self, type_def: schema.TypeDef) -> None:
        self.class_head(type_def, "@dataclass(kw_only=True, slots=True, repr=False)", "Composite")
        fields = type_def.fields
        self.out.collection(
            "    ",
            "FIELDS = (",
            (
                f'FieldSpec("{f.name}", "{f.type}", {f.multiple}, {f.mandatory}, '
                + ("None" if f.requires is None else f'"{f.requires}"')
                + ")"
                for f in fields
            ),
            ")",
            is_tuple=True,
        )
        attrs = (f'"{snake(f.name)}"' for f in fields)
        self.out.collection("    ", "ATTRS = (", attrs, ")", is_tuple=True)
        defaults = (self.default(f) for f in fields)
        self.out.collection("    ", "DEFAULTS = (", defaults, ")", is_tuple=True)
        if fields:
            self.out.add("")
        for field in fields:
            kind = self.annotation(field)
            default = self.default(field)
            if field.mandatory:
                line = f"    {snake(field.name)}: {kind} = _MANDATORY"
            elif default == "None":
                line = f"    {snake(field.name)}: {kind} | None = None"
            else:
                line = f"    {snake(field.name)}: {kind} = {default}"
            self.out.add(line)

    def restricted(self, type_def: schema.TypeDef) -> None:
        self.class_head(type_def, "@dataclass(slots=True, repr=False)", "Restricted")
        source = self.resolve(type_def.name)
        self.out.add(f'    SOURCE = "{source}"', "")
        kind = _ANNOTATIONS[source]
        optional = kind if kind == "Any" else f"{kind} | None"
        self.out.add(f"    value: {optional} = None")


def generate(spec: schema.Schema | None = None) -> str:
    """The source of spec_classes.py for `spec` (the shipped XML by default)."""
    return _Generator(spec or schema.load()).generate()


def main() -> int:
    source = generate()
    if TARGET.exists() and TARGET.read_text() == source:
        print(f"{TARGET} is up to date")
        return 0
    TARGET.write_text(source)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
