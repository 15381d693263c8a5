"""The 1.0 <-> engine message mapping's shortcuts give what the general path gives: a properties
or header section with every field absent (qpid-proton sends both, as four bytes each), the raw
properties remembered for messages without headers, and the sections encoded once per
combination on the way out."""

from __future__ import annotations

from rabbitish.bridge.codec import Symbol, UInt, decode_all, encode
from rabbitish.bridge.codec.definitions import (
    ApplicationProperties,
    Data,
    Header,
    MessageAnnotations,
    Properties,
    data_section_head,
)
from rabbitish.bridge.message import (
    PROPERTIES_HEADER,
    from_engine,
    to_engine,
)

from rabbitish.protocol.codec import CODEC

EMPTY_HEADER = bytes.fromhex("005370 45")
EMPTY_PROPERTIES = bytes.fromhex("005373 45")
# The same sections as a list8 of nulls: decoded the general way.
NULL_HEADER = bytes.fromhex("005370 c0 03 02 40 40")
NULL_PROPERTIES = bytes.fromhex("005373 c0 04 03 40 40 40")


def mapped(payload: bytes, routing_key: str | None = "q") -> tuple[bytes, bytes, str, str | None]:
    message, subject = to_engine(CODEC, "", routing_key, payload)
    return message.raw_properties, message.body, message.routing_key, subject


def test_sections_with_every_field_absent_map_as_the_general_path_maps_them():
    body = encode(Data(value=b"hello"))
    short = mapped(EMPTY_HEADER + EMPTY_PROPERTIES + body)
    assert short == mapped(NULL_HEADER + NULL_PROPERTIES + body)
    assert CODEC.to_fields(short[0]) == {"delivery_mode": 1}
    # An absent properties section maps the same; an absent header leaves delivery-mode out.
    assert mapped(EMPTY_HEADER + body) == short
    assert CODEC.to_fields(mapped(body)[0]) == {}


def test_a_blank_properties_section_takes_the_subject_from_the_address_not_the_message():
    body = encode(Data(value=b"x"))
    assert mapped(EMPTY_PROPERTIES + body, routing_key=None)[2:] == ("", None)
    with_subject = encode(Properties(subject="key")) + body
    assert mapped(with_subject, routing_key=None)[2:] == ("key", "key")


def test_remembered_raw_properties_equal_freshly_encoded_ones():
    for header in (Header(), Header(durable=True), Header(priority=7, ttl=UInt(5000))):
        for props in (Properties(), Properties(message_id="m1", content_type=Symbol("t/p"))):
            payload = encode(header) + encode(props) + encode(Data(value=b"b"))
            first, again = mapped(payload)[0], mapped(payload)[0]
            assert first == again
            fields = CODEC.to_fields(first)
            assert CODEC.from_fields(fields) == first


def test_a_properties_section_0_9_1_cannot_hold_is_kept_whatever_the_cache_holds():
    props = Properties(message_id="m", to="/queue/elsewhere")
    raw = mapped(encode(props) + encode(Data(value=b"b")))[0]
    assert PROPERTIES_HEADER in CODEC.to_fields(raw)["headers"]


def test_a_delivered_message_is_its_sections_and_the_body_as_it_is():
    payload = (
        encode(Header(durable=True, priority=UInt(3)))
        + encode(Properties(message_id="id-1", correlation_id="c"))
        + encode(Data(value=b"z" * 300))
    )
    message, _ = to_engine(CODEC, "", "q", payload)
    for delivery_count in (0, 2, 0):
        sections = decode_all(from_engine(message, delivery_count))
        header, annotations, props, data = sections
        assert header == Header(
            durable=True,
            priority=3,
            delivery_count=UInt(delivery_count) if delivery_count else None,
        )
        assert isinstance(annotations, MessageAnnotations)
        assert (props.message_id, props.correlation_id, props.subject) == ("id-1", "c", "q")
        assert data == Data(value=b"z" * 300)
    with_app = payload + encode(ApplicationProperties(value={"k": "v"}))
    message, _ = to_engine(CODEC, "", "q", with_app)
    assert decode_all(from_engine(message, 0))[3] == ApplicationProperties(value={"k": "v"})


def test_a_data_section_head_is_the_encoding_up_to_the_value():
    for size in (0, 1, 255, 256, 70_000):
        value = b"v" * size
        assert data_section_head(size) + value == encode(Data(value=value))


def test_a_message_whose_sections_before_the_body_repeat_maps_as_the_first_did():
    head = encode(Header(durable=True)) + encode(Properties(message_id="m", subject="s"))
    head += encode(ApplicationProperties(value={"k": 1}))
    first = to_engine(CODEC, "amq.topic", None, head + encode(Data(value=b"one")))
    again = to_engine(CODEC, "amq.topic", None, head + encode(Data(value=b"two" * 100)))
    other = to_engine(CODEC, "amq.topic", "key", head + encode(Data(value=b"one")))
    assert first[1] == again[1] == "s"
    assert (first[0].raw_properties, first[0].routing_key) == (
        again[0].raw_properties,
        again[0].routing_key,
    )
    assert (first[0].body, again[0].body) == (b"one", b"two" * 100)
    assert first[0].persistent and again[0].persistent
    assert other[0].routing_key == "key"


def test_a_body_that_is_not_binary_is_refused_every_time():
    payload = EMPTY_HEADER + bytes.fromhex("005375 a1 02") + b"no"  # data holding a string
    for _ in range(2):
        try:
            to_engine(CODEC, "", "q", payload)
        except Exception as refused:
            assert "Data" in str(refused)
        else:
            raise AssertionError("a data section holding a string was taken")
