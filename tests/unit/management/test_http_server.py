"""The management API's HTTP/1.1: the parser driven by bytes alone (whole, byte by byte, split
anywhere, and any bytes at all: only BadRequest may come out), path and query decoding as
aiohttp's router gave them, the response's bytes, and one connection served over real TCP
(pipelining in order, 100-continue, a 400 that closes that connection only, a graceful stop)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rabbitish.management.http_server import (
    MAX_BODY,
    BadRequest,
    Event,
    ExpectsContinue,
    Headers,
    HttpServer,
    ParsedRequest,
    Request,
    RequestParser,
    Response,
    decode_segment,
    parse_query,
)

GET = b"GET /api/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Basic Z3Vlc3Q6Z3Vlc3Q=\r\n\r\n"
PUT = b'PUT /api/queues/%2F/q HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{"a":1}'
CHUNKED = (
    b"PUT /api/queues/%2F/q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'3;ext=1\r\n{"a\r\n4\r\n":1}\r\n0\r\nX-Trailer: t\r\n\r\n'
)


def parse_all(data: bytes, step: int | None = None) -> list[Event]:
    parser = RequestParser()
    if step is None:
        return parser.feed(data)
    events: list[Event] = []
    for at in range(0, len(data), step):
        events += parser.feed(data[at : at + step])
    return events


def requests(events: list[Event]) -> list[ParsedRequest]:
    return [e for e in events if isinstance(e, ParsedRequest)]


@pytest.mark.parametrize("step", [None, 1, 2, 7])
def test_requests_parse_the_same_whole_or_in_pieces(step):
    events = parse_all(GET + PUT + CHUNKED, step)
    got = [(r.method, r.target, r.body) for r in requests(events)]
    assert got == [
        ("GET", "/api/whoami", b""),
        ("PUT", "/api/queues/%2F/q", b'{"a":1}'),
        ("PUT", "/api/queues/%2F/q", b'{"a":1}'),
    ]
    first = requests(events)[0]
    assert first.headers["AUTHORIZATION"] == "Basic Z3Vlc3Q6Z3Vlc3Q="
    assert first.headers.get("authorization") == "Basic Z3Vlc3Q6Z3Vlc3Q="
    assert first.keep_alive


def test_expect_100_continue_comes_before_its_request():
    head = b"PUT /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    parser = RequestParser()
    assert parser.feed(head) == [ExpectsContinue()]
    assert [r.body for r in requests(parser.feed(b"{}"))] == [b"{}"]
    # no body to wait for: no 100
    assert parser.feed(head.replace(b"2\r\n", b"0\r\n")) != [ExpectsContinue()]


def test_a_body_over_the_limit_is_dropped_and_the_next_request_still_parses():
    big = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)
    parser = RequestParser()
    assert parser.feed(big) == []
    events = parser.feed(b"a" * (MAX_BODY + 1) + GET)
    assert [(r.too_large, r.body) for r in requests(events)] == [(True, b""), (False, b"")]


def test_keep_alive_follows_the_version_and_connection_header():
    def keep(head: bytes) -> bool:
        return requests(parse_all(head + b"\r\n\r\n"))[0].keep_alive

    assert keep(b"GET / HTTP/1.1\r\nHost: x")
    assert not keep(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close")
    assert not keep(b"GET / HTTP/1.0")
    assert keep(b"GET / HTTP/1.0\r\nConnection: Keep-Alive")


@pytest.mark.parametrize(
    "data",
    [
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",  # TLS to the plain port
        b"GET\r\n\r\n",
        b"get / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"FOO / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",  # 1.1 without Host
        b"GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n",
        b"GET / HTTP/1.1\nHost: x\n\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000,
        b"GET / HTTP/1.1\r\n" + b"X-H: 1\r\n" * 200 + b"\r\n",
    ],
)
def test_bad_input_ends_in_bad_request_and_the_parser_takes_nothing_after(data):
    parser = RequestParser()
    events = parser.feed(GET + data)
    assert len(requests(events)) == 1  # what came before the bad input still counts
    assert isinstance(events[-1], BadRequest)
    assert parser.feed(GET) == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=40))
def test_any_bytes_give_requests_or_bad_request_and_nothing_else(data, step):
    parser = RequestParser()
    events: list[Event] = []
    for at in range(0, len(data), step):
        events += parser.feed(data[at : at + step])  # never raises
    for event in events:
        if isinstance(event, ParsedRequest):
            Request.from_parsed(event, "127.0.0.1")  # decoding never fails either
    assert all(not isinstance(e, BadRequest) for e in events[:-1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(GET + PUT + CHUNKED)), max_size=8))
def test_a_stream_split_anywhere_parses_as_a_whole(cuts):
    data = GET + PUT + CHUNKED
    parser = RequestParser()
    events: list[Event] = []
    last = 0
    for cut in [*sorted(cuts), len(data)]:
        events += parser.feed(data[last:cut])
        last = cut
    assert requests(events) == requests(parse_all(data))


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("%2F", "/"),
        ("%2f", "/"),
        ("a%20b", "a b"),
        ("a+b", "a+b"),
        ("%C3%A9t%C3%A9", "été"),
        ("%252F", "%2F"),
        ("%ff", "%ff"),
        ("a%C3%A9%ff", "aé%ff"),
        ("a%zz", "a%zz"),
        ("a%", "a%"),
        ("%7B%7D", "{}"),
    ],
)
def test_path_segments_decode_as_aiohttps_match_info_did(raw, decoded):
    assert decode_segment(raw) == decoded


def test_a_request_keeps_2f_inside_its_segment_and_drops_the_fragment_and_the_host():
    parsed = ParsedRequest("GET", "http://h:1/api/vhosts/%2F?columns=name#x", "HTTP/1.1", Headers())
    request = Request.from_parsed(parsed, "::1")
    assert request.segments == ["api", "vhosts", "/"]
    assert request.path == "/api/vhosts//"
    assert request.query == {"columns": "name"}


def test_the_query_takes_the_first_value_of_each_name():
    assert parse_query("q=1%2B2+3&r&s=&q=x&%zz=%ff") == {
        "q": "1+2 3",
        "r": "",
        "s": "",
        "%zz": "\ufffd",
    }


def test_a_response_is_written_in_aiohttps_header_order():
    response = Response(201, b"{}", {"Cache-Control": "no-cache"}, content_type="application/json")
    head, _, body = response.encode("HTTP/1.1", False, "close").partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 201 Created"
    assert [line.split(":")[0] for line in lines[1:]] == [
        *("Cache-Control", "Content-Type", "Content-Length", "Date", "Connection")
    ]
    assert body == b"{}"
    assert b"Content-Length" not in Response(204).encode("HTTP/1.1", False, None)
    head_only = Response(200, b"abc").encode("HTTP/1.1", True, None)
    assert head_only.endswith(b"\r\n\r\n") and b"Content-Length: 3" in head_only


# ---------------------------------------------------------------------- one connection, real TCP
async def serve(dispatch) -> tuple[HttpServer, asyncio.base_events.Server, int]:
    server = HttpServer(dispatch)
    listener = await asyncio.get_running_loop().create_server(server.factory, "127.0.0.1", 0)
    return server, listener, listener.sockets[0].getsockname()[1]


async def read_responses(reader: asyncio.StreamReader, count: int) -> list[tuple[str, bytes]]:
    found = []
    for _ in range(count):
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).decode()
        length = 0
        for line in head.split("\r\n"):
            if line.lower().startswith("content-length:"):
                length = int(line.split(":")[1])
        found.append((head.split("\r\n")[0], await reader.readexactly(length)))
    return found


async def test_pipelined_requests_are_answered_in_order_and_bad_input_closes_only_its_connection():
    started, release = asyncio.Event(), asyncio.Event()

    async def dispatch(request: Request) -> Response:
        if request.path == "/slow":
            started.set()
            await release.wait()
        return Response(200, request.path.encode() + b" " + await request.read())

    server, listener, port = await serve(dispatch)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        other_reader, other_writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
            + b"PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"2\r\nhi\r\n0\r\n\r\n"
            + b"NOT HTTP\r\n\r\n"
        )
        await asyncio.wait_for(started.wait(), 5)
        release.set()
        answers = await read_responses(reader, 3)
        assert answers == [
            ("HTTP/1.1 200 OK", b"/slow "),
            ("HTTP/1.1 200 OK", b"/b hi"),
            ("HTTP/1.0 400 Bad Request", b"Bad status line: 'NOT HTTP'"),
        ]
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed after the 400
        other_writer.write(b"GET /still HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await read_responses(other_reader, 1) == [("HTTP/1.1 200 OK", b"/still ")]
        other_writer.close()
        writer.close()
    finally:
        listener.close()
        await server.close()


async def test_100_continue_then_the_answer_and_a_graceful_close_waits_for_it():
    started, release = asyncio.Event(), asyncio.Event()

    async def dispatch(request: Request) -> Response:
        started.set()
        await release.wait()
        return Response(201, await request.read())

    server, listener, port = await serve(dispatch)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"PUT /q HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
    assert (
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5) == b"HTTP/1.1 100 Continue\r\n\r\n"
    )
    writer.write(b"{}")
    await asyncio.wait_for(started.wait(), 5)
    listener.close()
    closing = asyncio.ensure_future(server.close())
    release.set()
    assert await read_responses(reader, 1) == [("HTTP/1.1 201 Created", b"{}")]
    await asyncio.wait_for(closing, 5)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    assert not server.connections
    writer.close()
