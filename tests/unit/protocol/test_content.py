"""Content assembly of one channel, driven by header and body payloads (the frames the channel's
state table hands over): the command reaches its handler whole, the channel hears each content
event in order, and oversized, misplaced or malformed content ends as RabbitMQ ends it."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from rabbitish.engine.errors import AMQPError, ConnectionError_, precondition_failed
from rabbitish.protocol.content import BUILT_IN_PLACE, ContentAssembly
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_OVERHEAD,
    VIEWED_BODY_FRAME,
    Payload,
    spare_frames,
)
from rabbitish.protocol.states import ChannelAction, ChannelEvent, ChannelState, channel_rule

PROPERTIES = b"\x10\x00\x02"  # property flags (delivery-mode only), delivery-mode 2
OWNER = object()  # the channel, as the handler's first argument


class Channel:
    """What the assembly reports to: the content events, soft errors, completed commands."""

    def __init__(self, max_size: int = 1000) -> None:
        self.events: list[ChannelEvent] = []
        self.refused: list[AMQPError] = []
        self.commands: list[tuple[Any, ...]] = []
        self.content = ContentAssembly(OWNER, max_size, self.events.append, self.refused.append)

    def publish(self, *args: Any) -> None:
        self.commands.append(args)

    def start(self) -> None:
        self.content.start(self.publish, ("amq.direct", "key", False, False))

    def header(self, body_size: int, class_id: int = 60) -> None:
        payload = struct.pack(">HHQ", class_id, 0, body_size) + PROPERTIES
        rule = channel_rule(ChannelState.AWAIT_HEADER, FRAME_HEADER, payload)
        assert rule.action is ChannelAction.CONTENT_HEADER
        self.content.header_frame(rule, FRAME_HEADER, payload)

    def body(self, payload: Payload) -> None:
        rule = channel_rule(ChannelState.AWAIT_BODY, FRAME_BODY, payload)
        assert rule.action is ChannelAction.CONTENT_BODY
        self.content.body_frame(rule, FRAME_BODY, payload)


E = ChannelEvent


def test_method_header_and_body_frames_make_one_command():
    ch = Channel()
    ch.start()
    ch.header(5)
    ch.body(b"ab")
    assert ch.commands == []
    ch.body(b"cde")
    assert ch.events == [E.CONTENT_METHOD, E.CONTENT_HEADER, E.CONTENT_DONE]
    assert ch.commands == [(OWNER, "amq.direct", "key", False, False, PROPERTIES, b"abcde")]
    assert ch.refused == []


@pytest.mark.parametrize("pieces", [[b"abcde"], [b"ab", b"cde"], [b"a", b"", b"bcd", b"e"]])
def test_a_body_of_views_reaches_the_handler_as_bytes(pieces):
    """Large body frames come as views of the reads (framing.py): the handler gets bytes."""
    ch = Channel()
    ch.start()
    ch.header(5)
    for piece in pieces:
        ch.body(memoryview(bytearray(piece)))
    ((*_, body),) = ch.commands
    assert type(body) is bytes and body == b"abcde"


def test_frame_buffers_of_a_large_body_go_back_to_the_reader_and_the_body_stays():
    """Once a large body is whole, its frames' buffers are the readers' to fill again: the
    handler's body is a copy that refilling them leaves alone."""
    frame_size = VIEWED_BODY_FRAME + FRAME_OVERHEAD + 12_345  # a size no other test takes
    buffers = [bytearray(bytes([n]) * frame_size) for n in (1, 2)]
    ch = Channel(max_size=10 * frame_size)
    ch.start()
    ch.header(2 * (frame_size - FRAME_OVERHEAD))
    for buffer in buffers:
        ch.body(memoryview(buffer)[7 : frame_size - 1])
    ((*_, body),) = ch.commands
    expected = b"\x01" * (frame_size - FRAME_OVERHEAD) + b"\x02" * (frame_size - FRAME_OVERHEAD)
    assert body == expected
    taken = [spare_frames.take(frame_size) for _ in buffers]
    assert {id(buffer) for buffer in taken} == {id(buffer) for buffer in buffers}
    for buffer in taken:
        buffer[:] = b"\xee" * frame_size
    assert body == expected


