"""Protocol violations at the wire, sent with a raw socket: each must end the offending
connection (or channel) exactly as RabbitMQ does (same code, text, class/method, scope) while
another connection keeps working. The broker must also survive any bytes at all."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import commands

from tests.support.raw_amqp import (
    PROTOCOL_HEADER,
    RawClient,
    content_header_frame,
    heartbeat_frame,
    host_port,
    method_frame,
    raw_frame,
)

DROPPED = "socket closed without a close method"
Outcome = tuple[str, int, str, int, int] | str
Scenario = Callable[[RawClient], None]


def outcome(client: RawClient, timeout: float = 5.0) -> Outcome:
    closed = client.wait_closed(timeout=timeout)
    if closed is None:
        return DROPPED
    return closed.scope, closed.reply_code, closed.reply_text, closed.class_id, closed.method_id


def conn(code: int, text: str, class_id: int = 0, method_id: int = 0) -> Outcome:
    return "connection", code, text, class_id, method_id


def publish_start(c: RawClient, channel: int = 1) -> None:
    c.send_method(channel, commands.Basic.Publish(exchange="", routing_key="nowhere"))


def _opened(c: RawClient, **tune: int) -> RawClient:
    c.open(**tune)
    c.open_channel(1)
    return c


def _payload(class_id: int, method_id: int, fields: bytes = b"") -> bytes:
    return struct.pack(">HH", class_id, method_id) + fields


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
        lambda c: c.send(raw_frame(1, 1, _payload(60, 40, b"x" * 5000))),
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
    "unknown method id": (lambda c: c.send(raw_frame(1, 1, _payload(60, 99))), DROPPED),
    "unknown class id": (lambda c: c.send(raw_frame(1, 1, _payload(99, 10))), DROPPED),
    "unknown method on channel 0": (lambda c: c.send(raw_frame(1, 0, _payload(10, 99))), DROPPED),
    "unknown method on an unopened channel": (
        lambda c: c.send(raw_frame(1, 5, _payload(60, 99))),
        DROPPED,
    ),
    "arguments cut short": (
        lambda c: c.send(raw_frame(1, 1, _payload(50, 10, b"\x00"))),
        conn(501, "FRAME_ERROR - cannot decode <<0>>", 50, 10),
    ),
    "trailing bytes after the arguments": (
        lambda c: c.send(raw_frame(1, 1, _payload(60, 10, b"\x00" * 12))),
        conn(501, "FRAME_ERROR - cannot decode <<0,0,0,0,0,0,0,0,0,0,0,0>>", 60, 10),
    ),
    "short string that is not UTF-8": (
        lambda c: c.send(
            raw_frame(1, 1, _payload(50, 10, b"\x00\x00\x02q\xe9\x08\x00\x00\x00\x00"))
        ),
        conn(501, "FRAME_ERROR - Malformed UTF-8 in shortstr"),
    ),
    "field table with an unknown type": (
        lambda c: c.send(
            raw_frame(1, 1, _payload(50, 10, b"\x00\x00\x01q\x00\x00\x00\x00\x04\x01aZ\x00"))
        ),
        DROPPED,
    ),
    "field table entry longer than the table": (
        lambda c: c.send(
            raw_frame(
                1, 1, _payload(50, 10, b"\x00\x00\x01q\x00\x00\x00\x00\x09\x01aS\x00\x00\x00\x09ab")
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
        lambda c: c.send(raw_frame(1, 0, _payload(10, 50, b"\x00"))),
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
        lambda c: c.send(raw_frame(1, 1, _payload(60, 40, b"\x00\x00\x05ab"))),
        conn(501, "FRAME_ERROR - cannot decode <<0,0,5,97,98>>", 60, 40),
    ),
    "basic.ack with trailing bytes": (
        lambda c: c.send(raw_frame(1, 1, _payload(60, 80, b"\x00" * 10))),
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


def _witness(url: str) -> RawClient:
    """Another connection, open before the bad one and used after it."""
    return _opened(RawClient(url))


def _still_works(witness: RawClient) -> None:
    witness.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
    assert witness.expect("Queue.DeclareOk").queue.startswith("amq.gen-")
    witness.send_method(
        0, commands.Connection.Close(reply_code=200, reply_text="", class_id=0, method_id=0)
    )
    witness.expect("Connection.CloseOk")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_wire_error(amqp_url, name):
    send, expected = SCENARIOS[name]
    with _witness(amqp_url) as witness, _opened(RawClient(amqp_url), frame_max=4096) as bad:
        send(bad)
        assert outcome(bad) == expected
        _still_works(witness)


def test_channel_number_is_not_checked_against_channel_max(amqp_url):
    """RabbitMQ counts open channels against channel_max; the number itself may be anything."""
    with RawClient(amqp_url).open(channel_max=10) as c:
        c.send_method(11, commands.Channel.Open())
        c.send_method(65535, commands.Channel.Open())
        assert [c.read_frame()[0], c.read_frame()[0]] == [11, 65535]


def test_channel_count_above_channel_max(amqp_url):
    with _witness(amqp_url) as witness, RawClient(amqp_url).open(channel_max=2) as c:
        c.open_channel(1)
        c.open_channel(7)
        c.send_method(3, commands.Channel.Open())
        assert outcome(c) == conn(
            530,
            "NOT_ALLOWED - number of channels opened (2) has reached the negotiated "
            "channel_max (2)",
        )
        _still_works(witness)


def test_frames_before_an_error_are_processed(amqp_url):
    """A good frame and a bad one in one packet: the good one is answered first."""
    with RawClient(amqp_url).open() as c:
        c.send(
            method_frame(1, commands.Channel.Open())
            + method_frame(1, commands.Basic.Qos(prefetch_count=1))
            + raw_frame(1, 1, _payload(60, 10, b"\x00"), end=b"\x00")
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
        c.send(raw_frame(1, 1, _payload(60, 10, b"\x00" * 4093)))
        assert outcome(c) == conn(
            501, "FRAME_ERROR - type 1, all octets = <<>>: {frame_too_large,4097,4088}"
        )


# ---------------------------------------------------------------------- before open
def _start(c: RawClient) -> None:
    c.send(PROTOCOL_HEADER)
    c.expect("Connection.Start")


HANDSHAKE_SCENARIOS: dict[str, Scenario] = {
    "tune-ok frame_max below 4096": lambda c: c.handshake(frame_max=100),
    "tune-ok frame_max above ours": lambda c: c.handshake(frame_max=1_000_000),
    "tune-ok frame_max 0": lambda c: c.handshake(frame_max=0),
    "tune-ok channel_max above ours": lambda c: c.handshake(channel_max=5000),
    "tune-ok channel_max 0": lambda c: c.handshake(channel_max=0),
    "unknown mechanism": lambda c: c.handshake(mechanism="FOO"),
    "refused login without authentication_failure_close": lambda c: c.handshake(
        response=b"\0guest\0wrong", capabilities={}
    ),
    "connection.open before start-ok": lambda c: (
        _start(c),
        c.send_method(0, commands.Connection.Open()),
    ),
    "heartbeat on a channel during the handshake": lambda c: (
        _start(c),
        c.send(heartbeat_frame(1)),
    ),
    "bad frame-end byte during the handshake": lambda c: (
        _start(c),
        c.send(raw_frame(1, 0, _payload(10, 11), end=b"\x00")),
    ),
    "channel method during the handshake": lambda c: (
        _start(c),
        c.send_method(1, commands.Channel.Open()),
    ),
}


def test_handshake_errors_close_the_socket_silently(amqp_url):
    """Before connection.open-ok RabbitMQ closes without a close method (after a 3 s pause we
    do not copy). Run concurrently so the real broker's pauses overlap."""

    def run(send: Scenario) -> Outcome:
        with RawClient(amqp_url, timeout=10) as c:
            send(c)
            return outcome(c, timeout=8)

    with _witness(amqp_url) as witness, ThreadPoolExecutor(len(HANDSHAKE_SCENARIOS)) as pool:
        futures = {name: pool.submit(run, send) for name, send in HANDSHAKE_SCENARIOS.items()}
        results = {name: future.result() for name, future in futures.items()}
        assert results == dict.fromkeys(HANDSHAKE_SCENARIOS, DROPPED)
        _still_works(witness)


