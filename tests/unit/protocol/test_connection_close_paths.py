"""Closing paths RabbitMQ answers in particular ways, on the sans-IO connection: frame errors
once tuned but not yet open (a close method, not silence), and a commit still in progress when
the client closes its channel or connection (the close wins; commit-ok never follows it)."""

from __future__ import annotations

import pytest
from pamqp import commands

from rabbitish.protocol.framing import encode_method
from rabbitish.protocol.states import ConnectionState
from tests.unit.harness import Close, Harness, publish_bytes


def _tuned() -> Harness:
    h = Harness(hold_syncs=True)
    h.frames()
    h.send(
        0,
        commands.Connection.StartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest"
        ),
    )
    h.send(0, commands.Connection.TuneOk(channel_max=2047, frame_max=131072))
    h.frames()
    return h


OPEN_FRAME = encode_method(0, commands.Connection.Open(virtual_host="/"))


@pytest.mark.parametrize(
    ("data", "code", "text", "linger"),
    [
        (
            OPEN_FRAME[:-1] + b"\x00",
            501,
            "FRAME_ERROR - type 1, all octets = <<0,10,0,40,1,47,0,0>>: "
            "{invalid_frame_end_marker,0}",
            True,
        ),
        (
            b"\x01\x00\x00\x00\x03\x0d\x40" + b"x" * 16,
            501,
            "FRAME_ERROR - type 1, all octets = <<>>: {frame_too_large,200000,131064}",
            True,
        ),
        (
            b"\x09\x00\x00\x00\x00\x00\x03abc\xce",
            501,
            'FRAME_ERROR - type 9, all octets = <<"abc">>: unknown_frame',
            False,
        ),
        (
            b"\x08\x00\x01\x00\x00\x00\x00\xce",
            505,
            "UNEXPECTED_FRAME - type 8, all octets = <<>>",
            False,
        ),
    ],
    ids=["bad frame end", "frame too large", "unknown frame type", "heartbeat on a channel"],
)
def test_frame_errors_once_tuned_are_a_close(data: bytes, code: int, text: str, linger: bool):
    h = _tuned()
    assert [f.close for f in h.feed(data)] == [Close(code, text, 0, 0)]
    assert h.conn.state is ConnectionState.CLOSING
    assert (h.dropped, h.conn.linger) == (linger, linger)


def test_a_truncated_open_once_tuned_is_still_silent():
    h = _tuned()
    assert h.feed(b"\x01\x00\x00\x00\x00\x00\x05\x00\x0a\x00\x28\x00\xce") == []
    assert h.dropped and h.conn.linger


def _committing() -> tuple[Harness, bytes]:
    h = Harness(hold_syncs=True)
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Queue.Declare(queue="q"))
    h.send(1, commands.Tx.Select())
    h.frames()
    return h, publish_bytes(1, b"abc", routing_key="q") + encode_method(1, commands.Tx.Commit())


def _close(scope: str) -> bytes:
    if scope == "connection":
        return encode_method(0, commands.Connection.Close(200, "bye", 0, 0))
    return encode_method(1, commands.Channel.Close(200, "bye", 0, 0))


@pytest.mark.parametrize("scope", ["connection", "channel"])
def test_close_pipelined_after_a_commit_in_progress(scope: str):
    h, commit = _committing()
    out = h.feed(commit + _close(scope))
    h.sync()
    out += h.frames()
    expected = (0, "Connection.CloseOk") if scope == "connection" else (1, "Channel.CloseOk")
    assert [(f.channel, f.name) for f in out] == [expected]
    if scope == "channel":  # the commit stands
        h.open_channel(2)
        declared = h.send(2, commands.Queue.Declare(queue="q", passive=True))
        assert declared[0].method.message_count == 1


def test_commit_ok_when_the_close_comes_after_the_commit_completed():
    h, commit = _committing()
    h.feed(commit)
    out = h.sync() + h.feed(_close("channel"))
    assert [(f.channel, f.name) for f in out] == [(1, "Tx.CommitOk"), (1, "Channel.CloseOk")]
