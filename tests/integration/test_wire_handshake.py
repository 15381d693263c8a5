"""The wire before a connection is open, with a raw socket: handshake errors close the socket
silently, and other protocol headers get ours back, exactly as RabbitMQ does."""

from __future__ import annotations

import random
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pamqp import commands

from tests.support.raw_amqp import (
    PROTOCOL_HEADER,
    RawClient,
    heartbeat_frame,
    host_port,
    raw_frame,
)
from tests.support.wire import (
    DROPPED,
    Outcome,
    Scenario,
    method_payload,
    outcome,
    still_works,
    witness_client,
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
        c.send(raw_frame(1, 0, method_payload(10, 11), end=b"\x00")),
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

    with witness_client(amqp_url) as witness, ThreadPoolExecutor(len(HANDSHAKE_SCENARIOS)) as pool:
        futures = {name: pool.submit(run, send) for name, send in HANDSHAKE_SCENARIOS.items()}
        results = {name: future.result() for name, future in futures.items()}
        assert results == dict.fromkeys(HANDSHAKE_SCENARIOS, DROPPED)
        still_works(witness)


# ---------------------------------------------------------------------- protocol header
def _header_reply(url: str, header: bytes) -> tuple[bytes, bool]:
    """What the broker answers to `header`, and whether it then closed the socket."""
    with socket.create_connection(host_port(url), timeout=5) as sock:
        sock.sendall(header)
        return _read_to_close(sock), True


def _read_to_close(sock: socket.socket) -> bytes:
    """Everything the broker sends until it closes the socket."""
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x00\x00\x09\x00",  # 0-9-0
        b"AMQP\x00\x00\x08\x00",  # 0-8
        b"garbage!",
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x16\x03\x01\x00\x10\x01abc",  # TLS client hello
    ],
)
def test_other_protocol_headers_get_ours_back_and_a_close(amqp_url, header):
    assert _header_reply(amqp_url, header) == (PROTOCOL_HEADER, True)


# Headers no front end serves. (AMQP 1.0 and its SASL layer have one: tests/bridge.)
_RANDOM_HEADER = random.Random(20240601).randbytes(8)
UNSERVED_HEADERS = {
    "random": _RANDOM_HEADER,
    "amqp-2.0": b"AMQP\x00\x02\x00\x00",
}
# The AMQP 1.0 headers, answered with the same header (RabbitMQ: its amqp1_0 plugin, which the
# reference node runs) and the connection kept open.
SERVED_1_0_HEADERS = {
    "amqp-1.0": b"AMQP\x00\x01\x00\x00",
    "amqp-1.0-sasl": b"AMQP\x03\x01\x00\x00",
}


def _send_header(sock: socket.socket, header: bytes, bytewise: bool) -> None:
    """Byte by byte, nothing may come back before the eighth byte."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if bytewise:
        for byte in header[:-1]:
            sock.sendall(bytes([byte]))
            time.sleep(0.02)  # separate segments
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
        sock.settimeout(5)
        sock.sendall(header[-1:])
    else:
        sock.sendall(header)


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "byte-by-byte"])
@pytest.mark.parametrize("header", UNSERVED_HEADERS.values(), ids=UNSERVED_HEADERS.keys())
def test_unserved_headers_get_ours_back_and_a_close(amqp_url, header, bytewise):
    with socket.create_connection(host_port(amqp_url), timeout=5) as sock:
        _send_header(sock, header, bytewise)
        assert _read_to_close(sock) == PROTOCOL_HEADER


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "byte-by-byte"])
@pytest.mark.parametrize("header", SERVED_1_0_HEADERS.values(), ids=SERVED_1_0_HEADERS.keys())
def test_amqp_1_0_headers_are_answered_in_kind(amqp_url, header, bytewise):
    with socket.create_connection(host_port(amqp_url), timeout=5) as sock:
        _send_header(sock, header, bytewise)
        data = b""
        while len(data) < 8:
            chunk = sock.recv(4096)
            assert chunk, "closed before answering"
            data += chunk
        assert data[:8] == header


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
