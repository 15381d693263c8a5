"""The 0-9-1 Connection without a socket or an event loop (tests/unit/harness.py): the handshake
and a few channel methods, fed whole and one byte at a time."""

from __future__ import annotations

import pytest
from pamqp import commands

from rabbitish.protocol.framing import FRAME_BODY, FRAME_HEADER, encode_method
from rabbitish.protocol.states import ChannelState, ConnectionState
from tests.unit.harness import Close, Harness, publish_bytes

BYTEWISE = pytest.mark.parametrize("chunks", [None, 1], ids=["whole", "byte-by-byte"])


def _names(frames) -> list[tuple[int, str]]:
    return [(f.channel, f.name) for f in frames]


# ---------------------------------------------------------------------- handshake
@BYTEWISE
def test_handshake(chunks):
    h = Harness()
    frames = h.handshake(chunks=chunks)
    assert _names(frames) == [
        (0, "Connection.Start"),
        (0, "Connection.Tune"),
        (0, "Connection.OpenOk"),
    ]
    start = frames[0].method
    assert (start.version_major, start.version_minor) == (0, 9)
    assert start.server_properties["product"] == "RabbitMQ"
    assert start.mechanisms == "PLAIN AMQPLAIN"
    tune = frames[1].method
    assert (tune.channel_max, tune.frame_max, tune.heartbeat) == (2047, 131072, 60)
    assert h.conn.state is ConnectionState.OPEN


def test_bytes_read_with_the_header_are_handed_over():
    """The I/O layer passes what followed the protocol header to start()."""
    start_ok = commands.Connection.StartOk(mechanism="PLAIN", response="\0guest\0guest")
    h = Harness(after_header=encode_method(0, start_ok))
    assert _names(h.frames()) == [(0, "Connection.Start"), (0, "Connection.Tune")]
    assert h.conn.state is ConnectionState.AWAIT_TUNE_OK


@BYTEWISE
def test_refused_login_says_403_to_clients_that_ask(chunks):
    h = Harness()
    h.frames()
    start_ok = commands.Connection.StartOk(
        client_properties={"capabilities": {"authentication_failure_close": True}},
        mechanism="PLAIN",
        response="\0guest\0wrong",
    )
    frames = h.send(0, start_ok, chunks)
    assert [f.close for f in frames] == [
        Close(
            403,
            "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
            "For details see the broker logfile.",
            0,
            0,
        )
    ]
    # As RabbitMQ: the client's close-ok ends it (or 3 s without one); until then the socket
    # stays, so bytes still in flight cannot reset it before the 403 is read.
    assert h.conn.state is ConnectionState.CLOSING and h.conn.close_wait == 3.0
    assert not h.dropped
    assert h.send(0, commands.Basic.Qos(), chunks) == []
    assert h.send(0, commands.Connection.CloseOk(), chunks) == []
    assert h.dropped and not h.conn.linger


def test_refused_login_is_silent_otherwise():
    h = Harness()
    h.frames()
    start_ok = commands.Connection.StartOk(mechanism="PLAIN", response="\0guest\0wrong")
    assert h.send(0, start_ok) == []
    assert h.dropped and h.conn.linger  # the socket goes after RabbitMQ's 3 s


def test_unknown_vhost_is_a_530_close():
    h = Harness()
    h.frames()
    h.send(0, commands.Connection.StartOk(mechanism="PLAIN", response="\0guest\0guest"))
    h.send(0, commands.Connection.TuneOk(channel_max=10, frame_max=4096))
    frames = h.send(0, commands.Connection.Open(virtual_host="nowhere"))
    refused = Close(530, "NOT_ALLOWED - vhost nowhere not found", 10, 40)
    assert [f.close for f in frames] == [refused]
    assert h.conn.state is ConnectionState.CLOSING
    assert h.send(0, commands.Connection.CloseOk()) == []
    assert h.dropped


def test_frames_on_a_channel_during_the_handshake_drop_the_socket():
    h = Harness()
    h.frames()
    assert h.send(1, commands.Channel.Open()) == []
    assert h.dropped


# ---------------------------------------------------------------------- channels
@BYTEWISE
def test_declare_publish_get_ack(chunks):
    h = Harness()
    h.handshake()
    assert _names(h.send(1, commands.Channel.Open(), chunks)) == [(1, "Channel.OpenOk")]
    [declared] = h.send(1, commands.Queue.Declare(queue="q"), chunks)
    assert (declared.method.queue, declared.method.message_count) == ("q", 0)
    message = publish_bytes(1, b"hello", routing_key="q", content_type="text/plain")
    assert h.feed(message, chunks) == []
    got = h.send(1, commands.Basic.Get(queue="q"), chunks)
    assert _names(got) == [(1, "Basic.GetOk"), (1, "header"), (1, "body")]
    assert got[0].method.delivery_tag == 1
    assert got[2].payload == b"hello"
    assert h.send(1, commands.Basic.Ack(delivery_tag=1), chunks) == []
    assert _names(h.send(1, commands.Basic.Get(queue="q"), chunks)) == [(1, "Basic.GetEmpty")]


