"""The connector's AMQP 0-9-1 client: a blocking socket, frames encoded and decoded with pamqp,
and only what the data source needs (PLAIN login, tune, TLS for amqps URLs, channels, tx,
basic.qos/consume/get/ack/nack, publisher confirms, queue.declare). It is the one place the
connector reads or writes the wire.

It exists for speed where Spark moves many messages: a task publishes thousands of messages
whose method (exchange, routing key) and properties repeat, so each distinct method frame is
encoded once and per message only the sizes and the body are packed, and frames leave in runs
of about FLUSH_BYTES; deliveries are parsed straight from the receive buffer into tuples
(RawDelivery), without a method object, a properties object or a callback per message.

Errors surface as the broker sent them: a channel the broker closed raises
ChannelClosedByBroker(reply code, reply text) at the next call that waits on the channel (and
on a flush), a closed connection ConnectionClosedByBroker, a lost socket ConnectionLost.
Heartbeats are sent while a call waits or writes; nothing runs between calls, so a caller that
sits idle longer than the heartbeat timeout must open its connection with heartbeats off."""

from __future__ import annotations

import contextlib
import datetime as dt
import select
import socket
import ssl
import struct
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pamqp import commands, common, frame, heartbeat
from pamqp.base import Frame

__all__ = [
    "AmqpError",
    "Channel",
    "ChannelClosedByBroker",
    "Connection",
    "ConnectionClosedByBroker",
    "ConnectionLost",
    "RawDelivery",
    "decode_properties",
    "encode_properties",
]

FRAME_MAX = 131_072  # what the client offers at tune (the broker may lower it)
FLUSH_BYTES = 1 << 20  # published frames buffered before they are written
READ_BYTES = 65_536  # one recv; below glibc's mmap threshold, so no munmap per read
DRAIN_BYTES = 16 << 20  # read at most this much per wait before dispatching frames
CONNECT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_END = b"\xce"
_FRAME_END_BYTE = 0xCE
_FRAME = struct.Struct(">BHI")  # type, channel, payload size
_HEADER = struct.Struct(">BHIHHQ")  # type 2, channel, size; class, weight, body size
_RESERVED = b"\x00\x00"  # the short that opens the arguments of methods naming a queue
NO_TABLE = b"\x00\x00\x00\x00"  # an empty field table


def shortstr(value: str) -> bytes:
    data = value.encode()
    if len(data) > 255:
        raise AmqpError(f"name longer than 255 bytes: {value!r}")
    return bytes((len(data),)) + data


def named_method(channel: int, method: type[Frame], fields: bytes) -> bytes:
    """A method frame with its arguments encoded here: pamqp refuses names outside ASCII
    letters, digits and a few signs, where RabbitMQ takes any UTF-8 name of up to 255 bytes."""
    payload = struct.pack(">I", method.index) + fields
    return _FRAME.pack(1, channel, len(payload)) + payload + FRAME_END


_BODY_SIZE = struct.Struct(">Q")
_TAG = struct.Struct(">Q")
_HEADER_FIXED = 12  # class, weight and body size ahead of the property list
_DELIVER = struct.pack(">HH", 60, 60)  # basic.deliver's class and method ids
_HEARTBEAT = frame.marshal(heartbeat.Heartbeat(), 0)
CLIENT_PROPERTIES: common.FieldTable = {
    "product": "rabbitish.spark",
    "capabilities": {
        "authentication_failure_close": True,  # a bad login is a connection.close, not EOF
        "basic.nack": True,
        "consumer_cancel_notify": True,
        "publisher_confirms": True,
    },
}

# A message as it arrived (basic.deliver or basic.get-ok): delivery tag, redelivered,
# exchange, routing key, the content header's property flags and list (still encoded), body.
RawDelivery = tuple[int, bool, str, str, bytes, bytes]


class AmqpError(Exception):
    """Anything that makes the connection or a channel unusable."""


class ConnectionLost(AmqpError):
    """The socket closed or failed under the connection."""


