"""HTTP/1.1 for the management API, on asyncio and nothing else: `RequestParser` turns bytes
into requests (sans-IO, so any bytes can be fed to it in a test), `HttpConnection` serves one
TCP connection with it (keep-alive, pipelining, `Expect: 100-continue`, HEAD, chunked request
bodies) and `HttpServer` holds the connections of one port for a graceful stop. The broker used
aiohttp here; importing it took longer than starting the rest of the broker, and the API uses
none of what it adds (no streaming, no websockets, no client), so this module keeps its wire
behaviour (status lines, header order, error texts, limits) without it."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from rabbitish.engine.auth import User

log = logging.getLogger("rabbitish.management")

MAX_LINE = 8190  # a request line or a header field (aiohttp's limits, kept)
MAX_HEADERS = 128
MAX_BODY = 1024**2  # a larger request body is answered 413 when a handler reads it
IDLE_TIMEOUT = 3630.0  # seconds a kept-alive connection may stay idle
PAUSE_AT = 16  # requests parsed and not yet answered before reading pauses
# What llhttp (aiohttp's parser) takes for a method; anything else is a bad request.
METHODS = frozenset(
    (
        *("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"),
        *("COPY", "LOCK", "MKCOL", "MOVE", "PROPFIND", "PROPPATCH", "SEARCH", "UNLOCK"),
        *("BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT", "MERGE"),
        *("M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PURGE", "MKCALENDAR", "LINK"),
        *("UNLINK", "SOURCE", "QUERY"),
    )
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(r"[\x21-\x7e]+")
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_NO_BODY_STATUSES = frozenset({204, 304})
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SERVER_ERROR_TEXT = "500 Internal Server Error\n\nServer got itself in trouble"


class BadRequest(Exception):
    """Input that is not HTTP/1.x as the API takes it: answered 400, then the connection closes."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class HttpError(Exception):
    """A reply with a plain-text body that ends a request early (413 for a body too large)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class Headers(dict[str, str]):
    """Request headers by lower-cased name (the first of repeated ones); lookups ignore case."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


@dataclass(slots=True)
class ParsedRequest:
    """One request as read from the wire: the head as sent, and the body whole."""

    method: str
    target: str
    version: str  # "HTTP/1.1" or "HTTP/1.0"
    headers: Headers
    body: bytes = b""
    too_large: bool = False  # the body exceeded MAX_BODY and was dropped

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in (self.headers.get("connection") or "").split(",")}
        if self.version == "HTTP/1.1":
            return "close" not in tokens
        return "keep-alive" in tokens


@dataclass(slots=True)
class ExpectsContinue:
    """A request head asked for `100 Continue` before it sends its body."""


@dataclass(slots=True)
class Request:
    """What a handler reads: the method, the decoded path (and its segments, each
    percent-decoded on its own so that `%2F` stays inside one, as vhost `/` needs), the query
    (first value of each name), headers, the peer's address and the body. The router fills
    `match_info`, authentication `authenticated`."""

    method: str
    path: str
    segments: list[str]
    query: dict[str, str]
    headers: Headers
    remote: str
    body: bytes = b""
    too_large: bool = False
    match_info: dict[str, str] = field(default_factory=dict)
    authenticated: User | None = None

    @classmethod
    def from_parsed(cls, parsed: ParsedRequest, remote: str) -> Request:
        target = parsed.target
        if target.startswith(("http://", "https://")):  # absolute form: only its path counts
            slash = target.find("/", target.index("//") + 2)
            target = target[slash:] if slash >= 0 else "/"
        target = target.partition("#")[0]
        raw_path, _, query = target.partition("?")
        segments = [decode_segment(s) for s in raw_path.split("/")[1:]]
        return cls(
            method=parsed.method,
            path="/" + "/".join(segments),
            segments=segments,
            query=parse_query(query),
            headers=parsed.headers,
            remote=remote,
            body=parsed.body,
            too_large=parsed.too_large,
        )

    async def read(self) -> bytes:
        """The body (awaitable, as handlers were written against a streaming server)."""
        if self.too_large:
            raise HttpError(413, f"Maximum request body size {MAX_BODY} exceeded.")
        return self.body

    @property
    def user(self) -> User:
        """The user the request logged in as (every /api/ request has one)."""
        if self.authenticated is None:
            raise LookupError(f"{self.path} was not authenticated")
        return self.authenticated


