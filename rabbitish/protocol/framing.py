"""Frame reader and writer. The reader checks the declared size against frame_max before it
buffers the payload, so a peer cannot make us hold an oversized frame in memory. Frame-level
error texts are built here the way RabbitMQ prints them (Erlang's ``~tp`` of the payload)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, Protocol, cast

from pamqp import commands, decode
from pamqp.base import Frame as Method

from rabbitish.engine import erlang_terms
from rabbitish.engine.errors import FRAME_ERROR, UNEXPECTED_FRAME, ConnectionError_, frame_error
from rabbitish.frontend.output import Chunk as Chunk  # written here, used by the channel
from rabbitish.protocol.field_tables import decode_table

FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"
FRAME_OVERHEAD = 8  # 7-byte header + frame-end octet

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
# RabbitMQ also accepts the 0-9 header and speaks 0-9-1 to it.
PROTOCOL_HEADER_0_9 = b"AMQP\x01\x01\x00\x09"
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"

_frame_header = struct.Struct(">BHI")
_method_index = struct.Struct(">I")
_content_header = struct.Struct(">HHQ")
_header_frame = struct.Struct(">BHIHHQ")  # frame header, then class, weight, body size
_body_after_header = struct.Struct(">BBHI")  # frame-end octet, then a body frame's header
_uint32 = struct.Struct(">I")

KNOWN_METHODS = frozenset(commands.INDEX_MAPPING)
# pamqp's method names ("Basic.Publish") -> method index ((class id << 16) | method id), for
# tables written with names and looked up by the index frames carry. pamqp's table holds only
# method classes; its inferred value type is plain `type`.
METHOD_INDEX = {
    cls.name: cls.index for cls in cast(list[type[Method]], list(commands.INDEX_MAPPING.values()))
}


class FrameSyncError(ConnectionError_):
    """A 501 after which the byte stream cannot be trusted: nothing more is read."""


class BadFrame(ConnectionError_):
    """A 501 or 505 about a whole frame no state takes: RabbitMQ reports these from tune-ok on
    (other handshake errors close the socket without a word)."""


# One whole frame as read off the wire: (type, channel, payload), the payload without the
# header and the frame-end byte. A plain tuple: one is made per frame read. A large body
# frame's payload is a view (`VIEWED_BODY_FRAME`), every other one bytes.
Payload = bytes | memoryview
RawFrame = tuple[int, int, Payload]
# From this size a body frame's payload is not copied out of what was read: the content's
# assembly (one join of the frames' views) is its only copy before the body is whole. Smaller
# ones are sliced, which costs less than a view for a few KiB.
VIEWED_BODY_FRAME = 64 * 1024
# After a full-size large body frame (more of its body follows), the next read is this short:
# the next frame is another large body frame, and all of it past what this read takes goes
# straight into its own buffer.
AFTER_BODY_READ = 4096
# Buffers of large body frames whose content is assembled, kept for the next ones, at most this
# many bytes in all: a new bytearray is zero-filled first, which costs about what reading into
# it does. One 16 MiB content's worth.
SPARE_FRAME_BYTES = 16 * 1024 * 1024


class SpareFrames:
    """Buffers of large body frames nothing views any more, by size, for the reader to fill
    again."""

    __slots__ = ("_by_size", "_bytes", "limit")

    def __init__(self, limit: int) -> None:
        self._by_size: dict[int, list[bytearray]] = {}
        self._bytes = 0
        self.limit = limit

    def take(self, size: int) -> bytearray:
        """A buffer of `size` bytes: a spare one (holding old bytes, all to be overwritten), or
        a new one."""
        spares = self._by_size.get(size)
        if spares:
            self._bytes -= size
            return spares.pop()
        return bytearray(size)

    def give_back(self, payload: Payload) -> None:
        """The content `payload` was part of is assembled: release the view, and keep the
        frame buffer under it if it is one of ours (a bytearray) that nothing else views. A
        bytearray refuses to shrink while any view of it lives, so popping its last byte
        (put back at once; neither moves the buffer) tells."""
        if not isinstance(payload, memoryview):
            return
        frame = payload.obj
        try:
            payload.release()  # refused while views of this view live
            if not isinstance(frame, bytearray) or self._bytes + len(frame) > self.limit:
                return
            frame.append(frame.pop())
        except BufferError:
            return
        self._by_size.setdefault(len(frame), []).append(frame)
        self._bytes += len(frame)


# The frame buffers every reader of the process draws on (each is filled by one read at a
# time: the loop thread's).
spare_frames = SpareFrames(SPARE_FRAME_BYTES)


class BodySink(Protocol):
    def payload_target(self, channel: int, size: int) -> memoryview | None:
        """Where the payload of a large body frame of `size` bytes on `channel`, its header
        just read, should go: the next `size` bytes of the body it belongs to, or None when
        no content on that channel is waiting for that many."""
        ...


class FrameReader:
    """Splits a byte stream into frames. Feed any slicing of the stream (one byte at a time works);
    frames come out whole and in order.

    Two ways in: `feed` bytes read anywhere, or `read_buffer` then `received`, which read a
    large body frame straight into its own buffer: no copy of it before the content's assembly.
    With a `body_sink`, a large body frame's payload goes straight into the content it belongs
    to instead, the sink's view its payload; the frame comes out once its frame-end octet is
    read, as any other.

    RabbitMQ lets a payload reach frame_max itself (not frame_max - 8): many clients get the
    overhead wrong, so the limit has that much slack."""

    __slots__ = (
        "_body_continues",
        "_frame",
        "_have",
        "_into_frame",
        "_need",
        "_rest",
        "_scratch",
        "_target",
        "_target_channel",
        "body_sink",
        "frame_max",
    )

    def __init__(self, frame_max: int) -> None:
        # The start of a frame not yet whole: in `_rest`, or, for a large body frame once its
        # header is in, in `_frame` (a buffer of its whole size), `_have` bytes of it...
        self._rest = bytearray()
        self._frame: bytearray | None = None
        self._have = 0
        self._need = 0  # ...and how many bytes it takes to get on with it
        self._body_continues = False  # the last frame out was a full-size large body frame
        self._into_frame = False  # the last `read_buffer` was the rest of `_frame`
        self._scratch = memoryview(b"")  # ...else this, the caller's
        # A large body frame whose payload goes to the sink's view, `_have` bytes of it in,
        # then its frame-end octet (the first byte of the next read).
        self._target: memoryview | None = None
        self._target_channel = 0
        self.body_sink: BodySink | None = None
        self.frame_max = frame_max

    def read_buffer(self, scratch: memoryview) -> memoryview:
        """Where the next read should go, `received` then told how much it took: the rest of a
        large body frame being read (straight into its own buffer), else (the front of)
        `scratch`, the caller's buffer, which `received` is done with when it returns."""
        target = self._target
        if target is not None and self._have < len(target):
            self._into_frame = True
            return target[self._have :]
        frame = self._frame
        if frame is not None:
            self._into_frame = True
            return memoryview(frame)[self._have :]
        self._into_frame = False
        self._scratch = scratch
        short = self._body_continues or target is not None
        return scratch[:AFTER_BODY_READ] if short else scratch

    def received(self, count: int) -> Iterator[RawFrame]:
        """`count` bytes were read into the last `read_buffer`: the frames now complete, as
        `feed` yields them."""
        if not self._into_frame:
            return self.feed(bytes(self._scratch[:count]))
        self._have += count
        frame = self._frame
        if frame is None:  # the sink's view: its frame-end octet comes with the next read
            return iter(())
        return self._whole_frame() if self._have == len(frame) else iter(())

    def _whole_frame(self) -> Iterator[RawFrame]:
        yield self._take_rest()

    def feed(self, data: bytes) -> Iterator[RawFrame]:
        """Take more bytes and yield every frame now complete. Raises a 501 connection error for
        an oversized frame (as soon as its header is in) or a wrong frame-end byte, after
        yielding the frames before it. Payloads are sliced from the bytes read (one copy each),
        except large body frames', which are views of them. Only an incomplete last frame is
        kept back, taking from the next read just the bytes it lacks, so a frame trickling in
        a byte at a time costs no more than one arriving at once, and frames that follow it
        are sliced from that read as the others are (a large message's frames seldom line up
        with reads). A large body frame kept back goes into a buffer of its own size, which
        its payload is then a view of."""
        offset = 0
        if self._rest or self._frame is not None:  # (neither while a sink's view is filled)
            offset = self._complete_rest(data)
            if offset < 0:
                return
            if not self._targeted:
                yield self._take_rest()
        if self._targeted:  # the kept-back frame's payload goes to the sink's view
            offset = self._fill_target(data, offset)
            if offset < 0:
                return
            yield self._take_target(data[offset - 1])
        buf = data
        available = len(buf)
        self._need = 7
        large = False  # the frame left incomplete at the end is a large body frame
        try:
            while available - offset >= 7:
                ftype, channel, size = _frame_header.unpack_from(buf, offset)
                if size > self.frame_max:
                    raise frame_too_large(ftype, size, self.frame_max)
                total = size + FRAME_OVERHEAD
                large = ftype == FRAME_BODY and size >= VIEWED_BODY_FRAME
                if available - offset < total:
                    self._need = total
                    break
                if large:
                    payload: Payload = memoryview(buf)[offset + 7 : offset + 7 + size]
                else:
                    payload = buf[offset + 7 : offset + 7 + size]
                self._body_continues = large and size == self.frame_max - FRAME_OVERHEAD
                end = buf[offset + total - 1]
                offset += total
                if end != FRAME_END:
                    reason = f"{{invalid_frame_end_marker,{end}}}"
                    raise FrameSyncError(FRAME_ERROR, _frame_text(ftype, payload, reason))
                yield ftype, channel, payload
        finally:
            if offset < available:
                if large and self._need > 7:
                    self._start_frame(memoryview(buf)[offset:])
                else:
                    self._rest += memoryview(buf)[offset:]

    def _start_frame(self, start: bytearray | memoryview) -> None:
        """Keep back the start of a large body frame (its header in): its payload in the
        sink's view when the sink takes it, else the whole frame in a buffer of its size;
        later reads fill either."""
        sink = self.body_sink
        if sink is not None:
            _ftype, channel, size = _frame_header.unpack_from(start, 0)
            target = sink.payload_target(channel, size)
            if target is not None:
                have = self._have = len(start) - 7  # the frame is not whole: at most `size`
                target[:have] = start[7:]
                self._target, self._target_channel = target, channel
                return
        frame = self._frame = spare_frames.take(self._need)
        have = self._have = len(start)
        frame[:have] = start

    def _fill_target(self, data: bytes, offset: int) -> int:
        """Move from `data` at `offset` what the sink's view lacks. Returns the offset past
        the frame-end octet that follows, or -1 when the payload or its frame-end octet is
        still to come (all of `data` taken)."""
        target = self._target
        assert target is not None
        have = self._have
        more = min(len(target) - have, len(data) - offset)
        if more:
            target[have : have + more] = memoryview(data)[offset : offset + more]
            self._have = have + more
        offset += more
        if self._have < len(target) or offset == len(data):
            return -1
        return offset + 1

    def _take_target(self, end: int) -> RawFrame:
        """The body frame read into the sink's view, now whole: `end` is its frame-end octet."""
        target = self._target
        assert target is not None
        self._target, self._have = None, 0
        self._body_continues = len(target) == self.frame_max - FRAME_OVERHEAD
        if end != FRAME_END:
            reason = f"{{invalid_frame_end_marker,{end}}}"
            raise FrameSyncError(FRAME_ERROR, _frame_text(FRAME_BODY, target, reason))
        return FRAME_BODY, self._target_channel, target

    def _complete_rest(self, data: bytes) -> int:
        """Move from the front of `data` what the kept-back frame lacks. Returns how many bytes
        of `data` that took, or -1 when the frame is still not whole (all of `data` taken)."""
        rest = self._rest
        taken = 0
        if self._frame is None and len(rest) < 7:  # its header first: it says how much more
            taken = min(7 - len(rest), len(data))
            rest += memoryview(data)[:taken]
            if len(rest) < 7:
                return -1
            ftype, _channel, size = _frame_header.unpack_from(rest, 0)
            if size > self.frame_max:
                raise frame_too_large(ftype, size, self.frame_max)
            self._need = size + FRAME_OVERHEAD
            if ftype == FRAME_BODY and size >= VIEWED_BODY_FRAME:
                self._start_frame(rest)
                rest.clear()
                if self._targeted:  # the caller fills the sink's view
                    return taken
        more = min(self._need - self.buffered, len(data) - taken)
        if more:
            frame = self._frame
            if frame is not None:
                frame[self._have : self._have + more] = memoryview(data)[taken : taken + more]
                self._have += more
            else:
                rest += memoryview(data)[taken : taken + more]
            taken += more
        return taken if self.buffered >= self._need else -1

    def _take_rest(self) -> RawFrame:
        """The kept-back frame, now whole. A large body frame's payload is a view of its own
        buffer; any other is copied out."""
        payload: Payload
        frame = self._frame
        if frame is not None:
            self._frame, self._have = None, 0
            ftype, channel, size = _frame_header.unpack_from(frame, 0)
            end = frame[size + 7]
            payload = memoryview(frame)[7 : 7 + size]
            self._body_continues = size == self.frame_max - FRAME_OVERHEAD
        else:
            rest = self._rest
            ftype, channel, size = _frame_header.unpack_from(rest, 0)
            end = rest[size + 7]
            with memoryview(rest) as view:
                payload = bytes(view[7 : 7 + size])
            rest.clear()
            self._body_continues = False
        if end != FRAME_END:
            reason = f"{{invalid_frame_end_marker,{end}}}"
            raise FrameSyncError(FRAME_ERROR, _frame_text(ftype, payload, reason))
        return ftype, channel, payload

    @property
    def _targeted(self) -> bool:
        """A large body frame's payload is being read into the sink's view. (A property, so
        the compiled build reads the attribute afresh after calls that may set it.)"""
        return self._target is not None

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held back (its header included)."""
        if self._target is not None:
            return 7 + self._have
        return self._have if self._frame is not None else len(self._rest)


# ---------------------------------------------------------------------- error texts
def frame_too_large(ftype: int, size: int, frame_max: int) -> FrameSyncError:
    return FrameSyncError(
        FRAME_ERROR,
        f"type {ftype}, all octets = <<>>: {{frame_too_large,{size},{frame_max - FRAME_OVERHEAD}}}",
    )


def unknown_frame(ftype: int, payload: Payload) -> ConnectionError_:
    """501 for a frame RabbitMQ cannot classify: unknown type, a method or content header too
    short to hold its fixed fields, a heartbeat with a payload."""
    return BadFrame(FRAME_ERROR, _frame_text(ftype, payload, "unknown_frame"))


def unexpected_frame_type(ftype: int, payload: Payload) -> ConnectionError_:
    """505 for a well-formed frame where none of its type may appear (content on channel 0, a
    heartbeat on a channel)."""
    return BadFrame(UNEXPECTED_FRAME, _frame_text(ftype, payload, None))


def cannot_decode(fields: bytes) -> ConnectionError_:
    """501 for method arguments that do not match the method's layout (Erlang's ``~w``)."""
    return frame_error(f"cannot decode {erlang_terms.written_binary(fields)}")


def _frame_text(ftype: int, payload: Payload, reason: str | None) -> str:
    """``type ~tp, ~ts octets = ~tp`` plus ``: ~tp`` of the reason."""
    scope = "all" if len(payload) <= 16 else "first 16"
    snippet = bytes(payload[:16])
    text = f"type {ftype}, {scope} octets = "
    text += erlang_terms.binary(snippet, erlang_terms.column(text))
    if reason is None:
        return text
    return erlang_terms.after(text + ": ", reason)


# ---------------------------------------------------------------------- methods
class MethodDecodeError(ValueError):
    """The arguments do not fit the method's layout (too short, too long)."""