# ---------------------------------------------------------------------- protocol header
def _header_reply(url: str, header: bytes) -> tuple[bytes, bool]:
    """What the broker answers to `header`, and whether it then closed the socket."""
    with socket.create_connection(host_port(url), timeout=5) as sock:
        sock.sendall(header)
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
        return data, True


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x00\x01\x00\x00",  # AMQP 1.0
        b"AMQP\x03\x01\x00\x00",  # AMQP 1.0 SASL
        b"AMQP\x00\x00\x09\x00",  # 0-9-0
        b"AMQP\x00\x00\x08\x00",  # 0-8
        b"garbage!",
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x16\x03\x01\x00\x10\x01abc",  # TLS client hello
    ],
)
def test_other_protocol_headers_get_ours_back_and_a_close(amqp_url, header):
    assert _header_reply(amqp_url, header) == (PROTOCOL_HEADER, True)


def test_amqp_0_9_header_is_served_as_0_9_1(amqp_url):
    with RawClient(amqp_url) as c:
        c.send(b"AMQP\x01\x01\x00\x09")
        start = c.expect("Connection.Start")
        assert (start.version_major, start.version_minor) == (0, 9)


def test_partial_header_waits_for_eight_bytes(amqp_url):
    with RawClient(amqp_url) as c:
        c.send(b"AMQ")
        with pytest.raises(TimeoutError):
            c.read_frame(timeout=0.3)
        c.send(b"P\x00\x00\x09\x01")
        assert c.expect("Connection.Start") is not None


