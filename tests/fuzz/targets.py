"""One check per input path. Each takes a generated input and asserts the invariant every input
must keep: it is accepted, or it ends in a clean close with a proper reply code; never an
unhandled exception (the harness fails the connection's internal-error path), and never an
effect on another connection of the same broker, which must still work and must hold nothing
the fuzzed connection left behind once its socket is gone."""

from __future__ import annotations

import logging
import struct

from pamqp import commands
from rabbitish.bridge.codec import AMQP_HEADER, DecodeError, decode_all, encode, encode_frame
from rabbitish.bridge.codec import FrameReader as FrameReader10
from rabbitish.bridge.codec.definitions import Open
from rabbitish.bridge.connection import Connection10

from rabbitish.config import Config
from rabbitish.engine.errors import REPLY_NAMES
from rabbitish.protocol.field_tables import decode_table, encode_table
from rabbitish.protocol.field_types import check_table, typed_table
from rabbitish.protocol.framing import FrameReader, FrameSyncError
from rabbitish.protocol.states import ConnectionState
from tests.support.amqp10_values import same
from tests.unit.harness import Harness

# A close must carry a reply code RabbitMQ uses for errors. 541 is one (RabbitMQ answers it to
# content properties that do not parse); the harness fails any input that reaches the
# connection's internal-error path, whatever the code.
ERROR_CODES = frozenset(REPLY_NAMES) - {200}
VICTIM_QUEUE = "victim"


# ---------------------------------------------------------------------- frame reader
def frame_reader(data: bytes, cuts: list[int], frame_max: int) -> None:
    """Whole or sliced, the reader yields the same frames and then the same error, which is
    only ever a FrameSyncError."""
    whole = _read(data, [len(data)], frame_max)
    assert _read(data, cuts, frame_max) == whole
    assert _read(data, [1] * len(data), frame_max) == whole if len(data) < 300 else True


def _read(data: bytes, cuts: list[int], frame_max: int) -> tuple[list, str | None]:
    reader = FrameReader(frame_max)
    frames, pos = [], 0
    pieces = []
    for cut in cuts:
        pieces.append(data[pos : pos + cut])
        pos += cut
    pieces.append(data[pos:])
    try:
        for piece in pieces:
            frames.extend(reader.feed(piece))
    except FrameSyncError as err:
        return frames, err.reply_text
    return frames, None


# ---------------------------------------------------------------------- 0-9-1 connections
class Broker:
    """A node with one well-behaved connection on it (the victim), shared by many fuzzed
    connections in turn."""

    def __init__(self) -> None:
        self.victim = Harness()
        self.victim.handshake()
        self.victim.open_channel(1)
        self.victim.send(1, commands.Queue.Declare(queue=VICTIM_QUEUE))
        self.victim.frames()
        self.node = self.victim.node

    def connection(self) -> Harness:
        """A fuzzed connection: open, channel 1 open, queue "q" declared."""
        h = Harness(node=self.node)
        h.handshake()
        h.open_channel(1)
        h.send(1, commands.Queue.Declare(queue="q", auto_delete=False))
        h.send(1, commands.Queue.Purge(queue="q"))  # what earlier inputs left there
        h.frames()
        return h

    def check_after(self, h: Harness) -> None:
        """The fuzzed connection's socket goes; the victim still works, and nothing of the
        fuzzed connection is left: no connection, consumer or unacked message on any queue,
        no exclusive queue it owned."""
        h.conn.lost()
        assert h.conn not in self.node.connections
        for vhost in self.node.vhosts.values():
            for queue in vhost.queues.values():
                assert queue.consumer_count == 0, queue.name
                assert queue.unacked == 0, queue.name
                assert queue.exclusive_owner is not h.conn, queue.name
        v = self.victim
        v.feed(publish(1, VICTIM_QUEUE, b"ping"))
        got = v.send(1, commands.Basic.Get(queue=VICTIM_QUEUE, no_ack=True))
        assert [f.name for f in got] == ["Basic.GetOk", "header", "body"], got
        assert got[2].payload == b"ping"


def check_closes(out: list) -> None:
    for f in out:
        close = f.close
        if close is not None:
            assert close.reply_code in ERROR_CODES, close


