"""The management API's bytes on the wire, as aiohttp served them before the broker had an HTTP
server of its own (recorded from it; Date and aiohttp's Server header aside): status lines and
reason phrases, header order, Content-Length, WWW-Authenticate, Allow, HEAD, keep-alive and
Connection: close, pipelining, HTTP/1.0, chunked bodies, `Expect: 100-continue`, `%2F` in a path
segment, the UI's files, and a 400 that closes its connection only. Changes on purpose: aiohttp
dropped the answer to a good request when bad bytes followed it in the same read (it is
answered, then the 400 comes), and credentials that are not ASCII got a 500 (now a failed
login). Raw sockets, so nothing in between adds or drops a byte."""

from __future__ import annotations

import re
import socket

import pytest

from tests.support.management import GUEST

AUTH = "Authorization: " + GUEST["Authorization"]
JSON = "Cache-Control: no-cache\r\nContent-Type: application/json\r\n"
WHOAMI = '{"name":"guest","tags":["administrator"]}'
NOT_FOUND = '{"error":"Object Not Found","reason":"Not Found"}'


@pytest.fixture
def port(rabbitish_broker, rabbitish_management_url) -> int:
    return rabbitish_broker.management_port


def request(line: str, *headers: str, body: str = "", auth: bool = True) -> bytes:
    fields = ["Host: localhost", *([AUTH] if auth else []), *headers]
    if body:
        fields.append(f"Content-Length: {len(body)}")
    return (line + "\r\n" + "".join(f + "\r\n" for f in fields) + "\r\n" + body).encode()