class ClosedByBroker(AmqpError):
    """The broker closed a channel or the connection: its reply code and text, as it sent
    them (e.g. 404, "NOT_FOUND - no exchange 'x' in vhost '/'")."""

    def __init__(self, reply_code: int, reply_text: str) -> None:
        super().__init__(reply_code, reply_text)
        self.reply_code = reply_code
        self.reply_text = reply_text

    def __repr__(self) -> str:
        return f"{type(self).__name__}: ({self.reply_code}) {self.reply_text!r}"


class ChannelClosedByBroker(ClosedByBroker):
    """channel.close from the broker."""


class ConnectionClosedByBroker(ClosedByBroker):
    """connection.close from the broker."""


@dataclass(frozen=True)
class Address:
    """What an amqp:// or amqps:// URL says (the query arguments heartbeat, frame_max,
    channel_max, connection_timeout and, for amqps, ssl_options' cafile / certfile / keyfile
    / server_hostname)."""

    host: str
    port: int
    user: str
    password: str
    vhost: str
    tls: ssl.SSLContext | None
    server_hostname: str | None
    heartbeat: int | None
    frame_max: int
    channel_max: int
    connect_timeout: float


def parse_url(url: str) -> Address:
    """amqp://user:password@host:port/vhost?heartbeat=N (vhost `%2F` is `/`), as pika reads
    it: defaults guest/guest, localhost, port 5672 (5671 for amqps), vhost `/`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("amqp", "amqps"):
        raise ValueError(f"Unexpected URL scheme {parts.scheme!r}; supported: amqp, amqps")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - _QUERY_KEYS)
    if unknown:
        raise ValueError(f"unsupported AMQP URL argument(s): {', '.join(unknown)}")
    tls, server_hostname = None, None
    if scheme == "amqps":
        tls, server_hostname = _tls(query.get("ssl_options"), parts.hostname or "localhost")
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    heartbeat_value = query.get("heartbeat")
    return Address(
        host=parts.hostname or "localhost",
        port=parts.port or (5671 if tls else 5672),
        user=unquote(parts.username) if parts.username is not None else "guest",
        password=unquote(parts.password or "") if parts.username is not None else "guest",
        vhost=unquote(path.split("/")[0]) if path else "/",
        tls=tls,
        server_hostname=server_hostname,
        heartbeat=None if heartbeat_value is None else int(heartbeat_value),
        frame_max=int(query.get("frame_max", FRAME_MAX)),
        channel_max=int(query.get("channel_max", 0)),
        connect_timeout=float(
            query.get("connection_timeout", query.get("socket_timeout", CONNECT_TIMEOUT))
        ),
    )


_QUERY_KEYS = {
    "heartbeat",
    "frame_max",
    "channel_max",
    "connection_timeout",
    "socket_timeout",
    "ssl_options",
}


def _tls(options: str | None, host: str) -> tuple[ssl.SSLContext, str | None]:
    """The default context (system CAs, host name checked) unless ssl_options (a Python
    dict literal, as pika takes it) names a CA file, a client certificate or a host name."""
    import ast

    opts: dict[str, Any] = ast.literal_eval(options) if options else {}
    context = ssl.create_default_context(
        cafile=opts.get("ca_certs") or opts.get("cafile"),
        capath=opts.get("ca_path") or opts.get("capath"),
    )
    if "certfile" in opts:
        context.load_cert_chain(opts["certfile"], opts.get("keyfile"), opts.get("password"))
    return context, opts.get("server_hostname", host)


def encode_properties(properties: commands.Basic.Properties) -> bytes:
    """A content header's property flags and list, as they go on the wire."""
    return properties.marshal()


def decode_properties(encoded: bytes) -> commands.Basic.Properties:
    """The property flags and list of a content header (RawDelivery's fifth field)."""
    flags, offset, word = 0, 0, 0
    while True:
        (part,) = struct.unpack_from(">H", encoded, offset)
        flags |= (part & 0xFFFE) << (16 * word)
        offset += 2
        word += 1
        if not part & 1:
            break
    properties = commands.Basic.Properties()
    properties.unmarshal(flags, encoded[offset:])
    return properties


def timestamp(seconds: int) -> dt.datetime:
    """An AMQP timestamp (whole seconds since the epoch) as the properties take it."""
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)