class BadUtf8(MethodDecodeError):
    """A short string that is not UTF-8 (RabbitMQ checks them after the layout)."""


class MalformedTable(ValueError):
    """A field table whose size is right but whose content does not parse."""


class _Unplaced(ConnectionError_):
    """An error RabbitMQ reports without the method that caused it."""

    def at(self, class_id: int, method_id: int) -> _Unplaced:
        return self


def malformed_utf8() -> ConnectionError_:
    return _Unplaced(FRAME_ERROR, "Malformed UTF-8 in shortstr")


_LAYOUTS: dict[int, tuple[type[Method], tuple[tuple[str, str], ...]]] = {}


def _layout(index: int) -> tuple[type[Method], tuple[tuple[str, str], ...]]:
    layout = _LAYOUTS.get(index)
    if layout is None:
        # pamqp's table holds only method classes; its inferred value type is plain `type`.
        cls = cast(type[Method], commands.INDEX_MAPPING[index])
        fields = tuple((name, cls.amqp_type(name)) for name in cls.__slots__)
        layout = _LAYOUTS[index] = (cls, fields)
    return layout


def decode_method(payload: bytes) -> Method:
    """Decode a method frame payload. Raises KeyError for an unknown method index,
    MethodDecodeError when the arguments do not exactly fill the payload (RabbitMQ refuses
    trailing bytes too), BadUtf8 for a short string that is not UTF-8, MalformedTable for a
    table that does not parse."""
    (index,) = _method_index.unpack_from(payload, 0)
    cls, fields = _layout(index)
    method = cls.__new__(cls)  # every field is set below; skips pamqp's deprecation warnings
    size = len(payload)
    offset, bits, bit = 4, 0, 8
    bad_utf8 = False
    value: object
    try:
        for name, kind in fields:
            if kind == "bit":
                if bit == 8:
                    if offset >= size:
                        raise MethodDecodeError("missing bits octet")
                    bits, bit = payload[offset], 0
                    offset += 1
                value = bool(bits >> bit & 1)
                bit += 1
            else:
                bit = 8
                if kind == "shortstr":
                    end = offset + 1 + payload[offset]
                    if end > size:
                        raise MethodDecodeError(f"{name} runs past the end")
                    raw = payload[offset + 1 : end]
                    try:
                        value = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        bad_utf8, value = True, ""
                    offset = end
                elif kind == "table":
                    value, offset = _table(payload, offset)
                else:
                    consumed, value = decode.by_type(payload[offset:], kind)
                    offset += consumed
                    if offset > size:
                        raise MethodDecodeError(f"{name} runs past the end")
            setattr(method, name, value)
    except (MethodDecodeError, MalformedTable):
        raise
    except (ValueError, struct.error, IndexError) as err:
        raise MethodDecodeError(str(err)) from err
    if offset != size:
        raise MethodDecodeError(f"{size - offset} trailing bytes")
    if bad_utf8:
        raise BadUtf8("short string is not UTF-8")
    return method


