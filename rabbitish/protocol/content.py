"""Content assembly for one channel: a content-carrying method (basic.publish), then its header,
then body frames until the announced size is in; the whole command goes to the method's handler.
The channel's state table (states.py) decides which frame may come next and hands header and
body frames straight to `header_frame` and `body_frame`, so assembling costs no call beyond the
channel's own dispatch; this class moves the channel through the content states it reports."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from rabbitish.engine.errors import (
    AMQPError,
    ConnectionError_,
    message_too_large,
    unexpected_frame,
)
from rabbitish.frontend.unfilled_bytes import unfilled_bytes
from rabbitish.protocol.framing import (
    VIEWED_BODY_FRAME,
    Payload,
    decode_content_header,
    spare_frames,
)
from rabbitish.protocol.states import ChannelEvent, Rule

PUBLISH = (60, 40)  # the one method that carries content from a client
# From this size a body is built in place: an unfilled bytes object the body frames are copied
# or read into (`payload_target`), where smaller ones are joined from their frames.
BUILT_IN_PLACE = VIEWED_BODY_FRAME
_CONTENT_METHOD = ChannelEvent.CONTENT_METHOD
_CONTENT_HEADER = ChannelEvent.CONTENT_HEADER
_CONTENT_DONE = ChannelEvent.CONTENT_DONE

# handler(owner, *method fields, raw properties, body): the method's handler, given it whole.
ContentHandler = Callable[..., None]


class ContentAssembly:
    """The content command being received on one channel."""

    __slots__ = (
        "_advance",
        "_body",
        "_body_parts",
        "_body_size",
        "_body_view",
        "_fields",
        "_handed",
        "_handler",
        "_max_size",
        "_owner",
        "_raw_properties",
        "_received",
        "_refuse",
    )

    def __init__(
        self,
        owner: object,
        max_size: int,
        advance: Callable[[ChannelEvent], None],
        refuse: Callable[[AMQPError], None],
    ) -> None:
        """`owner` (the channel) is the handlers' first argument; `advance` moves its state
        through the content events; `refuse` closes it with a soft error (a body over
        `max_size` bytes, or one the handler raised)."""
        self._owner = owner
        self._max_size = max_size
        self._advance = advance
        self._refuse = refuse
        self._handler: ContentHandler | None = None
        self._fields: tuple[Any, ...] = ()
        self._body_size = 0
        self._raw_properties = b""
        self._body_parts: list[Payload] = []
        self._received = 0
        # A large body built in place: the bytes object, the writable view of it, and the part
        # of that view handed to the frame reader for the next body frame.
        self._body: bytes | None = None
        self._body_view: memoryview | None = None
        self._handed: memoryview | None = None

    def start(self, handler: ContentHandler, fields: tuple[Any, ...]) -> None:
        """A content-carrying method came with these decoded fields: its header is next."""
        self._handler = handler
        self._fields = fields
        self._raw_properties = b""
        self._body_parts = []
        self._received = 0
        self._drop_body()
        self._advance(_CONTENT_METHOD)

    def header_frame(self, rule: Rule, ftype: int, payload: Payload) -> None:
        """The content header: the body size and the raw properties (kept as they came)."""
        assert isinstance(payload, bytes), "a content header's payload is never a view"
        try:
            class_id, body_size, raw = decode_content_header(payload)
        except (ValueError, struct.error) as err:
            # RabbitMQ's assembler crashes on a header without property flags.
            raise ConnectionError_(541, "").at(0, 0) from err
        if class_id != 60:
            raise unexpected_frame(
                f"expected content header for class 60, got one for class {class_id} instead"
            ).at(*PUBLISH)
        limit = self._max_size
        if body_size > limit:
            # RabbitMQ refuses it once the whole body is in; the body frames still to come
            # are dropped by the closing channel instead of being gathered first.
            self._handler, self._fields = None, ()
            self._advance(_CONTENT_DONE)
            self._refuse(message_too_large(body_size, limit).at(*PUBLISH))
            return
        self._body_size = body_size
        self._raw_properties = raw
        if body_size >= BUILT_IN_PLACE:
            self._body, self._body_view = unfilled_bytes(body_size)
        if body_size == 0:
            self._finish()
        else:
            self._advance(_CONTENT_HEADER)

    def payload_target(self, size: int) -> memoryview | None:
        """Where the next body frame's payload, `size` bytes, can be read straight into: its
        place in a body built in place, if it fits there."""
        view = self._body_view
        if view is None or self._received + size > len(view):
            return None
        handed = self._handed = view[self._received : self._received + size]
        return handed

    def body_frame(self, rule: Rule, ftype: int, payload: Payload) -> None:
        """A body frame; the last one (the announced size is in) completes the command. A body
        longer than announced never completes, as in RabbitMQ: its excess is not kept."""
        start = self._received
        size = len(payload)
        self._received = start + size
        view = self._body_view
        if view is None:
            self._body_parts.append(payload)
        elif payload is self._handed:  # read straight into its place
            self._handed = None
            payload.release()  # writable: none may outlive the body's assembly
        elif start + size <= len(view):
            view[start : start + size] = payload
            spare_frames.give_back(payload)
        if self._received == self._body_size:
            self._finish()

    def _drop_body(self) -> None:
        """Forget a body built in place, the views of it first."""
        if self._body_view is not None:
            self._body_view.release()
        self._body, self._body_view, self._handed = None, None, None

    def _finish(self) -> None:
        """The command is whole: run its handler. A soft error it raises closes the channel; a
        hard one goes up to the connection."""
        handler, fields = self._handler, self._fields
        assert handler is not None
        self._handler, self._fields = None, ()
        self._advance(_CONTENT_DONE)
        body = self._body
        if body is not None:  # built in place: no view of it may outlive this
            self._drop_body()
        else:
            parts = self._body_parts
            # bytes() of a bytes payload is that object; of a large frame's view, its copy.
            body = bytes(parts[0]) if len(parts) == 1 else b"".join(parts)
        self._body_parts = []
        try:
            handler(self._owner, *fields, self._raw_properties, body)
        except AMQPError as error:
            error.at(*PUBLISH)
            if error.is_hard:
                raise
            self._refuse(error)
