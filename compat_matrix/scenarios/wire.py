"""Connection handshake and protocol violations, sent with the raw client."""

from __future__ import annotations

import struct
import time
from typing import Any

from pamqp import commands

from compat_matrix.clients import closed_within, frames, outcome
from compat_matrix.registry import scenario
from compat_matrix.session import Session
from tests.support.raw_amqp import PROTOCOL_HEADER, content_header_frame, method_frame, raw_frame

LOGIN = "Login was refused using authentication mechanism"


def _reply_to_header(s: Session, header: bytes) -> list[Any]:
    """What the broker answers to a protocol header: a header of its own (refused) or the
    class/method and version of the connection.start it sends (accepted)."""
    raw = s.raw(open_=False)
    raw.send(header)
    data = b""
    deadline = time.monotonic() + 2
    while len(data) < 13 and time.monotonic() < deadline:
        try:
            chunk = raw.recv_bytes(max(0.01, deadline - time.monotonic()))
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        data += chunk
    if data.startswith(b"AMQP"):
        return ["protocol header", data[:8].hex(), closed_within(raw, 1.0)]
    if len(data) >= 13:
        class_id, method_id, major, minor = struct.unpack(">HHBB", data[7:13])
        return ["frame", data[0], f"{class_id}/{method_id}", f"version {major}-{minor}"]
    return ["bytes", data.hex()]


@scenario("wire.header.wrong_version", "connection.handshake")
def wrong_header(s: Session) -> None:
    """Unsupported protocol headers get the 0-9-1 header back and the socket closed."""
    for header in (b"AMQP\x00\x00\x09\x00", b"AMQP\x00\x01\x00\x00", b"GET / HTTP/1.1\r\n\r\n"):
        s.log(repr(header), _reply_to_header(s, header))


@scenario("wire.header.amqp_0_9", "connection.handshake")
def header_0_9(s: Session) -> None:
    """The old 0-9 header (AMQP 1 1 0 9) is accepted with a 0-9 connection.start."""
    s.log("0-9", _reply_to_header(s, b"AMQP\x01\x01\x00\x09"))


@scenario("wire.header.amqp_0_8", "connection.handshake")
def header_0_8(s: Session) -> None:
    """The AMQP 0-8 header (AMQP 1 1 8 0)."""
    s.log("0-8", _reply_to_header(s, b"AMQP\x01\x01\x08\x00"))


@scenario("wire.handshake.start_and_tune", "connection.handshake")
def start_and_tune(s: Session) -> None:
    """connection.start offers PLAIN AMQPLAIN, en_US and RabbitMQ's capabilities; tune offers
    channel_max 2047, frame_max 131072, heartbeat 60. rabbitish's own `rabbitish.*` capability
    keys are left out here (RabbitMQ has none): tests/integration/test_connection.py checks
    them."""
    raw = s.raw()
    start, tune = raw.start, raw.tune
    s.log("version", [start.version_major, start.version_minor])
    s.log("mechanisms", [start.mechanisms, start.locales])
    props = start.server_properties
    s.log("server properties", sorted(props))
    s.log("product", props.get("product"))
    capabilities = props.get("capabilities") or {}
    s.log("capabilities", {k: v for k, v in capabilities.items() if not k.startswith("rabbitish.")})
    s.log("tune", [tune.channel_max, tune.frame_max, tune.heartbeat])


@scenario("wire.handshake.wrong_password", "connection.handshake", "error.403")
def wrong_password(s: Session) -> None:
    """A client with authentication_failure_close gets 403 for wrong credentials."""
    raw = s.raw(open_=False)
    raw.handshake(response=b"\0guest\0wrong")
    s.log("closed", outcome(raw))


@scenario("wire.handshake.wrong_password_silent", "connection.handshake", "connection.close")
def wrong_password_silent(s: Session) -> None:
    """Without authentication_failure_close a refused login just ends the connection."""
    raw = s.raw(open_=False)
    raw.handshake(response=b"\0guest\0wrong", capabilities={})
    s.log("closed", outcome(raw, 4.0))