def _table(payload: bytes, offset: int) -> tuple[dict[str, Any], int]:
    if offset + 4 > len(payload):
        raise MethodDecodeError("table size missing")
    end = offset + 4 + _uint32.unpack_from(payload, offset)[0]
    if end > len(payload):
        raise MethodDecodeError("table runs past the end")
    try:
        return decode_table(payload, offset + 4, end), end
    except (ValueError, struct.error, IndexError) as err:
        raise MalformedTable(str(err)) from err


def method_ids(payload: Payload) -> tuple[int, int]:
    """Class and method id of a method frame payload, without decoding the arguments."""
    if len(payload) < 4:
        return 0, 0
    return int.from_bytes(payload[0:2], "big"), int.from_bytes(payload[2:4], "big")


def method_index(payload: Payload) -> int:
    """(class id << 16) | method id; the caller made sure the payload holds four bytes."""
    index: int = _method_index.unpack_from(payload, 0)[0]
    return index


def decode_content_header(payload: bytes) -> tuple[int, int, bytes]:
    """Return (class_id, body_size, raw property bytes). Properties stay raw: they are forwarded
    byte-exact and decoded only when the broker needs a field."""
    if len(payload) < 14:
        raise ValueError("content header too short")
    class_id, _weight, body_size = _content_header.unpack_from(payload, 0)
    return class_id, body_size, payload[12:]


