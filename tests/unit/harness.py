"""A sans-IO harness for the 0-9-1 protocol Connection: no socket, no event loop. It builds a
Connection on an engine Node (ManualScheduler timers), feeds it bytes (whole, or in any slicing,
down to one byte at a time) and decodes what it writes back.

    h = Harness()
    h.handshake()                              # start-ok, tune-ok, open; checks each reply
    h.send(1, commands.Channel.Open())         # -> [Out(channel 1, Channel.OpenOk)]
    h.feed(raw_bytes, chunks=1)                # one byte at a time
    Harness(after_header=b"...")               # bytes that came in with the protocol header
    Harness(node=h.node)                       # another connection to the same broker
    h.frames()                                 # output not yet taken, decoded

Any input that makes the Connection take its "internal error" path (an exception other than a
protocol error, logged and answered 541) fails the test at once with InternalError."""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pamqp import commands, frame, header
from pamqp.base import Frame as Method

from rabbitish.config import Config
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.journal import Failed, NullJournal, Synced
from rabbitish.engine.node import Node
from rabbitish.protocol.connection import Connection
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_METHOD,
    FrameReader,
    decode_method,
    encode_frame,
    encode_method,
)

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
_CLOSES = {(10, 50): "Connection.Close", (20, 40): "Channel.Close"}


class InternalError(AssertionError):
    """The Connection hit an unexpected exception (its 541 "internal error" path)."""


@dataclass(frozen=True)
class Close:
    """connection.close / channel.close, decoded by hand: the reply text keeps bytes that are
    not UTF-8 (as surrogate escapes), the way RabbitMQ prints binaries."""

    reply_code: int
    reply_text: str
    class_id: int
    method_id: int


@dataclass(frozen=True)
class Out:
    """One frame the Connection wrote."""

    type: int
    channel: int
    payload: bytes

    @property
    def name(self) -> str:
        """pamqp name of a method frame ('Channel.OpenOk'); 'header', 'body' or 'heartbeat'."""
        if self.type == FRAME_METHOD:
            ids = struct.unpack_from(">HH", self.payload)
            return _CLOSES.get(ids) or commands.INDEX_MAPPING[_index(self.payload)].name
        return {FRAME_HEADER: "header", FRAME_BODY: "body"}.get(self.type, "heartbeat")

    @property
    def method(self) -> Method:
        assert self.type == FRAME_METHOD
        return decode_method(self.payload)

    @property
    def close(self) -> Close | None:
        """The close this frame carries, if it is connection.close or channel.close."""
        if self.type != FRAME_METHOD or struct.unpack_from(">HH", self.payload) not in _CLOSES:
            return None
        code, size = struct.unpack_from(">HB", self.payload, 4)
        text = self.payload[7 : 7 + size].decode("utf-8", "surrogateescape")
        class_id, method_id = struct.unpack_from(">HH", self.payload, 7 + size)
        return Close(code, text, class_id, method_id)


def _index(payload: bytes) -> int:
    return struct.unpack_from(">I", payload)[0]


class HeldJournal(NullJournal):
    """A journal whose syncs wait for `release()`: keeps a tx.commit (and confirms) in progress
    across separate inputs."""

    def __init__(self) -> None:
        self.position = 0
        self.waiting: list[Callable[[], None]] = []

    def message_enqueued(self, queue: Any, entry: Any) -> None:
        self.position += 1

    def when_synced(self, position: int, callback: Synced, failed: Failed | None = None) -> None:
        self.waiting.append(callback)

    def release(self) -> None:
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            callback()


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_log = logging.getLogger("rabbitish.connection")


