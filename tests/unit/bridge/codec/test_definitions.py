"""The classes generated from the spec's XML, held against the XML itself (read here with
ElementTree, not through the codec's own loader): a class per composite with the right
descriptor and fields in order, defaults, choices, error conditions; and each class round-trips
with every field set."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rabbitish.bridge.codec import definitions, schema
from rabbitish.bridge.codec.definitions import (
    Attach,
    Disposition,
    Flow,
    Open,
    Source,
    Transfer,
)
from rabbitish.bridge.codec.types import (
    Composite,
    DecodeError,
    EncodeError,
    Restricted,
    Symbol,
    UByte,
    UInt,
    ULong,
    UShort,
    decode,
    encode,
)

from tests.support.amqp10_values import filled, instances, same

NS = "{http://www.amqp.org/schema/amqp.xsd}"


def xml_types(klass: str) -> list[ET.Element]:
    found = []
    for name in schema.SPEC_FILES:
        root = ET.fromstring(schema.spec_xml(name))
        found += [t for t in root.iter(f"{NS}type") if t.get("class") == klass]
    return found


COMPOSITES = xml_types("composite")
RESTRICTED = xml_types("restricted")
DESCRIBED_RESTRICTED = [t for t in RESTRICTED if t.find(f"{NS}descriptor") is not None]


def class_for(element: ET.Element) -> type:
    name = "".join(part.capitalize() for part in element.get("name").split("-"))
    return getattr(definitions, name)


def test_every_spec_file_is_packaged_and_every_composite_found():
    assert schema.SPEC_FILES == ("types", "transport", "messaging", "security", "transactions")
    assert len(COMPOSITES) == 33
    assert len(DESCRIBED_RESTRICTED) == 7


def test_the_names_other_modules_use_exist():
    names = [
        *("Open", "Begin", "Attach", "Flow", "Transfer", "Disposition", "Detach", "End"),
        *("Close", "Error", "SaslMechanisms", "SaslInit", "SaslChallenge", "SaslResponse"),
        *("SaslOutcome", "Source", "Target", "Received", "Accepted", "Rejected", "Released"),
        *("Modified", "DeleteOnClose", "DeleteOnNoLinks", "DeleteOnNoMessages"),
        *("DeleteOnNoLinksOrMessages", "Header", "Properties", "Coordinator", "Declare"),
        *("Discharge", "Declared", "TransactionalState", "Data", "AmqpSequence", "AmqpValue"),
        *("ApplicationProperties", "DeliveryAnnotations", "MessageAnnotations", "Footer"),
    ]
    missing = [name for name in names if not hasattr(definitions, name)]
    assert missing == []


@pytest.mark.parametrize("element", COMPOSITES, ids=lambda e: e.get("name"))
def test_composite_class_matches_the_xml(element):
    cls = class_for(element)
    assert issubclass(cls, Composite)
    descriptor = element.find(f"{NS}descriptor")
    high, low = descriptor.get("code").split(":")
    assert ULong(int(high, 16) << 32 | int(low, 16)) == cls.DESCRIPTOR
    assert type(cls.DESCRIPTOR) is ULong
    assert Symbol(descriptor.get("name")) == cls.DESCRIPTOR_NAME
    assert type(cls.DESCRIPTOR_NAME) is Symbol
    fields = element.findall(f"{NS}field")
    assert [tuple(f) for f in cls.FIELDS] == [
        (
            f.get("name"),
            f.get("type"),
            f.get("multiple") == "true",
            f.get("mandatory") == "true",
            f.get("requires"),
        )
        for f in fields
    ]
    assert tuple(f.get("name").replace("-", "_") for f in fields) == cls.ATTRS
    assert definitions.BY_DESCRIPTOR[int(cls.DESCRIPTOR)] is cls


@pytest.mark.parametrize("element", COMPOSITES, ids=lambda e: e.get("name"))
def test_composite_round_trips_with_every_field_set(element):
    cls = class_for(element)
    value = filled(cls)
    assert all(getattr(value, attr) is not None for attr in cls.ATTRS)
    data = encode(value)
    assert data.startswith(b"\x00" + encode(cls.DESCRIPTOR))
    decoded, end = decode(data)
    assert end == len(data)
    assert same(decoded, value)
    assert decoded == value


@pytest.mark.parametrize("element", DESCRIBED_RESTRICTED, ids=lambda e: e.get("name"))
def test_described_restricted_types_are_classes_holding_a_value(element):
    cls = class_for(element)
    assert issubclass(cls, Restricted)
    assert element.find(f"{NS}descriptor").get("name") == cls.DESCRIPTOR_NAME
    value = filled(cls)
    decoded, _ = decode(encode(value))
    assert same(decoded, value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(definitions.CLASSES.values(), key=lambda c: int(c.DESCRIPTOR))).flatmap(
        instances
    )
)
def test_generated_instances_of_every_class_round_trip(value):
    decoded, _ = decode(encode(value))
    assert same(decoded, value)


def test_defaults_come_from_the_xml():
    opened = Open(container_id="c")
    assert opened.max_frame_size == UInt(0xFFFFFFFF) and type(opened.max_frame_size) is UInt
    assert opened.channel_max == UShort(0xFFFF) and type(opened.channel_max) is UShort
    attach = Attach(name="l", handle=0, role=False)
    assert attach.snd_settle_mode == UByte(2) and type(attach.snd_settle_mode) is UByte
    assert attach.rcv_settle_mode == UByte(0)
    assert attach.incomplete_unsettled is False
    source = Source()
    assert source.durable == UInt(0) and source.expiry_policy == Symbol("session-end")
    assert source.timeout == UInt(0) and source.dynamic is False
    assert Transfer(handle=0).more is False and Transfer(handle=0).settled is None
    assert Flow(incoming_window=0, next_outgoing_id=0, outgoing_window=0).drain is False
    assert Disposition(role=True, first=0).settled is False


def test_choices_follow_the_xml():
    expected = {
        t.get("name"): {c.get("name"): c.get("value") for c in t.iter(f"{NS}choice")}
        for t in RESTRICTED
        if t.find(f"{NS}choice") is not None
    }
    assert set(definitions.CHOICES) == set(expected)
    for type_name, choices in expected.items():
        table = definitions.CHOICES[type_name]
        assert list(table) == list(choices)
        for name, text in choices.items():
            assert str(table[name]).lower() == text
    assert UByte(2) == definitions.SenderSettleMode.MIXED
    assert type(definitions.SenderSettleMode.MIXED) is UByte
    assert UByte(1) == definitions.ReceiverSettleMode.SECOND
    assert definitions.Role.SENDER is False and definitions.Role.RECEIVER is True
    assert UByte(1) == definitions.SaslCode.AUTH and UByte(4) == definitions.SaslCode.SYS_TEMP
    assert UInt(2) == definitions.TerminusDurability.UNSETTLED_STATE
    assert Symbol("link-detach") == definitions.TerminusExpiryPolicy.LINK_DETACH
    assert Symbol("move") == definitions.StdDistMode.MOVE
    assert Symbol("amqp:local-transactions") == definitions.TxnCapability.LOCAL_TRANSACTIONS
    assert definitions.CHOICES["sender-settle-mode"] == definitions.SenderSettleMode.VALUES


def test_every_error_condition_is_a_constant():
    conditions = [
        c.get("value")
        for t in RESTRICTED
        if "error-condition" in (t.get("provides") or "")
        for c in t.iter(f"{NS}choice")
    ]
    assert sorted(definitions.CONDITIONS.values()) == sorted(conditions)
    assert all(type(symbol) is Symbol for symbol in definitions.CONDITIONS.values())
    assert definitions.DECODE_ERROR == "amqp:decode-error"
    assert definitions.NOT_FOUND == "amqp:not-found"
    assert definitions.CONNECTION_FRAMING_ERROR == "amqp:connection:framing-error"
    assert definitions.CONNECTION_REDIRECT == "amqp:connection:redirect"
    assert definitions.LINK_REDIRECT == "amqp:link:redirect"
    assert definitions.SESSION_WINDOW_VIOLATION == "amqp:session:window-violation"
    assert definitions.TRANSACTION_UNKNOWN_ID == "amqp:transaction:unknown-id"
    assert definitions.TRANSACTION_ROLLBACK == "amqp:transaction:rollback"


def test_definitions_and_archetypes():
    assert definitions.MIN_MAX_FRAME_SIZE == 512 and definitions.PORT == 5672
    assert definitions.MESSAGE_FORMAT == 0
    assert [c.__name__ for c in definitions.PERFORMATIVES] == [
        "Open",
        "Begin",
        "Attach",
        "Flow",
        "Transfer",
        "Disposition",
        "Detach",
        "End",
        "Close",
    ]
    assert [c.__name__ for c in definitions.SASL_FRAMES] == [
        "SaslMechanisms",
        "SaslInit",
        "SaslChallenge",
        "SaslResponse",
        "SaslOutcome",
    ]
    assert {c.__name__ for c in definitions.OUTCOMES} == {
        "Accepted",
        "Rejected",
        "Released",
        "Modified",
        "Declared",
    }
    assert len(definitions.SECTIONS) == 9
    assert definitions.resolve("delivery-number") == "uint"
    assert definitions.resolve("node-properties") == "map"
    assert definitions.resolve("error") == "error"


def test_construction_is_by_keyword_and_leaves_unset_fields_at_default():
    with pytest.raises(TypeError):
        Open("c")  # type: ignore[misc]
    opened = Open(container_id="x", max_frame_size=UInt(65536))
    assert opened.max_frame_size == 65536
    assert repr(opened) == "Open(container_id='x', max_frame_size=UInt(65536))"
    assert Open(container_id="x") == Open(container_id="x")
    assert Open(container_id="x") != Open(container_id="y")


def test_decoding_checks_types_and_mandatory_fields():
    with pytest.raises(DecodeError, match=r"Attach\.role is mandatory"):
        decode(bytes.fromhex("00 53 12 c0 05 02 a1 01 6c 43"))
    with pytest.raises(DecodeError, match=r"Attach\.role is uint"):
        decode(bytes.fromhex("00 53 12 c0 06 03 a1 01 6c 43 43"))
    with pytest.raises(EncodeError, match=r"Attach\.handle"):
        encode(Attach(name="l", handle="zero", role=False))
