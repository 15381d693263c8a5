"""How connections end, sent with the raw client: frame errors once tuned but not yet open, a
commit still in progress when the client closes, the socket kept open after close-ok until
the client hangs up, and refusals a client still sending must be able to read."""

from __future__ import annotations

from typing import Any

from pamqp import commands

from compat_matrix.clients import closed_within, frames, outcome
from compat_matrix.registry import scenario
from compat_matrix.session import Session
from tests.support.raw_amqp import (
    PROTOCOL_HEADER,
    content_header_frame,
    heartbeat_frame,
    method_frame,
    raw_frame,
)

CLOSE = commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
CHANNEL_CLOSE = commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)


def _tuned(s: Session) -> Any:
    """A raw client past tune-ok that has not sent connection.open."""
    raw = s.raw(open_=False)
    raw.send(PROTOCOL_HEADER)
    raw.expect("Connection.Start")
    start_ok = commands.Connection.StartOk(
        client_properties={"product": "compat"},
        mechanism="PLAIN",
        response="\0guest\0guest",
        locale="en_US",
    )
    raw.send_method(0, start_ok)
    tune = raw.expect("Connection.Tune")
    raw.send_method(
        0, commands.Connection.TuneOk(channel_max=tune.channel_max, frame_max=tune.frame_max)
    )
    return raw


AFTER_TUNE: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "bad frame end": (
        method_frame(0, commands.Connection.Open())[:-1] + b"\x00",
        ("error.501",),
    ),
    "frame too large": (raw_frame(1, 0, b"x" * 200000), ("error.501",)),
    "unknown frame type": (raw_frame(9, 0, b"abc"), ("error.501",)),
    "heartbeat on a channel": (heartbeat_frame(1), ("error.505",)),
    "method on a channel": (method_frame(1, commands.Channel.Open()), ("error.505",)),
}


def _after_tune(label: str, data: bytes, features: tuple[str, ...]) -> None:
    key = "wire.after_tune." + label.replace(" ", "_")

    @scenario(key, "connection.handshake", "connection.close", *features)
    def run(s: Session) -> None:
        raw = _tuned(s)
        raw.send(data)
        s.log("closed", outcome(raw))

    run.__doc__ = f"{label} after tune-ok, before connection.open: a close method, not silence."


for _label, (_data, _features) in AFTER_TUNE.items():
    _after_tune(_label, _data, _features)


@scenario("wire.after_tune.truncated_open", "connection.handshake", "connection.close")
def truncated_open(s: Session) -> None:
    """A connection.open too short for its arguments ends the connection without a word."""
    raw = _tuned(s)
    raw.send(raw_frame(1, 0, b"\x00\x0a\x00\x28\x00"))
    s.log("closed", outcome(raw, 4.0))


def _publish(queue: str) -> bytes:
    return (
        method_frame(1, commands.Basic.Publish(routing_key=queue))
        + content_header_frame(1, 3)
        + raw_frame(3, 1, b"abc")
    )


def _in_tx(s: Session) -> tuple[Any, str]:
    queue = s.name("q")
    s.channel().queue_declare(queue)
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Tx.Select())
    raw.expect("Tx.SelectOk")
    return raw, queue


@scenario("tx.close.connection_close_pipelined", "tx.misuse", "connection.close")
def commit_then_connection_close(s: Session) -> None:
    """Publish, tx.commit and connection.close in one write: close-ok is the only answer, and
    nothing follows it (the socket stays until the client hangs up)."""
    raw, queue = _in_tx(s)
    raw.send(_publish(queue) + method_frame(1, commands.Tx.Commit()) + method_frame(0, CLOSE))
    s.log("frames", frames(raw, "Connection.CloseOk"))
    s.log("after close-ok", frames(raw, None, 1.0))
    s.drain(s.channel(s.connect()), queue)


@scenario("tx.close.channel_close_pipelined", "tx.misuse", "channel.lifecycle")
def commit_then_channel_close(s: Session) -> None:
    """Publish, tx.commit and channel.close in one write: the channel closes cleanly (no
    commit-ok) and the commit stands."""
    raw, queue = _in_tx(s)
    raw.send(
        _publish(queue) + method_frame(1, commands.Tx.Commit()) + method_frame(1, CHANNEL_CLOSE)
    )
    s.log("frames", frames(raw, "Channel.CloseOk"))
    s.log("after close-ok", frames(raw, None, 1.0))
    s.drain(s.channel(), queue)


@scenario("tx.close.empty_commit_then_close", "tx.misuse", "connection.close")
def empty_commit_then_close(s: Session) -> None:
    """A commit with nothing in it completes at once: commit-ok, then close-ok."""
    raw, _queue = _in_tx(s)
    raw.send(method_frame(1, commands.Tx.Commit()) + method_frame(0, CLOSE))
    s.log("frames", frames(raw, "Connection.CloseOk"))


@scenario("wire.close.client_hangs_up_first", "connection.close")
def client_hangs_up_first(s: Session) -> None:
    """After the client's connection.close the broker keeps the socket: another close gets
    another close-ok, other frames are ignored, and the client's close-ok ends it."""
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(0, CLOSE)
    s.log("close", frames(raw, "Connection.CloseOk"))
    s.log("socket closed within 1 s", closed_within(raw, 1.0))
    raw.send_method(0, CLOSE)
    raw.send_method(1, commands.Basic.Qos())
    s.log("second close", frames(raw, "Connection.CloseOk"))
    s.log("after a method", frames(raw, None, 0.5))
    raw.send_method(0, commands.Connection.CloseOk())
    s.log("socket closed within 1 s of close-ok", closed_within(raw, 1.0))


@scenario("wire.close.refused_login_while_sending", "connection.handshake", "error.403")
def refused_login_while_sending(s: Session) -> None:
    """A refused client that keeps sending still reads its 403: the socket is not closed under
    it (which would reset the connection)."""
    raw = s.raw(open_=False)
    raw.send(PROTOCOL_HEADER)
    raw.expect("Connection.Start")
    start_ok = commands.Connection.StartOk(
        client_properties={"capabilities": {"authentication_failure_close": True}},
        mechanism="PLAIN",
        response="\0guest\0wrong",
        locale="en_US",
    )
    raw.send(method_frame(0, start_ok) + heartbeat_frame() * 20000)
    s.log("closed", outcome(raw))
    s.log("socket closed within 1 s", closed_within(raw, 1.0))