class Harness:
    def __init__(
        self,
        config: Config | None = None,
        *,
        users: dict[str, str] | None = None,
        vhosts: tuple[str, ...] = ("/",),
        hold_syncs: bool = False,
        after_header: bytes = b"",
        node: Node | None = None,
    ) -> None:
        self.config = config or Config(data_dir=":memory:", management_port=0)
        self.scheduler = ManualScheduler()
        self.node = node or Node(self.scheduler, vhosts=vhosts, users=users)
        self.journal: HeldJournal | None = None
        if hold_syncs:
            self.journal = HeldJournal()
            self.node.use_journal(self.journal)
        self.conn = Connection(self.node, self.config, peer="harness")
        self._reader = FrameReader(1 << 30)
        self._pending: list[Out] = []
        # The I/O layer accepted the protocol header; `after_header` came in with it.
        self._guarded(self.conn.start, after_header)

    # ------------------------------------------------------------------ input
    def feed(self, data: bytes, chunks: int | Iterable[int] | None = None) -> list[Out]:
        """Feed `data` whole, in pieces of `chunks` bytes (1: byte by byte) or cut at the given
        offsets; returns every frame written so far and not yet taken."""
        for piece in _pieces(data, chunks):
            self._guarded(self.conn.receive, piece)
        return self.frames()

    @staticmethod
    def _guarded(receive: Callable[[bytes], None], data: bytes) -> None:
        recorder = _Recorder()
        _log.addHandler(recorder)
        try:
            receive(data)
        finally:
            _log.removeHandler(recorder)
        internal = [r for r in recorder.records if r.getMessage().startswith("internal error")]
        if internal:
            exc = getattr(internal[0], "unexpected", None)
            raise InternalError(f"internal error while feeding {data!r}") from exc

    def send(self, channel: int, method: Method, chunks: int | None = None) -> list[Out]:
        return self.feed(encode_method(channel, method), chunks)

    def send_frame(self, ftype: int, channel: int, payload: bytes, chunks: int | None = None):
        return self.feed(encode_frame(ftype, channel, payload), chunks)

    def publish(
        self, channel: int, body: bytes, exchange: str = "", routing_key: str = "", **props: Any
    ) -> list[Out]:
        return self.feed(publish_bytes(channel, body, exchange, routing_key, **props))

    def sync(self) -> list[Out]:
        """Let held syncs complete (hold_syncs=True)."""
        assert self.journal is not None
        self.journal.release()
        return self.frames()

    # ------------------------------------------------------------------ output
    def frames(self) -> list[Out]:
        """Frames written since the last call, decoded. As the I/O layer does after each flush,
        consumers held back until output went out then deliver, and what they write is taken
        too."""
        conn = self.conn
        output = conn.take_output()
        while output:
            for ftype, channel, payload in self._reader.feed(output):
                self._pending.append(Out(ftype, channel, payload))
            conn.output_drained()
            output = conn.take_output()
        taken, self._pending = self._pending, []
        return taken

    @property
    def dropped(self) -> bool:
        """The Connection wants the socket closed (after flushing its output)."""
        return self.conn.should_close

    # ------------------------------------------------------------------ common sequences
    def handshake(
        self,
        user: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        chunks: int | None = None,
    ) -> list[Out]:
        """start-ok, tune-ok and open with the broker's own limits; checks connection.start,
        tune and open-ok came back, returns them."""
        seen = self.frames()
        assert [f.name for f in seen] == ["Connection.Start"], seen
        start_ok = commands.Connection.StartOk(
            client_properties={"capabilities": {"authentication_failure_close": True}},
            mechanism="PLAIN",
            response=f"\0{user}\0{password}",
        )
        tune = self.send(0, start_ok, chunks)
        assert [f.name for f in tune] == ["Connection.Tune"], tune
        seen += tune
        tuned = commands.Connection.TuneOk(
            channel_max=self.config.channel_max,
            frame_max=self.config.frame_max,
            heartbeat=self.config.heartbeat,
        )
        assert self.send(0, tuned, chunks) == []
        opened = self.send(0, commands.Connection.Open(virtual_host=vhost), chunks)
        assert [f.name for f in opened] == ["Connection.OpenOk"], opened
        return seen + opened

    def open_channel(self, channel: int = 1) -> None:
        replies = self.send(channel, commands.Channel.Open())
        assert [f.name for f in replies] == ["Channel.OpenOk"], replies


def publish_bytes(
    channel: int, body: bytes, exchange: str = "", routing_key: str = "", **props: Any
) -> bytes:
    """basic.publish, its content header and one body frame (none for an empty body)."""
    data = frame.marshal(
        commands.Basic.Publish(exchange=exchange, routing_key=routing_key), channel
    )
    content = header.ContentHeader(0, len(body), commands.Basic.Properties(**props))
    data += frame.marshal(content, channel)
    if body:
        data += encode_frame(FRAME_BODY, channel, body)
    return data


def _pieces(data: bytes, chunks: int | Iterable[int] | None) -> Iterable[bytes]:
    if chunks is None:
        yield data
    elif isinstance(chunks, int):
        for start in range(0, len(data), chunks):
            yield data[start : start + chunks]
    else:
        cuts = sorted({c for c in chunks if 0 < c < len(data)})
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            yield data[start:end]