class Response:
    """Status, headers in the order given and a body. `content_type` (with `charset`) is
    written after the other headers, then Content-Length and Date."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self,
        status: int = 200,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        charset: str | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = dict(headers) if headers else {}
        if content_type is not None:
            self.headers["Content-Type"] = (
                f"{content_type}; charset={charset}" if charset else content_type
            )

    @classmethod
    def text(cls, status: int, text: str) -> Response:
        return cls(status, text.encode(), content_type="text/plain", charset="utf-8")

    def encode(self, version: str, head_only: bool, connection: str | None) -> bytes:
        """The response as bytes for a request of `version`; `connection`: a Connection
        header to add (close, keep-alive), if any."""
        lines = [f"{version} {self.status} {_phrase(self.status)}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        body = self.body
        if self.status not in _NO_BODY_STATUSES and (body or not head_only):
            lines.append(f"Content-Length: {len(body)}")
        lines.append(f"Date: {http_date()}")
        if connection is not None:
            lines.append(f"Connection: {connection}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head if head_only else head + body


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


_date_cache: tuple[int, str] = (0, "")


def http_date() -> str:
    """Now as an HTTP date (IMF-fixdate), made once a second."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        t = time.gmtime(now)
        text = (
            f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
        )
        _date_cache = (now, text)
    return _date_cache[1]


def decode_segment(raw: str) -> str:
    """Percent-decode one path segment: escapes that spell UTF-8 become text, any other
    escape (or a `%` that starts none) stays as it was sent."""
    if "%" not in raw:
        return raw
    return _ESCAPES.sub(_decode_escapes, raw)


def _decode_escapes(match: re.Match[str]) -> str:
    escapes = match.group()
    data = bytes.fromhex(escapes.replace("%", ""))
    try:
        return data.decode()
    except UnicodeDecodeError:
        pass
    out, at = [], 0  # bytes that are not UTF-8 keep their escapes, as sent
    for char in data.decode(errors="surrogateescape"):
        if "\udc80" <= char <= "\udcff":
            out.append(escapes[at * 3 : at * 3 + 3])
            at += 1
        else:
            out.append(char)
            at += len(char.encode())
    return "".join(out)


def parse_query(query: str) -> dict[str, str]:
    """name -> first value; `+` is a space, bad UTF-8 escapes become U+FFFD."""
    found: dict[str, str] = {}
    if query:
        for name, value in parse_qsl(query, keep_blank_values=True, errors="replace"):
            found.setdefault(name, value)
    return found


# ---------------------------------------------------------------------- parsing (sans-IO)
Event = ParsedRequest | ExpectsContinue | BadRequest


