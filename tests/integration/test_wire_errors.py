"""Protocol violations at the wire, sent with a raw socket: each must end the offending
connection (or channel) exactly as RabbitMQ does (same code, text, class/method, scope) while
another connection keeps working."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands

from tests.support.raw_amqp import (
    RawClient,
    content_header_frame,
    heartbeat_frame,
    method_frame,
    raw_frame,
)
from tests.support.wire import (
    DROPPED,
    Outcome,
    Scenario,
    conn,
    method_payload,
    opened,
    outcome,
    publish_start,
    still_works,
    witness_client,
)

# Each scenario runs on an open connection with channel 1 open (unless it says otherwise);
# the expected outcomes are what RabbitMQ 3.10.8 does.
SCENARIOS: dict[str, tuple[Scenario, Outcome]] = {
    "garbage after the handshake": (
        lambda c: c.send(b"hello garbage bytes!!"),
        conn(
            501,
            "FRAME_ERROR - type 104, all octets = <<>>: {frame_too_large,1819222119,4088}",
        ),
    ),
    "frame bigger than the negotiated frame_max": (
        lambda c: c.send(raw_frame(1, 1, method_payload(60, 40, b"x" * 5000))),
        conn(501, "FRAME_ERROR - type 1, all octets = <<>>: {frame_too_large,5004,4088}"),
    ),
    "bad frame-end byte": (
        lambda c: c.send(method_frame(1, commands.Basic.Qos())[:-1] + b"\x00"),
        conn(
            501,
            "FRAME_ERROR - type 1, all octets = <<0,60,0,10,0,0,0,0,0,0,0>>: "
            "{invalid_frame_end_marker,0}",
        ),
    ),
    "method on an unopened channel": (
        lambda c: c.send_method(3, commands.Basic.Qos()),
        conn(504, "CHANNEL_ERROR - expected 'channel.open'", 60, 10),
    ),
    "content header on an unopened channel": (
        lambda c: c.send(content_header_frame(3, 5)),
        conn(505, "UNEXPECTED_FRAME - expected method frame, got non method frame instead"),
    ),
    "channel.close-ok on an unopened channel": (
        lambda c: c.send_method(4, commands.Channel.CloseOk()),
        conn(504, "CHANNEL_ERROR - expected 'channel.open'", 20, 41),
    ),
    "channel.open on an open channel": (
        lambda c: c.send_method(1, commands.Channel.Open()),
        conn(504, "CHANNEL_ERROR - second 'channel.open' seen", 20, 10),
    ),
    "content header without a publish": (
        lambda c: c.send(content_header_frame(1, 5)),
        conn(505, "UNEXPECTED_FRAME - expected method frame, got non method frame instead"),
    ),
    "body frame where the content header belongs": (
        lambda c: (publish_start(c), c.send(raw_frame(3, 1, b"hello"))),
        conn(
            505,
            "UNEXPECTED_FRAME - expected content header for class 60, "
            "got non content header frame instead",
            60,
            40,
        ),
    ),
    "method where the content header belongs": (
        lambda c: (publish_start(c), c.send_method(1, commands.Basic.Qos())),
        conn(
            505,
            "UNEXPECTED_FRAME - expected content header for class 60, "
            "got non content header frame instead",
            60,
            40,
        ),
    ),
    "content header of another class": (
        lambda c: (publish_start(c), c.send(raw_frame(2, 1, struct.pack(">HHQH", 50, 0, 5, 0)))),
        conn(
            505,
            "UNEXPECTED_FRAME - expected content header for class 60, got one for class 50 instead",
            60,
            40,
        ),
    ),
    "method where the body belongs": (
        lambda c: (
            publish_start(c),
            c.send(content_header_frame(1, 5)),
            c.send_method(1, commands.Basic.Qos()),
        ),
        conn(
            505,
            "UNEXPECTED_FRAME - expected content body, got non content body frame instead",
            60,
            40,
        ),
    ),
    "content header too short to parse": (
        lambda c: (publish_start(c), c.send(raw_frame(2, 1, struct.pack(">HHQ", 60, 0, 5)[:-1]))),
        conn(501, "FRAME_ERROR - type 2, all octets = <<0,60,0,0,0,0,0,0,0,0,0>>: unknown_frame"),
    ),
    "heartbeat on a non-zero channel": (
        lambda c: c.send(heartbeat_frame(1)),
        conn(505, "UNEXPECTED_FRAME - type 8, all octets = <<>>"),
    ),
    "heartbeat on an unopened channel": (
        lambda c: c.send(heartbeat_frame(5)),
        conn(505, "UNEXPECTED_FRAME - type 8, all octets = <<>>"),
    ),
    "heartbeat with a payload": (
        lambda c: c.send(raw_frame(8, 0, b"x")),
        conn(501, 'FRAME_ERROR - type 8, all octets = <<"x">>: unknown_frame'),
    ),
    "unknown frame type": (
        lambda c: c.send(raw_frame(7, 0, b"")),
        conn(501, "FRAME_ERROR - type 7, all octets = <<>>: unknown_frame"),
    ),
    "method frame shorter than its ids": (
        lambda c: c.send(raw_frame(1, 1, b"\x00")),
        conn(501, "FRAME_ERROR - type 1, all octets = <<0>>: unknown_frame"),
    ),
    "unknown method id": (lambda c: c.send(raw_frame(1, 1, method_payload(60, 99))), DROPPED),
    "unknown class id": (lambda c: c.send(raw_frame(1, 1, method_payload(99, 10))), DROPPED),
    "unknown method on channel 0": (
        lambda c: c.send(raw_frame(1, 0, method_payload(10, 99))),
        DROPPED,
    ),
    "unknown method on an unopened channel": (
        lambda c: c.send(raw_frame(1, 5, method_payload(60, 99))),
        DROPPED,
    ),
    "arguments cut short": (
        lambda c: c.send(raw_frame(1, 1, method_payload(50, 10, b"\x00"))),
        conn(501, "FRAME_ERROR - cannot decode <<0>>", 50, 10),
    ),
    "trailing bytes after the arguments": (
        lambda c: c.send(raw_frame(1, 1, method_payload(60, 10, b"\x00" * 12))),
        conn(501, "FRAME_ERROR - cannot decode <<0,0,0,0,0,0,0,0,0,0,0,0>>", 60, 10),
    ),
    "short string that is not UTF-8": (
        lambda c: c.send(
            raw_frame(1, 1, method_payload(50, 10, b"\x00\x00\x02q\xe9\x08\x00\x00\x00\x00"))
        ),
        conn(501, "FRAME_ERROR - Malformed UTF-8 in shortstr"),
    ),
    "field table with an unknown type": (
        lambda c: c.send(
            raw_frame(1, 1, method_payload(50, 10, b"\x00\x00\x01q\x00\x00\x00\x00\x04\x01aZ\x00"))
        ),
        DROPPED,
    ),
    "field table entry longer than the table": (
        lambda c: c.send(
            raw_frame(
                1,
                1,
                method_payload(
                    50, 10, b"\x00\x00\x01q\x00\x00\x00\x00\x09\x01aS\x00\x00\x00\x09ab"
                ),
            )
        ),
        DROPPED,
    ),
    "content header on channel 0": (
        lambda c: c.send(content_header_frame(0, 5)),
        conn(505, "UNEXPECTED_FRAME - type 2, all octets = <<0,60,0,0,0,0,0,0,0,0,0,5,0,0>>"),
    ),
    "body on channel 0": (
        lambda c: c.send(raw_frame(3, 0, b"abc")),
        conn(505, 'UNEXPECTED_FRAME - type 3, all octets = <<"abc">>'),
    ),
    "latin-1 bytes are echoed raw": (
        lambda c: c.send(raw_frame(3, 0, b"\xe9t\xe9")),
        conn(505, 'UNEXPECTED_FRAME - type 3, all octets = <<"\udce9t\udce9">>'),
    ),
    "long binary wraps at 80 columns": (
        lambda c: c.send(raw_frame(3, 0, b"\x80" * 20)),
        conn(
            505,
            "UNEXPECTED_FRAME - type 3, first 16 octets = <<128,128,128,128,128,128,128,128,"
            "128,128,128,128,\n                            128,128,128,128>>",
        ),
    ),
    "channel method on channel 0": (
        lambda c: c.send_method(0, commands.Basic.Qos()),
        conn(504, "CHANNEL_ERROR - unexpected method in connection state running", 60, 10),
    ),
    "second connection.open": (
        lambda c: c.send_method(0, commands.Connection.Open()),
        conn(504, "CHANNEL_ERROR - unexpected method in connection state running", 10, 40),
    ),
    "connection.blocked from the client": (
        lambda c: c.send_method(0, commands.Connection.Blocked(reason="x")),
        conn(504, "CHANNEL_ERROR - unexpected method in connection state running", 10, 60),
    ),
    "unsolicited connection.close-ok": (
        lambda c: c.send_method(0, commands.Connection.CloseOk()),
        conn(504, "CHANNEL_ERROR - unexpected method in connection state running", 10, 51),
    ),
    "malformed connection method": (
        lambda c: c.send(raw_frame(1, 0, method_payload(10, 50, b"\x00"))),
        conn(541, "INTERNAL_ERROR"),
    ),
    "connection method on a channel": (
        lambda c: c.send_method(1, commands.Connection.Blocked(reason="x")),
        conn(503, "COMMAND_INVALID - unimplemented method", 10, 60),
    ),
    "unsolicited channel.flow-ok": (
        lambda c: c.send_method(1, commands.Channel.FlowOk(active=True)),
        conn(503, "COMMAND_INVALID - unimplemented method", 20, 21),
    ),
    "queue.declare-ok from the client": (
        lambda c: c.send_method(
            1, commands.Queue.DeclareOk(queue="q", message_count=0, consumer_count=0)
        ),
        conn(503, "COMMAND_INVALID - unimplemented method", 50, 11),
    ),
    "basic.publish cut short": (
        lambda c: c.send(raw_frame(1, 1, method_payload(60, 40, b"\x00\x00\x05ab"))),
        conn(501, "FRAME_ERROR - cannot decode <<0,0,5,97,98>>", 60, 40),
    ),
    "basic.ack with trailing bytes": (
        lambda c: c.send(raw_frame(1, 1, method_payload(60, 80, b"\x00" * 10))),
        conn(501, "FRAME_ERROR - cannot decode <<0,0,0,0,0,0,0,0,0,0>>", 60, 80),
    ),
    "body longer than announced": (
        lambda c: (
            publish_start(c),
            c.send(content_header_frame(1, 3)),
            c.send(raw_frame(3, 1, b"abcdef")),
            c.send_method(1, commands.Basic.Qos()),
        ),
        conn(
            505,
            "UNEXPECTED_FRAME - expected content body, got non content body frame instead",
            60,
            40,
        ),
    ),
    "content header without property flags": (
        lambda c: (publish_start(c), c.send(raw_frame(2, 1, struct.pack(">HHQ", 60, 0, 0)))),
        conn(541, "INTERNAL_ERROR"),
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_wire_error(amqp_url, name):
    send, expected = SCENARIOS[name]
    with witness_client(amqp_url) as witness, opened(RawClient(amqp_url), frame_max=4096) as bad:
        send(bad)
        assert outcome(bad) == expected
        still_works(witness)


def test_channel_number_is_not_checked_against_channel_max(amqp_url):
    """RabbitMQ counts open channels against channel_max; the number itself may be anything."""
    with RawClient(amqp_url).open(channel_max=10) as c:
        c.send_method(11, commands.Channel.Open())
        c.send_method(65535, commands.Channel.Open())
        # Each channel answers on its own; RabbitMQ may send the two open-oks in either order.
        assert sorted([c.read_frame()[0], c.read_frame()[0]]) == [11, 65535]


def test_channel_count_above_channel_max(amqp_url):
    with witness_client(amqp_url) as witness, RawClient(amqp_url).open(channel_max=2) as c:
        c.open_channel(1)
        c.open_channel(7)
        c.send_method(3, commands.Channel.Open())
        assert outcome(c) == conn(
            530,
            "NOT_ALLOWED - number of channels opened (2) has reached the negotiated "
            "channel_max (2)",
        )
        still_works(witness)


def test_frames_before_an_error_are_processed(amqp_url):
    """A good frame and a bad one in one packet: the good one is answered first."""
    with RawClient(amqp_url).open() as c:
        c.send(
            method_frame(1, commands.Channel.Open())
            + method_frame(1, commands.Basic.Qos(prefetch_count=1))
            + raw_frame(1, 1, method_payload(60, 10, b"\x00"), end=b"\x00")
        )
        assert c.expect("Channel.OpenOk") is not None
        assert c.expect("Basic.QosOk") is not None
        assert outcome(c) == conn(
            501, "FRAME_ERROR - type 1, all octets = <<0,60,0,10,0>>: {invalid_frame_end_marker,0}"
        )


def test_payload_of_exactly_frame_max_is_accepted(amqp_url):
    """RabbitMQ tolerates frames up to 8 bytes over frame_max (clients get it wrong)."""
    with RawClient(amqp_url).open(frame_max=4096) as c:
        c.open_channel(1)
        small = commands.Queue.Declare(queue="", exclusive=True, arguments={"x-pad": ""})
        pad = 4096 - (len(method_frame(1, small)) - 8)
        big = commands.Queue.Declare(queue="", exclusive=True, arguments={"x-pad": "a" * pad})
        frame = method_frame(1, big)
        assert len(frame) - 8 == 4096
        c.send(frame)
        assert c.expect("Queue.DeclareOk") is not None
        c.send(raw_frame(1, 1, method_payload(60, 10, b"\x00" * 4093)))
        assert outcome(c) == conn(
            501, "FRAME_ERROR - type 1, all octets = <<>>: {frame_too_large,4097,4088}"
        )
