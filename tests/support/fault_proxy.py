"""A TCP fault proxy for broken-network tests: real clients (pika, aio-pika, qpid-proton) connect
to it, it connects each of them to the broker, and, when told, breaks the connection at a chosen
point the way networks break:

- `stall(seconds)`: nothing is forwarded either way for a while, then everything goes on;
- `cut(prefix)`: a prefix of the frame is forwarded, then both sockets are closed (the broker
  reads half a frame and then EOF; the client sees its connection end);
- `trickle(delay)`: from then on one byte at a time, `delay` seconds apart, both ways;
- `vanish()`: nothing more is forwarded or read either way and nothing is ever closed: the broker
  keeps a half-open socket to a peer that is gone, which only its heartbeat (0-9-1) or idle
  time-out (1.0) can detect.

A fault fires once, at the first point its trigger names on any connection: after N bytes one
way (`after_bytes`), or when a frame passes that a predicate picks (`on_frame`, with matchers
for the frames the tests care about: `method("Tx.Commit")`, `performative("transfer")`,
`discharge()`). The proxy parses both protocols' framing to find frame boundaries (0-9-1 and
AMQP 1.0, headers and SASL included) and holds each frame whole until it decides, so a frame
never reaches the broker before its fault could fire.

It runs its own asyncio loop in a thread, so blocking clients and asyncio tests both use it:

    with FaultProxy(broker_port) as proxy:
        fault = proxy.arm(on_frame(TO_BROKER, method("Tx.Commit")), cut())
        connection = pika.BlockingConnection(pika.URLParameters(proxy.url(broker_url)))
        ...
        fault.wait()  # it fired

`broker_sockets(port)` counts the sockets a broker still holds on its port (from /proc/net/tcp),
so a test can see that a broken connection left no socket behind."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from pamqp import frame as pamqp_frame

TO_BROKER = "to-broker"
TO_CLIENT = "to-client"
HOST = "127.0.0.1"
TIMEOUT = 10.0

_AMQP091_HEADER = b"AMQP\x00\x00\x09\x01"
# AMQP 1.0 performatives by descriptor code (spec part 2.7), and the transaction bodies.
PERFORMATIVES = {
    0x10: "open",
    0x11: "begin",
    0x12: "attach",
    0x13: "flow",
    0x14: "transfer",
    0x15: "disposition",
    0x16: "detach",
    0x17: "end",
    0x18: "close",
    0x40: "sasl-mechanisms",
    0x41: "sasl-init",
    0x42: "sasl-challenge",
    0x43: "sasl-response",
    0x44: "sasl-outcome",
}
# amqp-value (0x77) holding a declare / discharge, described by code (0x31, 0x32) or, as
# qpid-proton writes them, by symbol: a transfer to a coordinator.
_AMQP_VALUE = b"\x00\x53\x77"
_DECLARE_BODY = (_AMQP_VALUE + b"\x00\x53\x31", _AMQP_VALUE + b"\x00\xa3\x11amqp:declare:list")
_DISCHARGE_BODY = (
    _AMQP_VALUE + b"\x00\x53\x32",
    _AMQP_VALUE + b"\x00\xa3\x13amqp:discharge:list",
)
_ACCEPTED = b"\x00\x53\x24"
_TRANSACTIONAL_STATE = b"\x00\x53\x34"


# ---------------------------------------------------------------------- frames
@dataclass(frozen=True)
class Frame:
    """One unit of the byte stream: a protocol header or a frame, with what it is.

    `name` is "header", "heartbeat" (0-9-1's heartbeat frame, 1.0's empty frame), a 0-9-1
    method's pamqp name ("Tx.Commit", "Basic.Ack"), "ContentHeader", "ContentBody", or a 1.0
    performative ("transfer", "disposition", ...)."""

    protocol: str  # "0-9-1" or "1.0"
    name: str
    channel: int
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


def split_frame(protocol: str, buffer: bytes | bytearray) -> Frame | None:
    """The first whole frame (or protocol header) at the start of `buffer`; None if it is not
    all there yet."""
    if buffer[:4] == b"AMQP":
        return Frame(protocol, "header", 0, bytes(buffer[:8])) if len(buffer) >= 8 else None
    if protocol == "0-9-1":
        if len(buffer) < 7:
            return None
        kind, channel, size = struct.unpack_from(">BHI", buffer)
        end = 7 + size + 1
        if len(buffer) < end:
            return None
        data = bytes(buffer[:end])
        return Frame(protocol, _name_091(kind, data), channel, data)
    if len(buffer) < 8:
        return None
    size, doff, _kind, channel = struct.unpack_from(">IBBH", buffer)
    if len(buffer) < size:
        return None
    data = bytes(buffer[:size])
    return Frame(protocol, _name_10(data, doff * 4), channel, data)


def _name_091(kind: int, data: bytes) -> str:
    if kind == 1:
        _consumed, _channel, method = pamqp_frame.unmarshal(data)
        return method.name
    return {2: "ContentHeader", 3: "ContentBody", 8: "heartbeat"}.get(kind, f"frame-{kind}")


def _name_10(data: bytes, body_at: int) -> str:
    if len(data) <= body_at:
        return "heartbeat"
    if data[body_at : body_at + 2] == b"\x00\x53":
        code = data[body_at + 2]
    elif data[body_at : body_at + 2] == b"\x00\x80":
        code = int.from_bytes(data[body_at + 2 : body_at + 10], "big")
    else:
        return "unknown"
    return PERFORMATIVES.get(code, f"performative-{code:#x}")


# ---------------------------------------------------------------------- triggers
FrameMatch = Callable[[Frame], bool]


def method(name: str) -> FrameMatch:
    """A 0-9-1 method frame, by pamqp's name: "Tx.Commit", "Tx.CommitOk", "Basic.Ack"."""
    return lambda frame: frame.name == name