class RequestParser:
    """Bytes in (`feed`), events out: an `ExpectsContinue` when a head asks for one, a
    `ParsedRequest` once its body is complete, and a `BadRequest` for input it cannot take
    (always the last event: after it the parser takes nothing more)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._request: ParsedRequest | None = None  # head parsed, body pending
        self._remaining = 0  # Content-Length bytes still to come
        self._chunked = False
        self._chunk_state = "size"  # size | data | data-end | trailers
        self._body = bytearray()
        self._body_done = False
        self._failed = False
        self._scanned = 0  # how far the head being received has been checked
        self._lines = 0  # complete lines in it so far

    def feed(self, data: bytes) -> list[Event]:
        if self._failed:
            return []
        self._buffer += data
        events: list[Event] = []
        try:
            while True:
                if self._request is None:
                    if not self._read_head(events):
                        break
                elif not self._read_body():
                    break
                if self._request is not None and self._body_done:
                    events.append(self._finish())
        except BadRequest as err:
            self._failed = True
            self._buffer.clear()
            events.append(err)
        return events

    def _read_head(self, events: list[Event]) -> bool:
        buffer = self._buffer
        if buffer[:1] == b"\x16":  # a TLS handshake record
            raise BadRequest("Received HTTPS traffic on an HTTP port")
        while buffer.startswith(b"\r\n"):  # empty lines before a request line are ignored
            del buffer[:2]
        end = buffer.find(b"\r\n\r\n", max(0, self._scanned - 3))
        if end < 0:
            self._check_partial_head()
            return False
        head = bytes(buffer[:end])
        del buffer[: end + 4]
        self._scanned = self._lines = 0
        request = _parse_head(head)
        self._request = request
        self._body = bytearray()
        self._body_done = False
        te = request.headers.get("transfer-encoding")
        length = request.headers.get("content-length")
        if te is not None:
            self._chunked, self._chunk_state = True, "size"
        else:
            self._chunked = False
            self._remaining = int(length) if length is not None else 0
            request.too_large = self._remaining > MAX_BODY
            self._body_done = self._remaining == 0
        if (
            not self._body_done
            and request.version == "HTTP/1.1"
            and (request.headers.get("expect") or "").lower() == "100-continue"
        ):
            events.append(ExpectsContinue())
        return True

    def _check_partial_head(self) -> None:
        """Refuse a head that can no longer become valid: a line over MAX_LINE (each line is
        measured once, as it completes), too many lines, bare LF line ends."""
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scanned)
            line_end = len(buffer) if end < 0 else end
            if line_end - self._scanned > MAX_LINE:
                raise BadRequest(f"Got more than {MAX_LINE} bytes when reading.")
            if end < 0:
                break
            if end == 0 or buffer[end - 1] != 13:  # 13: CR
                raise BadRequest("Expected CRLF after version.")
            self._lines += 1
            if self._lines > MAX_HEADERS + 1:
                raise BadRequest("Too many headers.")
            self._scanned = end + 1

    def _read_body(self) -> bool:
        """Move what the buffer holds of the body; True when it is complete."""
        if self._chunked:
            return self._read_chunks()
        request = self._request
        assert request is not None
        take = min(self._remaining, len(self._buffer))
        if not request.too_large:
            self._body += self._buffer[:take]
        del self._buffer[:take]
        self._remaining -= take
        self._body_done = self._remaining == 0
        return self._body_done

    def _read_chunks(self) -> bool:
        buffer = self._buffer
        request = self._request
        assert request is not None
        while True:
            if self._chunk_state == "size":
                end = buffer.find(b"\r\n")
                if end < 0:
                    if len(buffer) > MAX_LINE:
                        raise BadRequest("Chunk size line too long.")
                    return False
                line = bytes(buffer[:end]).split(b";", 1)[0].strip()
                del buffer[: end + 2]
                if not line or not all(c in b"0123456789abcdefABCDEF" for c in line):
                    raise BadRequest("Invalid character in chunk size.")
                size = int(line, 16)
                self._remaining = size
                self._chunk_state = "data" if size else "trailers"
            elif self._chunk_state == "data":
                take = min(self._remaining, len(buffer))
                if not request.too_large:
                    self._body += buffer[:take]
                    if len(self._body) > MAX_BODY:
                        request.too_large = True
                        self._body = bytearray()
                del buffer[:take]
                self._remaining -= take
                if self._remaining:
                    return False
                self._chunk_state = "data-end"
            elif self._chunk_state == "data-end":
                if len(buffer) < 2:
                    return False
                if buffer[:2] != b"\r\n":
                    raise BadRequest("Expected CRLF after chunk data.")
                del buffer[:2]
                self._chunk_state = "size"
            else:  # trailers: lines up to an empty one, read and dropped
                end = buffer.find(b"\r\n")
                if end < 0:
                    if len(buffer) > MAX_LINE:
                        raise BadRequest(f"Got more than {MAX_LINE} bytes when reading.")
                    return False
                del buffer[: end + 2]
                if end == 0:
                    self._body_done = True
                    return True

    def _finish(self) -> ParsedRequest:
        request = self._request
        assert request is not None
        request.body = bytes(self._body)
        self._request = None
        self._body = bytearray()
        self._body_done = False
        return request


def _parse_head(head: bytes) -> ParsedRequest:
    """Request line and header fields (CRLF-separated, no empty line) -> a ParsedRequest."""
    if b"\n" in head.replace(b"\r\n", b"") or b"\r" in head.replace(b"\r\n", b""):
        raise BadRequest("Expected CRLF after version.")
    lines = head.decode("latin-1").split("\r\n")
    if len(lines[0]) > MAX_LINE:
        raise BadRequest(f"Got more than {MAX_LINE} bytes when reading.")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise BadRequest(f"Bad status line: {lines[0][:100]!r}")
    method, target, version = parts
    if method not in METHODS:
        raise BadRequest("Invalid method encountered.")
    if not _TARGET.fullmatch(target) or not target.startswith(("/", "http://", "https://")):
        raise BadRequest("Invalid char in url path.")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest("Invalid HTTP version.")
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest("Too many headers.")
    headers = Headers()
    seen_length: str | None = None
    for line in lines[1:]:
        if len(line) > MAX_LINE:
            raise BadRequest(f"Got more than {MAX_LINE} bytes when reading.")
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadRequest("Invalid header token.")
        value = value.strip(" \t")
        if "\x00" in value:
            raise BadRequest("Invalid header value char.")
        key = name.lower()
        if key == "content-length":
            if not value.isdigit() or not value.isascii():
                raise BadRequest("Invalid character in Content-Length.")
            if seen_length is not None and int(seen_length) != int(value):
                raise BadRequest("Duplicate Content-Length.")
            seen_length = value
        headers.setdefault(key, value)
    te = headers.get("transfer-encoding")
    if te is not None:
        if seen_length is not None:
            raise BadRequest("Transfer-Encoding can't be present with Content-Length.")
        if te.split(",")[-1].strip().lower() != "chunked":
            raise BadRequest("Request has invalid `Transfer-Encoding`.")
    if version == "HTTP/1.1" and "host" not in headers:
        raise BadRequest("Missing 'Host' header in request.")
    return ParsedRequest(method, target, version, headers)


# ---------------------------------------------------------------------- serving (asyncio)
Dispatch = Callable[[Request], Awaitable[Response]]


class HttpServer:
    """The connections of one port: `factory` makes the protocol for each accepted one,
    `close` lets them finish the request they are answering and closes them."""

    def __init__(self, dispatch: Dispatch) -> None:
        self.dispatch = dispatch
        self.connections: set[HttpConnection] = set()
        self._all_closed: asyncio.Event | None = None

    def factory(self) -> asyncio.Protocol:
        return HttpConnection(self)

    def closed(self, connection: HttpConnection) -> None:
        self.connections.discard(connection)
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float = 5.0) -> None:
        """Close every connection once it has answered the request it is on (at most
        `timeout` seconds; then they are dropped)."""
        self._all_closed = asyncio.Event()
        for connection in list(self.connections):
            connection.close_when_idle()
        if self.connections:
            try:
                await asyncio.wait_for(self._all_closed.wait(), timeout)
            except TimeoutError:
                for connection in list(self.connections):
                    connection.abort()


class HttpConnection(asyncio.Protocol):
    """One client connection: requests are answered one after the other, in the order they
    came (pipelined ones included); bad input gets a 400 and closes this connection only."""

    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._parser = RequestParser()
        self._transport: asyncio.Transport | None = None
        self._remote = ""
        self._queue: deque[Event] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._closing = False  # answer what is being answered, then close
        self._eof = False
        self._reading_paused = False
        self._writable: asyncio.Future[None] | None = None
        self._idle: asyncio.TimerHandle | None = None

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio's
        peer = transport.get_extra_info("peername")
        self._remote = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self._server.connections.add(self)
        self._arm_idle_timer()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._queue.extend(self._parser.feed(data))  # after a BadRequest it takes nothing
        if self._queue:
            self._start_worker()
            if len(self._queue) >= PAUSE_AT and not self._reading_paused:
                assert self._transport is not None
                self._transport.pause_reading()
                self._reading_paused = True

    def eof_received(self) -> bool:
        self._eof = True
        if self._worker is None and not self._queue and self._transport is not None:
            self._transport.close()
        return True  # keep our side open: requests before the end of input get answers

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.closed(self)
        self._transport = None
        self._queue.clear()
        if self._idle is not None:
            self._idle.cancel()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # shutdown
    def close_when_idle(self) -> None:
        self._closing = True
        self._queue.clear()
        if self._worker is None and self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # answering
    def _start_worker(self) -> None:
        if self._worker is None:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            self._worker = asyncio.get_running_loop().create_task(self._answer_queued())

    async def _answer_queued(self) -> None:
        try:
            while self._queue and self._transport is not None:
                item = self._queue.popleft()
                if self._reading_paused and len(self._queue) < PAUSE_AT // 2:
                    self._transport.resume_reading()
                    self._reading_paused = False
                if isinstance(item, ExpectsContinue):
                    self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                elif isinstance(item, BadRequest):
                    log.debug("bad HTTP request from %s: %s", self._remote, item.text)
                    response = Response.text(400, item.text)
                    self._write(response.encode("HTTP/1.0", False, None), close=True)
                else:
                    await self._answer(item)
                if self._writable is not None:
                    await self._writable
        finally:
            self._worker = None
        if self._transport is not None and (self._closing or self._eof) and not self._queue:
            self._transport.close()
        elif self._transport is not None:
            self._arm_idle_timer()

    async def _answer(self, parsed: ParsedRequest) -> None:
        request = Request.from_parsed(parsed, self._remote)
        keep_alive = parsed.keep_alive and not self._closing
        try:
            response = await self._server.dispatch(request)
        except HttpError as err:
            response = Response.text(err.status, err.text)
        except Exception:
            log.exception("Error handling request from %s", self._remote)
            response = Response.text(500, SERVER_ERROR_TEXT)
            keep_alive = False
        if not keep_alive:
            connection = "close" if parsed.version == "HTTP/1.1" else None
        else:
            connection = "keep-alive" if parsed.version == "HTTP/1.0" else None
        self._write(
            response.encode(parsed.version, parsed.method == "HEAD", connection),
            close=not keep_alive,
        )

    def _write(self, data: bytes, close: bool) -> None:
        if self._transport is None:
            return
        self._transport.write(data)
        if close:
            self._closing = True
            self._queue.clear()
            self._transport.close()

    def _arm_idle_timer(self) -> None:
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(IDLE_TIMEOUT, self._close_idle)

    def _close_idle(self) -> None:
        self._idle = None
        if self._worker is None and self._transport is not None:
            self._transport.close()