def exchange(
    port: int, data: bytes, responses: int = 1, closes: bool = False, head: bool = False
) -> str:
    """Send `data` and read `responses` responses (heads only, for HEAD), Date blanked; with
    `closes`, read on to the end of input, which `<EOF>` marks."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        got = b""
        while True:
            if not closes and _responses_in(got, head) >= responses:
                return _blank_date(got)
            chunk = sock.recv(65536)
            if not chunk:
                return _blank_date(got) + "<EOF>"
            got += chunk


def _responses_in(data: bytes, head: bool) -> int:
    """How many whole responses `data` holds (a head, then Content-Length bytes of body)."""
    count = at = 0
    while (end := data.find(b"\r\n\r\n", at)) >= 0:
        length = re.search(rb"Content-Length: (\d+)", data[at:end])
        at = end + 4 + (int(length.group(1)) if length and not head else 0)
        if at > len(data):
            break
        count += 1
    return count


def _blank_date(data: bytes) -> str:
    """Date blanked; a Server header (aiohttp sent one, naming itself) dropped."""
    text = re.sub(r"Date: [^\r]*\r\n", "Date: X\r\n", data.decode("latin-1"))
    return re.sub(r"Server: [^\r]*\r\n", "", text)


def test_replies_and_their_headers(port):
    assert exchange(port, request("GET /api/whoami HTTP/1.1")) == (
        f"HTTP/1.1 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\n\r\n{WHOAMI}"
    )
    assert exchange(port, request("GET /api/whoami HTTP/1.1", auth=False)) == (
        "HTTP/1.1 401 Unauthorized\r\n"
        'WWW-Authenticate: Basic realm="RabbitMQ Management"\r\n'
        "Content-Length: 0\r\nDate: X\r\n\r\n"
    )
    bad_login = request(
        "GET /api/whoami HTTP/1.1", "Authorization: Basic Z3Vlc3Q6bm9wZQ==", auth=False
    )
    assert exchange(port, bad_login) == (
        f"HTTP/1.1 401 Unauthorized\r\n{JSON}"
        'WWW-Authenticate: Basic realm="RabbitMQ Management"\r\n'
        "Content-Length: 50\r\nDate: X\r\n\r\n"
        '{"error":"not_authorized","reason":"Login failed"}'
    )
    not_ascii = request("GET /api/whoami HTTP/1.1", auth=False).replace(
        b"\r\n\r\n", b"\r\nAuthorization: Basic \xe9\r\n\r\n"
    )
    assert exchange(port, not_ascii).endswith('{"error":"not_authorized","reason":"Login failed"}')
    assert exchange(port, request("GET /api/nothing HTTP/1.1")) == (
        f"HTTP/1.1 404 Not Found\r\n{JSON}Content-Length: 49\r\nDate: X\r\n\r\n{NOT_FOUND}"
    )
    assert exchange(port, request("POST /api/queues/%2F/q1 HTTP/1.1")) == (
        "HTTP/1.1 405 Method Not Allowed\r\nAllow: DELETE, GET, HEAD, OPTIONS, PUT\r\n"
        "Content-Length: 0\r\nDate: X\r\n\r\n"
    )
    assert exchange(port, request("PUT /api/queues/%2F/wire-q HTTP/1.1", body="{nope")) == (
        f"HTTP/1.1 400 Bad Request\r\n{JSON}Content-Length: 43\r\nDate: X\r\n\r\n"
        '{"error":"bad_request","reason":"not_json"}'
    )
    assert exchange(port, request("HEAD /api/whoami HTTP/1.1"), head=True) == (
        f"HTTP/1.1 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\n\r\n"
    )
    vhost = exchange(port, request("GET /api/vhosts/%2F HTTP/1.1"))
    assert vhost.startswith(f"HTTP/1.1 200 OK\r\n{JSON}") and '"name":"/"' in vhost
    page = exchange(port, request("GET / HTTP/1.1", auth=False))
    assert page.startswith(
        "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
        "Content-Type: text/html; charset=utf-8\r\nContent-Length: "
    )


def test_a_queue_named_with_2f_and_escapes_round_trips(port):
    assert exchange(port, request("PUT /api/queues/%2F/wire%2Fa%20b%25 HTTP/1.1", body="{}")) == (
        "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nDate: X\r\n\r\n"
    )
    got = exchange(port, request("GET /api/queues/%2F/wire%2Fa%20b%25 HTTP/1.1"))
    assert got.startswith("HTTP/1.1 200 OK\r\n") and '"name":"wire/a b%"' in got
    assert exchange(port, request("DELETE /api/queues/%2F/wire%2Fa%20b%25 HTTP/1.1")) == (
        "HTTP/1.1 204 No Content\r\nDate: X\r\n\r\n"
    )


def test_keep_alive_pipelining_and_connection_close(port):
    pipelined = (
        request("GET /api/whoami HTTP/1.1")
        + request("GET /api/nothing HTTP/1.1")
        + request("GET /api/whoami HTTP/1.1", "Connection: close")
    )
    assert exchange(port, pipelined, closes=True) == (
        f"HTTP/1.1 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\n\r\n{WHOAMI}"
        f"HTTP/1.1 404 Not Found\r\n{JSON}Content-Length: 49\r\nDate: X\r\n\r\n{NOT_FOUND}"
        f"HTTP/1.1 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\nConnection: close\r\n\r\n"
        f"{WHOAMI}<EOF>"
    )
    http10 = request("GET /api/whoami HTTP/1.0", "Connection: keep-alive") + request(
        "GET /api/whoami HTTP/1.0"
    )
    assert exchange(port, http10, closes=True) == (
        f"HTTP/1.0 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\nConnection: keep-alive"
        f"\r\n\r\n{WHOAMI}HTTP/1.0 200 OK\r\n{JSON}Content-Length: 41\r\nDate: X\r\n\r\n"
        f"{WHOAMI}<EOF>"
    )


def test_chunked_bodies_and_100_continue(port):
    chunked = request("PUT /api/queues/%2F/wire-chunked HTTP/1.1", "Transfer-Encoding: chunked")
    chunked += b'5\r\n{"dur\r\n9\r\nable":tru\r\n2\r\ne}\r\n0\r\n\r\n'
    chunked += request("GET /api/queues/%2F/wire-chunked HTTP/1.1")
    created, queue = exchange(port, chunked, 2).split("\r\n\r\n", 1)
    assert created == "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nDate: X"
    assert queue.startswith(f"HTTP/1.1 200 OK\r\n{JSON}") and '"durable":true' in queue
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = request(
            "DELETE /api/queues/%2F/wire-chunked HTTP/1.1",
            "Expect: 100-continue",
            "Content-Length: 2",
        )
        sock.sendall(head)
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"{}")
        assert sock.recv(1000).startswith(b"HTTP/1.1 204 No Content\r\n")


def test_bad_input_gets_400_and_closes_that_connection_only(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as other:
        for garbage in (b"FOO /api/whoami HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01\r\n\r\n"):
            got = exchange(port, request("GET /api/whoami HTTP/1.1") + garbage, closes=True)
            assert got.startswith(f"HTTP/1.1 200 OK\r\n{JSON}")
            assert "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n" in got
            assert got.endswith("<EOF>")
        other.sendall(request("GET /api/whoami HTTP/1.1"))
        assert other.recv(1000).endswith(WHOAMI.encode())