def performative(name: str) -> FrameMatch:
    """A 1.0 frame, by performative: "transfer", "disposition", "attach"."""
    return lambda frame: frame.name == name


def discharge() -> FrameMatch:
    """A 1.0 transfer to a coordinator carrying a discharge (commit or rollback)."""
    return lambda frame: frame.name == "transfer" and _carries(frame, _DISCHARGE_BODY)


def declare() -> FrameMatch:
    """A 1.0 transfer to a coordinator carrying a declare."""
    return lambda frame: frame.name == "transfer" and _carries(frame, _DECLARE_BODY)


def _carries(frame: Frame, bodies: tuple[bytes, ...]) -> bool:
    return any(body in frame.data for body in bodies)


def body_after(match: FrameMatch) -> FrameMatch:
    """For faults inside a 0-9-1 message: the body frame of a method `match` picked, or its
    content header if the body is empty (so a cut there leaves the message half sent)."""
    waiting: set[int] = set()

    def matches(frame: Frame) -> bool:
        if match(frame):
            waiting.add(frame.channel)
            return False
        if frame.channel not in waiting:
            return False
        empty = frame.name == "ContentHeader" and not int.from_bytes(frame.data[11:19], "big")
        if frame.name == "ContentBody" or empty:
            waiting.discard(frame.channel)
            return True
        return False

    return matches


def message_transfer() -> FrameMatch:
    """A 1.0 transfer of a message (not a coordinator's declare or discharge)."""
    return lambda frame: (
        frame.name == "transfer"
        and not _carries(frame, _DECLARE_BODY)
        and not _carries(frame, _DISCHARGE_BODY)
    )


def discharged() -> FrameMatch:
    """The broker's answer to a discharge: a disposition with a plain accepted outcome (the
    transactional sends' dispositions carry a transactional-state instead)."""
    return lambda frame: (
        frame.name == "disposition"
        and _ACCEPTED in frame.data
        and _TRANSACTIONAL_STATE not in frame.data
    )


@dataclass
class Trigger:
    """Where a fault fires: in `direction`, at the frame `frame` picks (at its first byte), or
    once `after` bytes went that way (in the middle of a frame if that is where they end)."""

    direction: str
    frame: FrameMatch | None = None
    after: int | None = None
    skip: int = 0  # frames `frame` picks to let pass first

    def fires_at(self, frame: Frame) -> bool:
        if self.frame is None or not self.frame(frame):
            return False
        if self.skip:
            self.skip -= 1
            return False
        return True


def on_frame(direction: str, match: FrameMatch, skip: int = 0) -> Trigger:
    """At the first frame going `direction` that `match` picks, after letting `skip` pass."""
    return Trigger(direction, frame=match, skip=skip)