def connection_input(broker: Broker, data: bytes, cuts: list[int]) -> None:
    """Any frames after open: handled, or a clean close."""
    h = broker.connection()
    out = h.feed(data, cuts or None)
    check_closes(out)
    broker.check_after(h)


def content(broker: Broker, header: bytes, body: bytes, body_cuts: list[int]) -> None:
    """A publish whose content header and body frames are generated: a message that arrives
    is the one sent, byte for byte; anything else ends in a clean close."""
    h = broker.connection()
    out = h.feed(publish(1, "q", b"", header), body_cuts or None)
    pos = 0
    for size in [*body_cuts, len(body)]:
        piece = body[pos : pos + size]
        pos += size
        if piece:
            out += h.feed(struct.pack(">BHI", 3, 1, len(piece)) + piece + b"\xce")
    check_closes(out)
    if h.conn.state is ConnectionState.OPEN and not h.dropped and 1 in h.conn.channels:
        got = h.send(1, commands.Basic.Get(queue="q", no_ack=True))
        check_closes(got)
        declared = struct.unpack_from(">Q", header, 4)[0] if len(header) >= 12 else -1
        if got and got[0].name == "Basic.GetOk":
            assert declared == len(body)
            assert got[1].payload[12:] == header[12:]
            assert b"".join(f.payload for f in got[2:]) == body
    broker.check_after(h)


def publish(channel: int, routing_key: str, body: bytes, header: bytes | None = None) -> bytes:
    if header is None:
        header = struct.pack(">HHQH", 60, 0, len(body), 0)
    method = commands.Basic.Publish(routing_key=routing_key)
    payload = struct.pack(">I", method.index) + method.marshal()
    out = struct.pack(">BHI", 1, channel, len(payload)) + payload + b"\xce"
    out += struct.pack(">BHI", 2, channel, len(header)) + header + b"\xce"
    if body:
        out += struct.pack(">BHI", 3, channel, len(body)) + body + b"\xce"
    return out


# ---------------------------------------------------------------------- field tables
def field_table(table: bytes) -> None:
    """The checker and the decoder agree on what is well formed, fail only with ValueError,
    and what decodes encodes to a table that decodes again."""
    end = 4 + struct.unpack_from(">I", table)[0] if len(table) >= 4 else -1
    if not 0 <= end <= len(table):
        return
    try:
        check_table(table, 4, end, utf8_keys=True)
        well_formed = True
    except ValueError:
        well_formed = False
    try:
        decoded = decode_table(table, 4, end)
    except ValueError:
        assert not well_formed
        return
    assert well_formed
    typed_table(table[:end])
    again = encode_table(decoded)
    check_table(again, 4, len(again), utf8_keys=True)
    decode_table(again, 4)


# ---------------------------------------------------------------------- AMQP 1.0
def codec_roundtrip(value: object) -> None:
    data = encode(value)
    (back,) = decode_all(data)
    assert same(back, value), (value, back)


def codec_bytes(data: bytes) -> None:
    """Any bytes decode or raise DecodeError, nothing else."""
    try:
        decode_all(data)
    except DecodeError:
        pass


class _InternalErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("internal error"):
            self.seen.append(record.getMessage())


def amqp10_connection(broker: Broker, data: bytes, cuts: list[int]) -> None:
    """Any bytes after the 1.0 open: handled, or a clean close; never the internal-error
    path; the 0-9-1 victim on the same broker unaffected."""
    conn = Connection10(broker.node, Config(), peer="fuzz")
    conn.start(AMQP_HEADER, encode_frame(0, Open(container_id="fuzz")))
    watcher = _InternalErrors()
    log = logging.getLogger("rabbitish.amqp10")
    log.addHandler(watcher)
    try:
        pos = 0
        for size in [*cuts, len(data)]:
            conn.receive(data[pos : pos + size])
            pos += size
    finally:
        log.removeHandler(watcher)
    assert not watcher.seen, watcher.seen
    output = conn.take_output()
    list(FrameReader10(1 << 24).feed(output[8:]))  # what it wrote parses
    conn.lost()
    v = broker.victim
    v.feed(publish(1, VICTIM_QUEUE, b"ping"))
    got = v.send(1, commands.Basic.Get(queue=VICTIM_QUEUE, no_ack=True))
    assert [f.name for f in got] == ["Basic.GetOk", "header", "body"], got
