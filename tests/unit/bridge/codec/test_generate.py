"""spec_classes.py is generated from the spec's XML: regenerating it must give the checked-in
file byte for byte, so a change to the XML or the generator without a regeneration fails here."""

from __future__ import annotations

from rabbitish.bridge.codec import definitions, generate, schema, spec_classes


def test_the_checked_in_classes_are_what_the_xml_generates():
    expected = generate.generate(schema.load())
    actual = generate.TARGET.read_text()
    assert actual == expected, (
        "spec_classes.py differs from the XML: run python -m rabbitish.bridge.codec.generate"
    )


def test_every_restricted_and_composite_type_of_the_xml_is_generated():
    types = schema.load().types
    restricted = {name for name, t in types.items() if t.klass == "restricted"}
    assert set(spec_classes.RESTRICTED_SOURCES) == restricted
    composites = {name for name, t in types.items() if t.klass == "composite"}
    assert set(spec_classes.COMPOSITES) == composites
    described = {n for n in restricted if types[n].descriptor_code is not None}
    assert set(spec_classes.SECTION_TYPES) == described


def test_definitions_re_exports_every_generated_name():
    missing = [name for name in spec_classes.__all__ if getattr(definitions, name, None) is None]
    assert missing == []
    assert set(spec_classes.__all__) <= set(definitions.__all__)