def after_bytes(direction: str, count: int) -> Trigger:
    return Trigger(direction, after=count)


# ---------------------------------------------------------------------- actions
@dataclass(frozen=True)
class Action:
    kind: str  # stall, cut, trickle, vanish
    seconds: float = 0.0  # stall: how long; trickle: the delay between bytes
    prefix: int | None = None  # cut at a frame: bytes of it forwarded (None: half of it)


def stall(seconds: float) -> Action:
    return Action("stall", seconds=seconds)


def cut(prefix: int | None = None) -> Action:
    return Action("cut", prefix=prefix)


def trickle(delay: float = 0.005) -> Action:
    return Action("trickle", seconds=delay)


def vanish() -> Action:
    return Action("vanish")


@dataclass
class Fault:
    """An armed fault; `wait()` returns the frame it fired at once it has."""

    trigger: Trigger
    action: Action
    fired_at: Frame | None = None
    link: int | None = None  # which connection (0 = the first the proxy accepted)
    _fired: threading.Event = field(default_factory=threading.Event)

    @property
    def fired(self) -> bool:
        return self._fired.is_set()

    def fired_within(self, timeout: float) -> bool:
        return self._fired.wait(timeout)

    def wait(self, timeout: float = TIMEOUT) -> Frame | None:
        if not self._fired.wait(timeout):
            raise AssertionError(f"fault {self.action.kind} did not fire within {timeout} s")
        return self.fired_at