class Connection:
    """One AMQP connection on a blocking socket, used from one thread (`wake` excepted).
    `heartbeat` is the interval to ask for when the URL does not say: None takes the
    broker's proposal, 0 turns heartbeats off."""

    def __init__(self, url: str, heartbeat: int | None = None) -> None:
        address = parse_url(url)
        self._channels: dict[int, Channel] = {}
        self._buffer = bytearray()
        self._closed: AmqpError | None = None
        self._next_channel = 1
        self._last_send = time.monotonic()
        self._heartbeat = 0
        self.server_properties: dict[str, Any] = {}
        self.frame_max = FRAME_MAX
        self.channel_max = 0
        sock = socket.create_connection(
            (address.host, address.port), timeout=address.connect_timeout
        )
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if address.tls is not None:
                sock = address.tls.wrap_socket(sock, server_hostname=address.server_hostname)
            self._sock = sock
            self._wake_read, self._wake_write = socket.socketpair()
            self._wake_read.setblocking(False)
            self._wake_write.setblocking(False)
            self._handshake(address, heartbeat if address.heartbeat is None else address.heartbeat)
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise

    # -- public surface

    @property
    def is_open(self) -> bool:
        return self._closed is None

    @property
    def error(self) -> AmqpError | None:
        """Why the connection closed (None while it is open)."""
        return self._closed

    @property
    def server_capabilities(self) -> dict[str, Any]:
        capabilities = self.server_properties.get("capabilities")
        return capabilities if isinstance(capabilities, dict) else {}

    def channel(self) -> Channel:
        """A new channel, open."""
        self._check()
        number = self._next_channel
        self._next_channel += 1
        if self.channel_max and number > self.channel_max:
            raise AmqpError(f"no channel left (channel_max {self.channel_max})")
        channel = Channel(self, number)
        self._channels[number] = channel
        channel.call(commands.Channel.Open(), commands.Channel.OpenOk)
        return channel

    def process(self, timeout: float) -> None:
        """Reads what the broker sends for up to `timeout` seconds (0: only what is there);
        returns at the first data, or early when `wake` is called. Deliveries collect on
        their channels."""
        self._check()
        self._read(timeout)

    def wake(self) -> None:
        """Cuts a `process` wait short; callable from any thread."""
        with contextlib.suppress(OSError):
            self._wake_write.send(b"!")

    def close(self) -> None:
        """connection.close and its close-ok (briefly waited for), then the socket; closing
        discards uncommitted tx work and returns unacked messages to their queues."""
        if self._closed is None:
            with contextlib.suppress(AmqpError, OSError):
                self._send(
                    frame.marshal(commands.Connection.Close(200, "Normal shutdown", 0, 0), 0)
                )
                deadline = time.monotonic() + CLOSE_TIMEOUT
                while self._closed is None and time.monotonic() < deadline:
                    self._read(deadline - time.monotonic())
            self._lost(ConnectionClosedByBroker(200, "Normal shutdown"))
        self._shut()

    # -- what channels use

    def _send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as error:
            raise self._lost(ConnectionLost(f"Stream connection lost: {error!r}")) from error
        self._last_send = time.monotonic()

    def _wait(self, channel: Channel, ready: deque[Any]) -> Any:
        """The first of `ready` once there is one; raises when the channel or the connection
        closes first."""
        while not ready:
            channel.check()
            self._check()
            self._read(None)
        return ready.popleft()

    def _check(self) -> None:
        if self._closed is not None:
            raise self._closed

    # -- reading

    def _read(self, timeout: float | None) -> None:
        """One wait for data (sending heartbeats while it lasts), then every whole frame
        in the buffer dispatched."""
        sock = self._sock
        pending = isinstance(sock, ssl.SSLSocket) and sock.pending()
        if not pending:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                if self._heartbeat:
                    due = self._last_send + self._heartbeat / 2 - time.monotonic()
                    if due <= 0:
                        self._send(_HEARTBEAT)
                        due = self._heartbeat / 2
                    wait = due if wait is None else min(wait, due)
                readable, _, _ = select.select([sock, self._wake_read], [], [], wait)
                if self._wake_read in readable:
                    with contextlib.suppress(OSError):
                        self._wake_read.recv(4096)
                    if sock not in readable:
                        return
                if sock in readable:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    return
        # What is already there is read whole (up to DRAIN_BYTES): a message larger than one
        # read is taken in by one call, as a caller that waits for it to arrive expects.
        received = 0
        while True:
            try:
                data = sock.recv(READ_BYTES)
            except OSError as error:
                raise self._lost(ConnectionLost(f"Stream connection lost: {error!r}")) from error
            if not data:
                raise self._lost(ConnectionLost("Stream connection lost: the broker closed it"))
            self._buffer += data
            received += len(data)
            if received >= DRAIN_BYTES or not (
                (isinstance(sock, ssl.SSLSocket) and sock.pending())
                or select.select([sock], [], [], 0)[0]
            ):
                break
        self._frames()

    def _frames(self) -> None:
        """Dispatches every whole frame in the buffer. Deliveries are parsed here, by hand:
        this is the loop every message of a streaming read goes through."""
        buffer = self._buffer
        end = len(buffer)
        position = 0
        unpack = _FRAME.unpack_from
        channels = self._channels
        try:
            while end - position >= 8:
                kind, number, size = unpack(buffer, position)
                after = position + 8 + size
                if after > end:
                    break
                if buffer[after - 1] != _FRAME_END_BYTE:
                    raise self._lost(ConnectionLost("frame without its frame-end octet"))
                payload = position + 7
                channel = channels.get(number)
                if kind == 3 and channel is not None and channel.content is not None:
                    message = channel.content
                    parts = message[6]
                    parts.append(bytes(buffer[payload : payload + size]))
                    message[7] -= size
                    if message[7] <= 0:
                        channel.content = None
                        body = parts[0] if len(parts) == 1 else b"".join(parts)
                        sink = message[0]
                        if sink is None:
                            sink = channel.deliveries
                        sink.append((*message[1:6], body))
                elif kind == 2 and channel is not None and channel.content is not None:
                    message = channel.content
                    (body_size,) = _BODY_SIZE.unpack_from(buffer, payload + 4)
                    message[5] = bytes(buffer[payload + 12 : payload + size])
                    if body_size:
                        message[7] = body_size
                    else:
                        channel.content = None
                        sink = message[0]
                        if sink is None:
                            sink = channel.deliveries
                        sink.append((*message[1:6], b""))
                elif kind == 1:
                    if (
                        channel is not None
                        and buffer[payload : payload + 4] == _DELIVER
                        and channel.content is None
                    ):
                        channel.content = _deliver(buffer, payload)
                    else:
                        self._method(number, channel, bytes(buffer[position:after]))
                elif kind not in (2, 3, 8):  # 8: a heartbeat; stray content is dropped
                    raise self._lost(ConnectionLost(f"unexpected frame type {kind}"))
                position = after
        finally:
            if position:
                del buffer[:position]

    def _method(self, number: int, channel: Channel | None, data: bytes) -> None:
        _, _, method = frame.unmarshal(data)
        if number == 0:
            self._connection_method(method)
        elif channel is not None:
            channel.on_method(method)

    def _connection_method(self, method: Any) -> None:
        if isinstance(method, commands.Connection.Close):
            with contextlib.suppress(AmqpError):
                self._send(frame.marshal(commands.Connection.CloseOk(), 0))
            raise self._lost(ConnectionClosedByBroker(*_reply(method)))
        if isinstance(method, commands.Connection.CloseOk):
            self._lost(ConnectionClosedByBroker(200, "Normal shutdown"))
        # connection.blocked / unblocked and anything else: nothing to do here

    def _lost(self, error: AmqpError) -> AmqpError:
        if self._closed is None:
            self._closed = error
            for channel in self._channels.values():
                channel.closed = channel.closed or error
            self._shut()
        return self._closed

    def _shut(self) -> None:
        for sock in (self._sock, self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                sock.close()

    # -- opening

    def _handshake(self, address: Address, heartbeat_wanted: int | None) -> None:
        self._sock.sendall(PROTOCOL_HEADER)
        start = self._connection_reply(commands.Connection.Start)
        mechanisms = start.mechanisms
        if isinstance(mechanisms, bytes):
            mechanisms = mechanisms.decode()
        if "PLAIN" not in str(mechanisms).split():
            raise AmqpError(f"the broker offers no PLAIN login (only {mechanisms})")
        self.server_properties = dict(start.server_properties or {})
        response = f"\0{address.user}\0{address.password}"
        self._send_method(
            commands.Connection.StartOk(
                client_properties=CLIENT_PROPERTIES,
                mechanism="PLAIN",
                response=response,
                locale="en_US",
            )
        )
        tune = self._connection_reply(commands.Connection.Tune)
        self.channel_max = _negotiate(address.channel_max, tune.channel_max)
        self.frame_max = _negotiate(address.frame_max, tune.frame_max)
        self._heartbeat = tune.heartbeat if heartbeat_wanted is None else heartbeat_wanted
        self._send_method(
            commands.Connection.TuneOk(self.channel_max, self.frame_max, self._heartbeat)
        )
        self._send_method(commands.Connection.Open(virtual_host=address.vhost))
        self._connection_reply(commands.Connection.OpenOk)

    def _send_method(self, method: Frame) -> None:
        self._send(frame.marshal(method, 0))

    def _connection_reply(self, kind: type[Any]) -> Any:
        """The next method on channel 0 while opening, which must be `kind`; a
        connection.close (a refused login, an unknown vhost) raises what it says."""
        while True:
            while (
                len(self._buffer) < 8 or len(self._buffer) < 8 + _FRAME.unpack_from(self._buffer)[2]
            ):
                data = self._sock.recv(READ_BYTES)
                if not data:
                    raise self._lost(ConnectionLost("Stream connection lost while opening"))
                self._buffer += data
            consumed, _number, method = frame.unmarshal(bytes(self._buffer))
            del self._buffer[:consumed]
            if isinstance(method, kind):
                return method
            if isinstance(method, commands.Connection.Close):
                with contextlib.suppress(OSError):
                    self._sock.sendall(frame.marshal(commands.Connection.CloseOk(), 0))
                raise self._lost(ConnectionClosedByBroker(*_reply(method)))
            if not isinstance(method, heartbeat.Heartbeat):
                raise self._lost(AmqpError(f"expected {kind.__name__}, got {method!r}"))


def _reply(method: commands.Connection.Close | commands.Channel.Close) -> tuple[int, str]:
    return int(method.reply_code or 0), str(method.reply_text or "")


def _negotiate(client: int, server: int) -> int:
    """tune's rule for channel_max and frame_max: the lower, where 0 means no limit."""
    if not client or not server:
        return client or server
    return min(client, server)


def _deliver(buffer: bytearray, start: int) -> list[Any]:
    """basic.deliver's fields after class and method (consumer tag skipped): the content
    state of a message, [where it goes, tag, redelivered, exchange, routing key, properties,
    body parts, body bytes to come]; where it goes is None for a delivery (the channel's
    `deliveries` as it is when the message is complete: `take` replaces the list)."""
    at = start + 4
    at += 1 + buffer[at]  # consumer tag
    (tag,) = _TAG.unpack_from(buffer, at)
    redelivered = bool(buffer[at + 8] & 1)
    at += 9
    length = buffer[at]
    exchange = buffer[at + 1 : at + 1 + length].decode()
    at += 1 + length
    length = buffer[at]
    routing_key = buffer[at + 1 : at + 1 + length].decode()
    return [None, tag, redelivered, exchange, routing_key, b"", [], 0]


class Channel:
    """A channel of a Connection. Calls that need a reply (tx.commit, queue.declare,
    basic.get, ...) write what is buffered first and wait; basic.publish, ack and nack are
    buffered and written at the next call, at `flush`, or every FLUSH_BYTES."""

    def __init__(self, connection: Connection, number: int) -> None:
        self.connection = connection
        self.number = number
        self.closed: AmqpError | None = None
        self.content: list[Any] | None = None  # the message whose frames are arriving
        self.deliveries: list[RawDelivery] = []  # from basic.consume, until taken
        self._replies: deque[Any] = deque()
        self._commits_unanswered = 0  # tx.commits sent by `tx_commit_send`, not yet answered
        self._confirms: deque[Any] = deque()
        self._returned: list[RawDelivery] = []
        self._out: list[bytes] = []
        self._buffered = 0
        self._methods: dict[tuple[str, str, bool], bytes] = {}
        self._body_max = connection.frame_max - 8

    @property
    def is_open(self) -> bool:
        return self.closed is None

    def check(self) -> None:
        if self.closed is not None:
            raise self.closed

    # -- calls with a reply

    def call(self, method: Frame | bytes, reply: type[Any]) -> Any:
        """Sends `method` (after what is buffered; bytes: a method frame encoded already) and
        returns the broker's reply."""
        self.check()
        self._out.append(
            method if isinstance(method, bytes) else frame.marshal(method, self.number)
        )
        self._write()
        answer = self.connection._wait(self, self._replies)
        if not isinstance(answer, reply):
            raise AmqpError(f"expected {reply.__name__} on channel {self.number}, got {answer!r}")
        return answer

    def tx_select(self) -> None:
        self.call(commands.Tx.Select(), commands.Tx.SelectOk)

    def tx_commit(self) -> None:
        self.call(commands.Tx.Commit(), commands.Tx.CommitOk)

    def tx_commit_send(self) -> None:
        """tx.commit without waiting for its commit-ok, so the caller can read deliveries
        meanwhile: `tx_commits_wait` takes it, and so does anything else written on the channel
        before it goes (a broker refuses any method on a channel whose commit is in progress,
        504 CHANNEL_ERROR, as RabbitMQ does)."""
        self.check()
        self._out.append(frame.marshal(commands.Tx.Commit(), self.number))
        self._write()
        self._commits_unanswered += 1

    def tx_commits_wait(self) -> None:
        """Returns once every tx.commit sent by `tx_commit_send` is answered; raises what
        closed the channel or the connection first."""
        self.check()
        while self._commits_unanswered:
            answer = self.connection._wait(self, self._replies)
            self._commits_unanswered -= 1
            if not isinstance(answer, commands.Tx.CommitOk):
                raise AmqpError(f"expected Tx.CommitOk on channel {self.number}, got {answer!r}")

    def confirm_select(self) -> None:
        self.call(commands.Confirm.Select(), commands.Confirm.SelectOk)

    def basic_qos(self, prefetch_count: int) -> None:
        self.call(commands.Basic.Qos(prefetch_count=prefetch_count), commands.Basic.QosOk)

    def basic_consume(self, queue: str) -> str:
        """Consumes `queue` with acks; deliveries collect in `deliveries` (see `take`) as the
        connection reads. Returns the consumer tag."""
        consume = named_method(
            self.number,
            commands.Basic.Consume,
            _RESERVED + shortstr(queue) + b"\x00\x00" + NO_TABLE,
        )
        ok = self.call(consume, commands.Basic.ConsumeOk)
        return str(ok.consumer_tag)

    def take(self) -> list[RawDelivery]:
        """The deliveries that arrived since the last call, in order."""
        taken, self.deliveries = self.deliveries, []
        return taken

    def basic_get(self, queue: str, no_ack: bool = False) -> RawDelivery | None:
        self.check()
        fields = _RESERVED + shortstr(queue) + (b"\x01" if no_ack else b"\x00")
        self._out.append(named_method(self.number, commands.Basic.Get, fields))
        self._write()
        answer = self.connection._wait(self, self._replies)
        if isinstance(answer, commands.Basic.GetEmpty):
            return None
        if isinstance(answer, tuple):
            return answer
        raise AmqpError(f"expected basic.get-ok or get-empty, got {answer!r}")

    def queue_declare(
        self,
        queue: str,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
    ) -> commands.Queue.DeclareOk:
        bits = passive | durable << 1 | exclusive << 2 | auto_delete << 3
        fields = _RESERVED + shortstr(queue) + bytes([bits]) + NO_TABLE
        method = named_method(self.number, commands.Queue.Declare, fields)
        ok: commands.Queue.DeclareOk = self.call(method, commands.Queue.DeclareOk)
        return ok

    def close(self) -> None:
        """channel.close and its close-ok: what the broker does on closing (requeueing the
        channel's unacked messages) is done when this returns."""
        if self.closed is None:
            self.call(
                commands.Channel.Close(200, "Normal shutdown", 0, 0), commands.Channel.CloseOk
            )
            self.closed = AmqpError(f"channel {self.number} is closed")
            self.connection._channels.pop(self.number, None)

    # -- buffered: publish, ack, nack

    def publish(
        self,
        exchange: str,
        routing_key: str,
        properties: bytes,
        body: bytes,
        mandatory: bool = False,
    ) -> None:
        """One message; `properties` from `encode_properties`."""
        key = (exchange, routing_key, mandatory)
        method = self._methods.get(key)
        if method is None:
            fields = _RESERVED + shortstr(exchange) + shortstr(routing_key) + bytes([mandatory])
            method = self._methods[key] = named_method(self.number, commands.Basic.Publish, fields)
        size = len(body)
        number = self.number
        out = self._out
        out.append(method)
        out.append(_HEADER.pack(2, number, _HEADER_FIXED + len(properties), 60, 0, size))
        out.append(properties)
        out.append(FRAME_END)
        body_max = self._body_max
        if size <= body_max:
            if size:
                out.append(_FRAME.pack(3, number, size))
                out.append(body)
                out.append(FRAME_END)
        else:
            view = memoryview(body)
            for start in range(0, size, body_max):
                chunk = view[start : start + body_max]
                out.append(_FRAME.pack(3, number, len(chunk)))
                out.append(bytes(chunk))
                out.append(FRAME_END)
        self._buffered += size + len(method) + len(properties) + 22
        if self._buffered >= FLUSH_BYTES:
            self.flush()

    def basic_ack(self, delivery_tag: int, multiple: bool = False) -> None:
        ack = commands.Basic.Ack(delivery_tag=delivery_tag, multiple=multiple)
        self._out.append(frame.marshal(ack, self.number))

    def basic_nack(self, delivery_tag: int, multiple: bool = False, requeue: bool = True) -> None:
        nack = commands.Basic.Nack(delivery_tag=delivery_tag, multiple=multiple, requeue=requeue)
        self._out.append(frame.marshal(nack, self.number))

    def flush(self) -> None:
        """Writes what is buffered, then reads what the broker already sent: a channel it
        closed (a publish to an exchange that does not exist) raises here."""
        self.check()
        self._write()
        self.connection.process(0)
        self.check()

    def confirmed(self) -> bool:
        """On a channel in confirm mode, after one mandatory publish: waits for its confirm;
        False when the broker returned the message (no queue took it)."""
        self._write()
        self.connection._wait(self, self._confirms)
        returned = bool(self._returned)
        self._returned.clear()
        return not returned

    def _write(self) -> None:
        if self._out:
            self.tx_commits_wait()
            data = b"".join(self._out)
            self._out.clear()
            self._buffered = 0
            self.connection._send(data)

    # -- what the connection hands over

    def on_method(self, method: Any) -> None:
        """A method the broker sent on this channel (deliveries aside)."""
        if isinstance(method, commands.Basic.GetOk):
            self.content = [
                self._replies,
                method.delivery_tag,
                bool(method.redelivered),
                method.exchange,
                method.routing_key,
                b"",
                [],
                0,
            ]
        elif isinstance(method, commands.Basic.Return):
            self.content = [self._returned, 0, False, method.exchange, method.routing_key]
            self.content += [b"", [], 0]
        elif isinstance(method, commands.Basic.Deliver):  # met mid-content: parsed here
            self.content = [
                None,
                method.delivery_tag,
                bool(method.redelivered),
                method.exchange,
                method.routing_key,
                b"",
                [],
                0,
            ]
        elif isinstance(method, commands.Basic.Ack | commands.Basic.Nack):
            self._confirms.append(method)
        elif isinstance(method, commands.Channel.Close):
            with contextlib.suppress(AmqpError):
                self.connection._send(frame.marshal(commands.Channel.CloseOk(), self.number))
            self.closed = ChannelClosedByBroker(*_reply(method))
            self.connection._channels.pop(self.number, None)
        elif isinstance(method, commands.Basic.Cancel):
            self.closed = AmqpError(
                f"the broker cancelled consumer {method.consumer_tag!r} (was its queue deleted?)"
            )
        else:
            self._replies.append(method)