def test_a_large_body_is_read_into_its_place_and_handed_on_as_bytes():
    """From BUILT_IN_PLACE bytes a body is built in place: the frame reader may read a body
    frame straight into the view `payload_target` hands out (no copy), or the frame arrives
    as a payload of its own and is copied in. The handler gets the bytes object itself, and
    none of the writable views survives the assembly."""
    size = BUILT_IN_PLACE + 10
    ch = Channel(max_size=size)
    ch.start()
    ch.header(size)
    first = ch.content.payload_target(BUILT_IN_PLACE)
    assert first is not None and len(first) == BUILT_IN_PLACE
    first[:] = b"r" * BUILT_IN_PLACE  # as a socket read would
    ch.body(first)
    assert ch.content.payload_target(11) is None  # more than the body has room for
    ch.body(b"c" * 10)
    ((*_, body),) = ch.commands
    assert type(body) is bytes and body == b"r" * BUILT_IN_PLACE + b"c" * 10
    with pytest.raises(ValueError):
        first[:1] = b"x"  # released: the body is immutable from here on
    assert ch.content.payload_target(1) is None  # nothing under way


def test_a_large_body_longer_than_announced_never_completes():
    """As with a small one (states.py): the excess is counted, not written past the body."""
    size = BUILT_IN_PLACE
    ch = Channel(max_size=size)
    ch.start()
    ch.header(size)
    ch.body(b"a" * (size - 1))
    ch.body(b"bc")
    assert ch.commands == []


def test_a_large_body_abandoned_for_a_new_command_is_dropped():
    ch = Channel(max_size=2 * BUILT_IN_PLACE)
    ch.start()
    ch.header(2 * BUILT_IN_PLACE)
    stale = ch.content.payload_target(BUILT_IN_PLACE)
    ch.start()
    ch.header(BUILT_IN_PLACE)
    fresh = ch.content.payload_target(BUILT_IN_PLACE)
    assert stale is not None and fresh is not None and fresh.obj is not stale.obj
    fresh[:] = b"n" * BUILT_IN_PLACE
    ch.body(fresh)
    ((*_, body),) = ch.commands
    assert body == b"n" * BUILT_IN_PLACE


def test_a_body_in_one_frame_is_passed_on_as_it_came():
    ch = Channel()
    ch.start()
    ch.header(3)
    frame = b"xyz"
    ch.body(frame)
    assert ch.commands[0][-1] is frame


def test_a_header_announcing_no_body_completes_the_command():
    ch = Channel()
    ch.start()
    ch.header(0)
    assert ch.events == [E.CONTENT_METHOD, E.CONTENT_DONE]
    assert ch.commands == [(OWNER, "amq.direct", "key", False, False, PROPERTIES, b"")]


def test_each_command_starts_afresh():
    ch = Channel()
    for body in (b"one", b"two!"):
        ch.start()
        ch.header(len(body))
        ch.body(body)
    assert [command[-1] for command in ch.commands] == [b"one", b"two!"]


def test_a_body_over_the_limit_is_refused_at_its_header():
    ch = Channel(max_size=4)
    ch.start()
    ch.header(5)
    assert ch.events == [E.CONTENT_METHOD, E.CONTENT_DONE]
    assert ch.commands == []
    [error] = ch.refused
    assert (error.reply_code, error.reply_text) == (
        406,
        "PRECONDITION_FAILED - message size 5 is larger than configured max size 4",
    )
    assert (error.class_id, error.method_id) == (60, 40)


def test_a_header_for_another_class_is_a_connection_error():
    ch = Channel()
    ch.start()
    with pytest.raises(AMQPError) as raised:
        ch.header(5, class_id=50)
    error = raised.value
    assert error.is_hard
    assert error.reply_code == 505
    assert "got one for class 50 instead" in error.reply_text
    assert (error.class_id, error.method_id) == (60, 40)


def test_a_header_without_property_flags_is_a_541():
    ch = Channel()
    ch.start()
    payload = struct.pack(">HHQ", 60, 0, 5)  # no property flags
    with pytest.raises(ConnectionError_) as raised:
        ch.content.header_frame(
            channel_rule(ChannelState.AWAIT_HEADER, FRAME_HEADER, payload), FRAME_HEADER, payload
        )
    assert raised.value.reply_code == 541


def test_a_soft_error_from_the_handler_closes_the_channel_naming_basic_publish():
    ch = Channel()

    def refuse(*args: Any) -> None:
        raise precondition_failed("no")

    ch.content.start(refuse, ())
    ch.header(0)
    [error] = ch.refused
    assert (error.reply_code, error.class_id, error.method_id) == (406, 60, 40)


def test_a_hard_error_from_the_handler_goes_to_the_connection():
    ch = Channel()

    def crash(*args: Any) -> None:
        raise ConnectionError_(541, "")

    ch.content.start(crash, ())
    ch.header(1)
    with pytest.raises(ConnectionError_):
        ch.body(b"x")
    assert ch.refused == []
    assert ch.events[-1] is E.CONTENT_DONE  # the channel is back to reading methods