# ---------------------------------------------------------------------- writer
def encode_frame(ftype: int, channel: int, payload: bytes) -> bytes:
    return _frame_header.pack(ftype, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_method(channel: int, method: Method) -> bytes:
    payload = _method_index.pack(method.index) + method.marshal()
    return _frame_header.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_method_payload(channel: int, payload: bytes) -> bytes:
    """Frame an already-marshalled method payload (index + arguments)."""
    return _frame_header.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_close(
    channel: int, index: int, reply_code: int, reply_text: str, class_id: int, method_id: int
) -> bytes:
    """connection.close / channel.close with the reply text as RabbitMQ sends it: raw bytes
    (surrogate escapes become the bytes they stand for), cut to 252 bytes plus "..." when
    longer than a short string allows."""
    text = reply_text.encode("utf-8", "surrogateescape")
    if len(text) > 255:
        text = text[:252] + b"..."
    payload = (
        _method_index.pack(index)
        + struct.pack(">HB", reply_code, len(text))
        + text
        + struct.pack(">HH", class_id, method_id)
    )
    return encode_method_payload(channel, payload)


def encode_start(server_properties: dict[str, Any], mechanisms: str, locales: str) -> bytes:
    """connection.start (0-9), encoded here because pamqp sorts table keys and RabbitMQ does
    not: clients that print or compare the table see RabbitMQ's order."""
    payload = (
        struct.pack(">HHBB", 10, 10, 0, 9)
        + _ordered_table(server_properties)
        + _longstr(mechanisms.encode())
        + _longstr(locales.encode())
    )
    return encode_method_payload(0, payload)


def _ordered_table(table: dict[str, Any]) -> bytes:
    """A field table of booleans, strings and tables, in insertion order."""
    out = []
    for key, value in table.items():
        name = key.encode()
        out.append(bytes([len(name)]) + name)
        if isinstance(value, bool):
            out.append(b"t\x01" if value else b"t\x00")
        elif isinstance(value, dict):
            out.append(b"F" + _ordered_table(value))
        else:
            out.append(b"S" + _longstr(str(value).encode()))
    return _longstr(b"".join(out))


def _longstr(data: bytes) -> bytes:
    return _uint32.pack(len(data)) + data


def encode_content(
    channel: int, raw_properties: bytes, body: bytes, frame_max: int, out: list[Chunk]
) -> None:
    """Append the content header frame and body frames (split at frame_max - 8) to `out`. A
    body that fits one frame goes out as three parts: the header frame with the body frame's
    header, the body untouched, the frame-end octet. Larger bodies go out as views of the
    body, so the output's one join is the only copy."""
    size = len(body)
    header = _header_frame.pack(FRAME_HEADER, channel, 12 + len(raw_properties), 60, 0, size)
    chunk = frame_max - FRAME_OVERHEAD
    if size <= chunk:
        if size:
            out.append(
                header
                + raw_properties
                + _body_after_header.pack(FRAME_END, FRAME_BODY, channel, size)
            )
            out.append(body)
            out.append(FRAME_END_BYTE)
        else:
            out.append(header + raw_properties + FRAME_END_BYTE)
        return
    out.append(header + raw_properties + FRAME_END_BYTE)
    view = memoryview(body)
    for start in range(0, size, chunk):
        part = view[start : start + chunk]
        out.append(_frame_header.pack(FRAME_BODY, channel, len(part)))
        out.append(part)
        out.append(FRAME_END_BYTE)
