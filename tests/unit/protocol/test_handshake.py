"""The 0-9-1 handshake (rabbitish/protocol/handshake.py) driven by bytes through a Connection
with no socket (tests/unit/harness.py): what each step negotiates and how each refusal looks on
the wire. The basic walk, the 403 and the missing vhost are tested with the connection."""

from __future__ import annotations

import logging

import pytest
from pamqp import commands

from rabbitish.config import Config
from rabbitish.engine.auth import Peer
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.protocol.connection import Connection
from rabbitish.protocol.framing import FrameReader, decode_method
from rabbitish.protocol.handshake import MIN_FRAME_MAX, SILENT_CLOSE_DELAY
from rabbitish.protocol.states import ConnectionState
from tests.unit.harness import Close, Harness

PLAIN_GUEST = commands.Connection.StartOk(mechanism="PLAIN", response="\0guest\0guest")
TELL_ME = {"capabilities": {"authentication_failure_close": True}}


def _started(peer: Peer | None = None) -> Harness:
    h = Harness()
    if peer is not None:
        h.conn.peer_info = peer  # as the I/O layer sets it, before start-ok arrives
    h.frames()
    return h


def _tuned(channel_max: int = 10, frame_max: int = MIN_FRAME_MAX, heartbeat: int = 0) -> Harness:
    h = _started()
    assert [f.name for f in h.send(0, PLAIN_GUEST)] == ["Connection.Tune"]
    tune_ok = commands.Connection.TuneOk(
        channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat
    )
    assert h.send(0, tune_ok) == []
    return h


@pytest.mark.parametrize(
    ("peer", "mechanisms"),
    [
        (Peer("127.0.0.1"), "PLAIN AMQPLAIN"),
        (Peer("127.0.0.1", tls=True), "PLAIN AMQPLAIN"),
        (Peer("127.0.0.1", tls=True, cert_auth=True, cert_user="guest"), "PLAIN AMQPLAIN EXTERNAL"),
    ],
)
def test_start_offers_external_where_client_certificates_are_verified(peer, mechanisms):
    conn = Connection(Node(ManualScheduler()), Config(data_dir=":memory:"))
    conn.peer_info = peer  # as the I/O layer sets it, before start()
    conn.start()
    [(_type, channel, payload)] = FrameReader(1 << 20).feed(conn.take_output())
    assert channel == 0
    start = decode_method(payload)
    assert isinstance(start, commands.Connection.Start) and start.mechanisms == mechanisms
    assert start.server_properties["capabilities"]["rabbitish.half_transactions"] is True


def test_start_ok_records_the_client_and_how_it_logged_in():
    h = _started()
    start_ok = commands.Connection.StartOk(
        client_properties={"product": "test", "capabilities": {"connection.blocked": True}},
        mechanism="PLAIN",
        response="\0guest\0guest",
    )
    h.send(0, start_ok)
    assert (h.conn.user, h.conn.auth_mechanism) == ("guest", "PLAIN")
    assert h.conn.client_properties["product"] == "test"
    assert h.conn.capabilities == {"connection.blocked": True}
    assert h.conn.state is ConnectionState.AWAIT_TUNE_OK


@pytest.mark.parametrize(
    ("mechanism", "response", "reason"),
    [
        ("PLAIN", "guest\0guest\0guest", "malformed PLAIN response"),
        ("EXTERNAL", "", "unknown authentication mechanism 'EXTERNAL'"),
    ],
)
def test_a_malformed_start_ok_hangs_up_without_a_word(mechanism, response, reason):
    h = _started()
    start_ok = commands.Connection.StartOk(
        client_properties=TELL_ME, mechanism=mechanism, response=response
    )
    assert h.send(0, start_ok) == []
    assert h.dropped and h.conn.linger and h.conn.close_reason == reason


def test_a_loopback_user_from_elsewhere_gets_the_403_and_a_log_line(caplog):
    h = _started(Peer("192.0.2.7"))
    start_ok = commands.Connection.StartOk(
        client_properties=TELL_ME, mechanism="PLAIN", response="\0guest\0guest"
    )
    with caplog.at_level(logging.WARNING, logger="rabbitish.connection"):
        frames = h.send(0, start_ok)
    assert [f.close for f in frames] == [
        Close(
            403,
            "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
            "For details see the broker logfile.",
            0,
            0,
        )
    ]
    assert h.conn.close_wait == SILENT_CLOSE_DELAY and h.conn.user is None
    assert "PLAIN login refused: user 'guest' can only connect via localhost" in caplog.text


def test_tune_ok_sets_the_negotiated_limits():
    h = _tuned(channel_max=7, frame_max=8192, heartbeat=5)
    assert (h.conn.channel_max, h.conn.frame_max, h.conn.heartbeat) == (7, 8192, 5)
    assert h.conn.reader.frame_max == 8192
    assert h.conn.state is ConnectionState.AWAIT_OPEN


@pytest.mark.parametrize(
    ("channel_max", "frame_max", "reason"),
    [
        (10, 0, "negotiated frame_max = 0 is above 131072"),
        (10, 131073, "negotiated frame_max = 131073 is above 131072"),
        (10, 4095, "negotiated frame_max = 4095 is below 4096"),
        (0, 4096, "negotiated channel_max = 0 is above 2047"),
        (2048, 4096, "negotiated channel_max = 2048 is above 2047"),
        (0, 0, "negotiated frame_max = 0 is above 131072"),  # frame_max is checked first
    ],
)
def test_tune_ok_outside_our_limits_hangs_up_without_a_word(channel_max, frame_max, reason):
    h = _started()
    h.send(0, PLAIN_GUEST)
    h.frames()
    assert h.send(0, commands.Connection.TuneOk(channel_max=channel_max, frame_max=frame_max)) == []
    assert h.dropped and h.conn.linger and h.conn.close_reason == reason
    assert h.conn.state is ConnectionState.AWAIT_TUNE_OK


def test_open_refuses_a_vhost_the_user_may_not_use():
    h = _tuned()
    h.node.add_vhost("private")
    frames = h.send(0, commands.Connection.Open(virtual_host="private"))
    refused = Close(530, "NOT_ALLOWED - access to vhost 'private' refused for user 'guest'", 10, 40)
    assert [f.close for f in frames] == [refused]
    assert h.conn.vhost is None and h.conn not in h.node.connections


def test_open_enters_the_vhost():
    h = _tuned()
    assert [f.name for f in h.send(0, commands.Connection.Open(virtual_host="/"))] == [
        "Connection.OpenOk"
    ]
    assert h.conn.vhost is h.node.vhost("/") and h.conn in h.node.connections
    assert h.conn.authorize is not None and h.conn.state is ConnectionState.OPEN