# ---------------------------------------------------------------------- fuzzing
def _fresh_connection_works(url: str) -> None:
    with _opened(RawClient(url)) as c:
        _still_works(c)


def _throw(url: str, data: bytes, handshake: bool) -> None:
    """Send `data` (after a handshake, or instead of one) and read whatever comes back for a
    moment; the broker may close, answer, or wait for more."""
    with RawClient(url, timeout=2) as c:
        if handshake:
            _opened(c)
        try:
            c.send(data)
            deadline = time.monotonic() + 0.02
            while time.monotonic() < deadline:
                if not c.recv_bytes(max(0.001, deadline - time.monotonic())):
                    break
        except (TimeoutError, ConnectionError):
            pass


def _frame(ftype: int, channel: int, payload: bytes, end: bytes) -> bytes:
    return struct.pack(">BHI", ftype, channel, len(payload)) + payload + end


_channels = st.integers(0, 3)
_any_frame = st.builds(
    _frame,
    st.sampled_from([1, 2, 3, 4, 8, 9]),
    _channels,
    st.binary(max_size=64),
    st.sampled_from([b"\xce", b"\x00", b""]),
)
# Known methods with random arguments reach the decoders and the method handlers.
_method_frame = st.builds(
    lambda index, channel, args: _frame(1, channel, struct.pack(">I", index) + args, b"\xce"),
    st.sampled_from(sorted(commands.INDEX_MAPPING)),
    _channels,
    st.binary(max_size=48),
)
_fuzz_bytes = st.binary(max_size=300) | st.lists(
    _any_frame | _method_frame, min_size=1, max_size=4
).map(b"".join)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_fuzz_bytes, handshake=st.booleans())
def test_broker_survives_any_bytes(broker_url, caplog, data, handshake):
    """No input reaches an unexpected exception (which would be logged as an error) and the
    broker keeps accepting connections."""
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        _throw(broker_url, data, handshake)
        _fresh_connection_works(broker_url)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