@scenario("wire.handshake.socket_close_delay", "connection.handshake", "connection.close")
def socket_close_delay(s: Session) -> None:
    """How soon the socket goes after a refused handshake (a mechanism not offered)."""
    raw = s.raw(open_=False)
    raw.send(PROTOCOL_HEADER)
    raw.expect("Connection.Start")
    start_ok = commands.Connection.StartOk(
        client_properties={"product": "compat"}, mechanism="EXTERNAL", response="", locale="en_US"
    )
    raw.send_method(0, start_ok)
    s.log("socket closed within 1 s", closed_within(raw, 1.0))


@scenario("wire.handshake.unknown_vhost", "connection.handshake", "error.530")
def unknown_vhost(s: Session) -> None:
    """connection.open of a vhost that does not exist: 530."""
    raw = s.raw(open_=False)
    raw.handshake(vhost="/nope")
    s.log("closed", outcome(raw))


@scenario("wire.handshake.frame_max_below_minimum", "connection.handshake", "connection.close")
def frame_max_low(s: Session) -> None:
    """tune-ok with frame_max below 4096 ends the connection without a close method."""
    raw = s.raw(open_=False)
    raw.handshake(frame_max=1024)
    s.log("closed", outcome(raw, 4.0))


def _opened(s: Session, **tune: Any) -> Any:
    raw = s.raw(**tune)
    raw.open_channel(1)
    return raw


def _payload(class_id: int, method_id: int, fields: bytes = b"") -> bytes:
    return struct.pack(">HH", class_id, method_id) + fields


@scenario("wire.frame.bad_frame_end", "error.501", "connection.close")
def bad_frame_end(s: Session) -> None:
    """A bad frame-end octet: 501 FRAME_ERROR; then how soon the socket goes after close-ok."""
    raw = _opened(s)
    raw.send(method_frame(1, commands.Basic.Qos())[:-1] + b"\x00")
    s.log("closed", outcome(raw))
    s.log("socket closed within 1 s of close-ok", closed_within(raw, 1.0))


FRAME_ERRORS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "unknown frame type": (lambda c: c.send(raw_frame(9, 0, b"abc")), ("error.501",)),
    "frame too large": (
        lambda c: c.send(raw_frame(3, 1, b"x" * 200000)),
        ("error.501",),
    ),
    "truncated method": (
        lambda c: c.send(raw_frame(1, 1, _payload(50, 10, b"\x00\x00"))),
        ("error.501",),
    ),
    "header without method": (lambda c: c.send(content_header_frame(1, 5)), ("error.505",)),
    "body where header belongs": (
        lambda c: (
            c.send_method(1, commands.Basic.Publish(routing_key="q")),
            c.send(raw_frame(3, 1, b"abc")),
        ),
        ("error.505",),
    ),
    "method where body belongs": (
        lambda c: (
            c.send_method(1, commands.Basic.Publish(routing_key="q")),
            c.send(content_header_frame(1, 10)),
            c.send_method(1, commands.Basic.Qos()),
        ),
        ("error.505",),
    ),
    "heartbeat on a channel": (lambda c: c.send(raw_frame(8, 1, b"")), ("error.505",)),
    "content header on channel 0": (lambda c: c.send(content_header_frame(0, 3)), ("error.505",)),
    "empty body frame after empty content": (
        lambda c: (
            c.send_method(1, commands.Basic.Publish(routing_key="q")),
            c.send(content_header_frame(1, 0)),
            c.send(raw_frame(3, 1, b"")),
        ),
        ("error.505", "content.bodies"),
    ),
    "second channel.open": (lambda c: c.send_method(1, commands.Channel.Open()), ("error.504",)),
    "method on a never-opened channel": (
        lambda c: c.send_method(5, commands.Queue.Declare(queue="q")),
        ("error.504",),
    ),
    "channel method on channel 0": (
        lambda c: c.send_method(0, commands.Basic.Qos()),
        ("error.504",),
    ),
    "server method from the client": (
        lambda c: c.send_method(1, commands.Queue.DeclareOk("q", 0, 0)),
        ("error.503",),
    ),
    "channel.flow active=false": (
        lambda c: c.send_method(1, commands.Channel.Flow(active=False)),
        ("error.540", "channel.lifecycle"),
    ),
    "recover-async requeue=false": (
        lambda c: c.send(raw_frame(1, 1, _payload(60, 100, b"\x00"))),  # recover-async
        ("error.540", "basic.recover"),
    ),
    "invalid UTF-8 queue name": (
        lambda c: c.send(
            raw_frame(1, 1, _payload(50, 10, b"\x00\x00\x02\xff\xfe\x00\x00\x00\x00\x00"))
        ),
        ("error.501", "queue.declare"),
    ),
}


