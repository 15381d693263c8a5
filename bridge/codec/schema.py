"""The AMQP 1.0 type definitions read from the spec's XML (package data under spec/), as plain
records. definitions.py turns them into classes; the tests hold both against the XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import resources

SPEC_FILES = ("types", "transport", "messaging", "security", "transactions")
_NS = "{http://www.amqp.org/schema/amqp.xsd}"


@dataclass(frozen=True, slots=True)
class FieldDef:
    name: str
    type: str
    default: str | None
    mandatory: bool
    multiple: bool
    requires: str | None


@dataclass(frozen=True, slots=True)
class ChoiceDef:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class EncodingDef:
    name: str | None
    code: int
    category: str
    width: int


@dataclass(frozen=True, slots=True)
class TypeDef:
    name: str
    klass: str  # primitive, composite or restricted
    source: str | None
    provides: tuple[str, ...]
    descriptor_name: str | None
    descriptor_code: int | None
    fields: tuple[FieldDef, ...]
    choices: tuple[ChoiceDef, ...]
    encodings: tuple[EncodingDef, ...]
    spec: str  # which file: transport, messaging...


@dataclass(frozen=True, slots=True)
class Schema:
    types: dict[str, TypeDef]
    definitions: dict[str, str]  # <definition name=... value=...>, e.g. MIN-MAX-FRAME-SIZE


def spec_xml(name: str) -> bytes:
    """The XML of one spec part (`types`, `transport`...), as shipped in the package."""
    return resources.files(__package__).joinpath("spec", f"{name}.bare.xml").read_bytes()


def descriptor_code(text: str) -> int:
    """'0x00000000:0x00000010' (domain:id) as the ulong it stands for."""
    domain, _, ident = text.partition(":")
    return int(domain, 16) << 32 | int(ident, 16)


def _bool(element: ET.Element, attribute: str) -> bool:
    return element.get(attribute, "false") == "true"


def _type(element: ET.Element, spec: str) -> TypeDef:
    descriptor = element.find(f"{_NS}descriptor")
    provides = tuple(p.strip() for p in element.get("provides", "").split(",") if p.strip())
    return TypeDef(
        name=element.get("name", ""),
        klass=element.get("class", ""),
        source=element.get("source"),
        provides=provides,
        descriptor_name=None if descriptor is None else descriptor.get("name"),
        descriptor_code=None if descriptor is None else descriptor_code(descriptor.get("code", "")),
        fields=tuple(
            FieldDef(
                name=f.get("name", ""),
                type=f.get("type", "*"),
                default=f.get("default"),
                mandatory=_bool(f, "mandatory"),
                multiple=_bool(f, "multiple"),
                requires=f.get("requires"),
            )
            for f in element.iter(f"{_NS}field")
        ),
        choices=tuple(
            ChoiceDef(c.get("name", ""), c.get("value", "")) for c in element.iter(f"{_NS}choice")
        ),
        encodings=tuple(
            EncodingDef(
                name=e.get("name"),
                code=int(e.get("code", ""), 16),
                category=e.get("category", ""),
                width=int(e.get("width", "0")),
            )
            for e in element.iter(f"{_NS}encoding")
        ),
        spec=spec,
    )


def load() -> Schema:
    """Every type and definition of the five spec parts, in document order."""
    types: dict[str, TypeDef] = {}
    definitions: dict[str, str] = {}
    for spec in SPEC_FILES:
        root = ET.fromstring(spec_xml(spec))
        for element in root.iter(f"{_NS}type"):
            type_def = _type(element, spec)
            if type_def.name in types:
                raise ValueError(f"type {type_def.name} defined twice in the spec files")
            types[type_def.name] = type_def
        for element in root.iter(f"{_NS}definition"):
            definitions[element.get("name", "")] = element.get("value", "")
    return Schema(types, definitions)