def test_a_body_split_over_frames_is_one_message():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Queue.Declare(queue="q"))
    h.send(1, commands.Basic.Publish(routing_key="q"))
    h.send_frame(FRAME_HEADER, 1, b"\x00\x3c\x00\x00" + (6).to_bytes(8, "big") + b"\x00\x00")
    assert h.conn.channels[1].state is ChannelState.AWAIT_BODY
    h.send_frame(FRAME_BODY, 1, b"abc")
    h.send_frame(FRAME_BODY, 1, b"def")
    assert h.conn.channels[1].state is ChannelState.OPEN
    assert h.send(1, commands.Basic.Get(queue="q", no_ack=True))[2].payload == b"abcdef"


def test_a_method_instead_of_the_content_header_is_a_505():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Basic.Publish(routing_key="q"))
    frames = h.send(1, commands.Basic.Qos())
    assert [f.close for f in frames] == [
        Close(
            505,
            "UNEXPECTED_FRAME - expected content header for class 60, "
            "got non content header frame instead",
            60,
            40,
        )
    ]


def test_methods_wait_for_a_commit_in_progress():
    h = Harness(hold_syncs=True)
    h.handshake()
    h.open_channel(1)
    h.send(1, commands.Queue.Declare(queue="q"))
    h.send(1, commands.Tx.Select())
    h.publish(1, b"x", routing_key="q")
    assert h.send(1, commands.Tx.Commit()) == []  # commit-ok waits for the sync
    assert h.conn.channels[1].state is ChannelState.COMMITTING
    assert _names(h.sync()) == [(1, "Tx.CommitOk")]
    h.publish(1, b"y", routing_key="q")
    h.send(1, commands.Tx.Commit())
    frames = h.send(1, commands.Basic.Get(queue="q"))
    assert [f.close for f in frames] == [
        Close(504, "CHANNEL_ERROR - unexpected command while processing 'tx.commit'", 60, 70)
    ]


def test_a_soft_error_closes_the_channel_and_waits_for_close_ok():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    frames = h.send(1, commands.Basic.Ack(delivery_tag=7))
    assert [(f.channel, f.close) for f in frames] == [
        (1, Close(406, "PRECONDITION_FAILED - unknown delivery tag 7", 60, 80))
    ]
    assert h.send(1, commands.Queue.Declare(queue="q")) == []  # discarded while closing
    close = commands.Channel.Close(reply_code=200, reply_text="", class_id=0, method_id=0)
    assert _names(h.send(1, close)) == [(1, "Channel.CloseOk")]  # crossing closes
    assert h.send(1, commands.Channel.CloseOk()) == []
    assert 1 not in h.conn.channels
    h.open_channel(1)


def test_client_close():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    close = commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
    assert _names(h.send(0, close)) == [(0, "Connection.CloseOk")]
    # As RabbitMQ: the client hangs up first. Until then another close gets another close-ok,
    # other frames are ignored, garbage ends it silently and the client's close-ok at once.
    assert h.conn.state is ConnectionState.ANSWERED and not h.dropped
    assert not h.conn.channels and h.conn not in h.node.connections
    assert h.send(1, commands.Channel.Open()) == []
    assert h.feed(b"\x08\x00\x00\x00\x00\x00\x00\xce") == []  # a heartbeat
    assert _names(h.send(0, close)) == [(0, "Connection.CloseOk")]
    assert h.send(0, commands.Connection.CloseOk()) == []
    assert h.dropped and not h.conn.linger


def test_garbage_after_the_client_close_ends_it_silently():
    h = Harness()
    h.handshake()
    h.send(0, commands.Connection.Close(reply_code=200, reply_text="", class_id=0, method_id=0))
    h.frames()
    assert h.feed(b"garbage!!!!!!") == []
    assert h.dropped and h.conn.linger


def test_unknown_method_drops_the_socket_without_a_word():
    h = Harness()
    h.handshake()
    assert h.feed(b"\x01\x00\x01\x00\x00\x00\x04\x00\x63\x00\x01\xce") == []
    assert h.dropped and h.conn.state is ConnectionState.OPEN


def test_a_server_method_from_the_client_is_unimplemented():
    h = Harness()
    h.handshake()
    h.open_channel(1)
    frames = h.send(1, commands.Basic.GetEmpty())
    unimplemented = Close(503, "COMMAND_INVALID - unimplemented method", 60, 72)
    assert [f.close for f in frames] == [unimplemented]