# ---------------------------------------------------------------------- the proxy
class _Link:
    """One client connection and its connection to the broker."""

    def __init__(self, proxy: FaultProxy, number: int, client, upstream) -> None:
        self.proxy = proxy
        self.number = number
        self.client_reader, self.client_writer = client
        self.broker_reader, self.broker_writer = upstream
        self.protocol: str | None = None
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.trickle_delay = 0.0
        self.vanished = False
        self.closed = False
        self.forwarded = {TO_BROKER: 0, TO_CLIENT: 0}

    async def run(self) -> None:
        await asyncio.gather(
            self._pump(TO_BROKER, self.client_reader, self.broker_writer),
            self._pump(TO_CLIENT, self.broker_reader, self.client_writer),
        )

    async def _pump(
        self, direction: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            await self._pass_on(direction, reader, writer)
        except OSError:  # a reset from either side: the other side goes too
            self._close()

    async def _pass_on(
        self, direction: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        buffer = bytearray()
        while not self.closed and not self.vanished:
            data = await reader.read(65536)
            if self.vanished:
                return
            if not data:
                if buffer and not self.vanished:
                    await self._send(direction, writer, bytes(buffer))
                self._close()  # EOF: pass the hang-up on, as a plain proxy would
                return
            buffer += data
            if self.protocol is None and direction == TO_BROKER and len(buffer) >= 8:
                self.protocol = "0-9-1" if buffer[:8] == _AMQP091_HEADER else "1.0"
            while self.protocol is not None and not self.closed and not self.vanished:
                frame = split_frame(self.protocol, buffer)
                if frame is None:
                    break
                del buffer[: frame.size]
                await self._forward(direction, writer, frame)

    async def _forward(self, direction: str, writer: asyncio.StreamWriter, frame: Frame) -> None:
        fault, offset = self.proxy._fault_for(self, direction, frame)
        data = frame.data
        if fault is None:
            await self._send(direction, writer, data)
            return
        action = fault.action
        if action.kind == "cut" and fault.trigger.frame is not None:
            offset = action.prefix if action.prefix is not None else frame.size // 2
        await self._send(direction, writer, data[:offset])
        fault.fired_at, fault.link = frame, self.number
        if action.kind == "cut":
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            self._close()
        elif action.kind == "vanish":
            self.vanished = True
        elif action.kind == "stall":
            self.flowing.clear()
            asyncio.get_running_loop().call_later(action.seconds, self.flowing.set)
        elif action.kind == "trickle":
            self.trickle_delay = action.seconds
        fault._fired.set()
        if action.kind in ("stall", "trickle"):
            await self._send(direction, writer, data[offset:])

    async def _send(self, direction: str, writer: asyncio.StreamWriter, data: bytes) -> None:
        if not data:
            return
        await self.flowing.wait()
        if self.closed or self.vanished:
            return
        if self.trickle_delay:
            for index in range(len(data)):
                await self.flowing.wait()
                if self.closed or self.vanished:
                    return
                writer.write(data[index : index + 1])
                self.forwarded[direction] += 1
                await asyncio.sleep(self.trickle_delay)
            return
        writer.write(data)
        self.forwarded[direction] += len(data)
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    def _close(self) -> None:
        if self.closed or self.vanished:
            return
        self.closed = True
        self.flowing.set()
        for writer in (self.client_writer, self.broker_writer):
            writer.close()

    def abort(self) -> None:
        """The proxy stops: drop both sockets, whatever state the link is in."""
        self.closed = True
        self.flowing.set()
        for writer in (self.client_writer, self.broker_writer):
            writer.transport.abort()


class FaultProxy:
    """Listens on an ephemeral port of 127.0.0.1 and connects each client to the broker at
    (`broker_host`, `broker_port`), passing bytes both ways until an armed fault fires."""

    def __init__(self, broker_port: int, broker_host: str = HOST) -> None:
        self.broker = (broker_host, broker_port)
        self.port = 0
        self.links: list[_Link] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy")
        self._server: asyncio.Server | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> FaultProxy:
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._accept, HOST, 0))
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(TIMEOUT)
        self._loop.close()

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for link in self.links:
            link.abort()
        await asyncio.sleep(0)

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(TIMEOUT)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection(*self.broker)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(self, len(self.links), (reader, writer), upstream)
        self.links.append(link)
        await link.run()

    # ------------------------------------------------------------------ use
    def url(self, broker_url: str) -> str:
        """`broker_url` (amqp://user:pass@host:port/vhost) pointed at the proxy instead."""
        parsed = urlparse(broker_url)
        credentials = parsed.netloc.rsplit("@", 1)[0] + "@" if "@" in parsed.netloc else ""
        return urlunparse(parsed._replace(netloc=f"{credentials}{HOST}:{self.port}"))

    def arm(self, trigger: Trigger, action: Action) -> Fault:
        """Arm a fault: it fires once, at the first point of any connection `trigger` names."""
        fault = Fault(trigger, action)
        with self._lock:
            self._faults.append(fault)
        return fault

    def abort_all(self) -> None:
        """Drop every connection's sockets at once (both ends see a reset), vanished or not."""

        async def run() -> None:
            for link in self.links:
                link.abort()

        self._call(run())

    def disarm(self) -> None:
        """Forget the faults that have not fired."""
        with self._lock:
            self._faults.clear()

    def heal(self) -> None:
        """End stalls and trickles on every connection (cut and vanished ones stay so)."""

        def run() -> None:
            for link in self.links:
                link.trickle_delay = 0.0
                link.flowing.set()

        self._loop.call_soon_threadsafe(run)

    def _fault_for(self, link: _Link, direction: str, frame: Frame) -> tuple[Fault | None, int]:
        """The armed fault this frame fires, if any, and at which byte of it (and disarm it)."""
        sent = link.forwarded[direction]
        with self._lock:
            for fault in self._faults:
                trigger = fault.trigger
                if trigger.direction != direction:
                    continue
                if trigger.fires_at(frame):
                    self._faults.remove(fault)
                    return fault, 0
                if trigger.after is not None and sent + frame.size >= trigger.after:
                    self._faults.remove(fault)
                    return fault, max(0, trigger.after - sent)
        return None, 0


# ---------------------------------------------------------------------- the broker's sockets
_LISTEN, _TIME_WAIT = "0A", "06"


def broker_sockets(port: int) -> int:
    """Sockets a process holds open on local `port` besides its listener (Linux: from
    /proc/net/tcp and tcp6; closed sockets the kernel still finishes, which no process holds,
    have inode 0 and do not count). -1 where /proc/net/tcp cannot be read."""
    found = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            if table.endswith("tcp"):
                return -1
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            state, inode = fields[3], fields[9]
            if local_port == port and state not in (_LISTEN, _TIME_WAIT) and inode != "0":
                found += 1
    return found


def frames_of(protocol: str, data: bytes) -> Iterator[Frame]:
    """Every whole frame of a recorded byte stream, in order (for checking the parser)."""
    buffer = bytearray(data)
    while (frame := split_frame(protocol, buffer)) is not None:
        del buffer[: frame.size]
        yield frame
