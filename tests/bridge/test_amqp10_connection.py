"""AMQP 1.0 connections on the broker's one port: the SASL exchange, open/close with
max-frame-size, channel-max and idle-time-out negotiated, sessions, and the errors that close a
connection. A real client (qpid-proton) where it can, raw frames for what no client sends. Tests
taking `amqp_url` also run against RabbitMQ with its amqp1_0 plugin."""

from __future__ import annotations

import time

import pytest
from rabbitish.bridge.codec import (
    FRAME_SASL,
    SASL_HEADER,
    Symbol,
    UInt,
    encode_frame,
)
from rabbitish.bridge.codec.definitions import (
    Begin,
    Close,
    End,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
)

from rabbitish.testing import running_broker
from tests.support.amqp10 import Raw, proton_url

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton.utils import BlockingConnection  # noqa: E402


@pytest.fixture
def raw(broker_url):
    clients: list[Raw] = []

    def make(url: str = broker_url) -> Raw:
        clients.append(Raw(url))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


# ---------------------------------------------------------------------- SASL
@pytest.mark.rabbitmq
def test_a_proton_client_connects_with_plain_and_closes(amqp_url):
    conn = BlockingConnection(proton_url(amqp_url), timeout=5)
    assert conn.conn.remote_container
    conn.close()


def test_sasl_offers_anonymous_and_plain(raw):
    client = raw()
    client.send(SASL_HEADER)
    assert client.header() == SASL_HEADER
    offered = client.frame().body
    assert isinstance(offered, SaslMechanisms)
    assert list(offered.sasl_server_mechanisms) == ["ANONYMOUS", "PLAIN"]


def test_plain_with_a_wrong_password_fails_and_the_socket_closes(raw):
    client = raw()
    outcome = client.sasl_plain("guest", "wrong")
    assert isinstance(outcome, SaslOutcome) and int(outcome.code) == 1
    assert client.closed()


def test_anonymous_logs_in_as_guest_unless_turned_off(raw):
    client = raw()
    client.send(SASL_HEADER)
    client.header()
    client.frame()
    client.send(encode_frame(0, SaslInit(mechanism=Symbol("ANONYMOUS")), frame_type=FRAME_SASL))
    assert int(client.frame().body.code) == 0
    client.open()
    with running_broker(anonymous_user=None) as strict:
        refused = Raw(strict.url)
        try:
            refused.send(SASL_HEADER)
            refused.header()
            assert list(refused.frame().body.sasl_server_mechanisms) == ["PLAIN"]
            init = SaslInit(mechanism=Symbol("ANONYMOUS"))
            refused.send(encode_frame(0, init, frame_type=FRAME_SASL))
            assert int(refused.frame().body.code) != 0
            assert refused.closed()
        finally:
            refused.close()


# ---------------------------------------------------------------------- open and close
def test_open_negotiates_and_close_is_answered(raw):
    client = raw()
    assert int(client.sasl_plain().code) == 0
    opened = client.open(max_frame_size=UInt(4096), channel_max=5, idle_time_out=UInt(0))
    assert int(opened.max_frame_size) == 131072 and int(opened.channel_max) == 5
    windows = {"incoming_window": UInt(10), "outgoing_window": UInt(10)}
    client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **windows)))
    begun = client.frame()
    assert isinstance(begun.body, Begin) and int(begun.body.remote_channel) == 0
    client.send(encode_frame(0, End()))
    assert isinstance(client.frame().body, End)
    client.send(encode_frame(0, Close()))
    assert isinstance(client.frame().body, Close)
    assert client.closed()


def test_a_broken_frame_closes_with_framing_error(raw):
    client = raw()
    client.sasl_plain()
    client.open()
    client.send(b"\x00\x00\x00\x08\x01\x00\x00\x00")  # doff 1: below the minimum of 2
    closed = client.frame().body
    assert isinstance(closed, Close)
    assert closed.error.condition == "amqp:connection:framing-error"
    assert client.closed()


def test_an_undecodable_performative_closes_with_decode_error(raw):
    client = raw()
    client.sasl_plain()
    client.open()
    body = b"\x00\x53\x10\xc0\x02\x01\xff"  # an open whose field list holds an unknown code
    client.send((8 + len(body)).to_bytes(4, "big") + b"\x02\x00\x00\x00" + body)
    closed = client.frame().body
    assert isinstance(closed, Close) and closed.error.condition == "amqp:decode-error"


def test_idle_time_out_gets_empty_frames(raw):
    client = raw()
    client.sasl_plain()
    client.open(idle_time_out=UInt(400))
    started = time.monotonic()
    assert client.frame().body is None  # an empty frame, sent because we were silent
    assert time.monotonic() - started < 2


def test_management_lists_1_0_connections_and_sessions():
    from tests.support.management import Api

    with running_broker(management=True) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        client = Raw(broker.url)
        try:
            client.sasl_plain()
            client.open()
            windows = {"incoming_window": UInt(10), "outgoing_window": UInt(10)}
            client.send(encode_frame(3, Begin(next_outgoing_id=UInt(0), **windows)))
            assert isinstance(client.frame().body, Begin)
            [listed] = api.ok("GET", "/api/connections")
            assert (listed["protocol"], listed["user"], listed["vhost"]) == (
                "AMQP 1-0",
                "guest",
                "/",
            )
            [session] = api.ok("GET", "/api/channels")
            assert session["number"] == 0 and session["transactional"] is False
        finally:
            client.close()