def _frame_error(key: str, send: Any, features: tuple[str, ...]) -> None:
    def steps(s: Session) -> None:
        raw = _opened(s)
        send(raw)
        s.log("closed", outcome(raw))

    steps.__doc__ = f"Protocol violation: {key}."
    name = "wire.frame." + key.replace(" ", "_").replace("=", "_").replace(".", "_")
    scenario(name, *features, "connection.close")(steps)


for _key, (_send, _features) in FRAME_ERRORS.items():
    _frame_error(_key, _send, _features)


@scenario("wire.channel.flow_true_and_reopen", "channel.lifecycle")
def flow_and_reopen(s: Session) -> None:
    """channel.flow(true) is answered; a closed channel number can be opened again."""
    raw = _opened(s)
    raw.send_method(1, commands.Channel.Flow(active=True))
    s.log("flow", frames(raw, "Channel.FlowOk"))
    raw.send_method(1, commands.Channel.Close(200, "bye", 0, 0))
    s.log("close", frames(raw, "Channel.CloseOk"))
    raw.send_method(1, commands.Channel.Open())
    s.log("reopen", frames(raw, "Channel.OpenOk"))
    raw.send(raw_frame(1, 1, _payload(60, 100, b"\x01")))  # recover-async, requeue
    raw.send_method(1, commands.Basic.Qos())
    s.log("recover-async true then qos", frames(raw, "Basic.QosOk"))


@scenario("wire.channel.above_channel_max", "channel.lifecycle")
def above_channel_max(s: Session) -> None:
    """Opening a channel number above the negotiated channel_max."""
    raw = s.raw(channel_max=10)
    raw.send_method(11, commands.Channel.Open())
    s.log("replies", frames(raw, None, 1.0))


@scenario("wire.content.frame_sizes", "content.bodies")
def frame_sizes(s: Session) -> None:
    """Bodies are split at frame_max - 8; an empty body has no body frame."""
    q = s.name("q")
    raw = _opened(s, frame_max=4096)
    raw.send_method(1, commands.Queue.Declare(queue=q))
    raw.expect("Queue.DeclareOk")
    for size in (10000, 0):
        publish = method_frame(1, commands.Basic.Publish(routing_key=q))
        chunks = [raw_frame(3, 1, b"x" * 4000)] * (size // 4000)
        if size % 4000:
            chunks.append(raw_frame(3, 1, b"x" * (size % 4000)))
        raw.send(publish + content_header_frame(1, size) + b"".join(chunks))
    sizes: list[Any] = []
    for _ in range(2):
        raw.send_method(1, commands.Basic.Get(queue=q, no_ack=True))
        sizes.append(_body_frames(raw))
    s.log("body frames", sizes)


def _body_frames(raw: Any) -> list[Any]:
    """The frames of one basic.get reply: method, header (with body size), body frame sizes."""
    out: list[Any] = []
    body_size, received = -1, 0
    while body_size < 0 or received < body_size:
        got = raw.read_raw_frame(3.0)
        if got is None:
            return [*out, "closed"]
        ftype, _channel, payload = got
        if ftype == 1:
            out.append("method")
        elif ftype == 2:
            body_size = struct.unpack(">Q", payload[4:12])[0]
            out.append(["header", body_size])
        elif ftype == 3:
            received += len(payload)
            out.append(len(payload))
    return out
