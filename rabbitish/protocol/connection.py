"""One 0-9-1 connection, sans-IO: `receive(bytes)` in; frames accumulate in an output list that
the I/O layer drains (`take_output`). The I/O layer reads the protocol header and calls `start`
with the bytes that followed it. Holds the channel table, connection.close both ways and
connection-level errors; which frame each state accepts is in states.py. The handshake's steps
(start, tune, open) are in handshake.py, channel work in protocol.channel.

Error handling follows RabbitMQ's reader: once open, a hard error sends connection.close and
waits for close-ok; a frame error (the stream is out of sync) sends connection.close and stops
reading; during the handshake errors close the socket without a word, except refused
credentials (403, for clients announcing authentication_failure_close), a refused vhost (530)
and, once tuned, errors about frames (501, 505); a frame naming an unknown method drops the
socket at once.

Hanging up follows RabbitMQ too, so a client still sending never has its socket reset before
it read why: a silent refusal or a frame error stops reading (`linger`: the socket goes after
3 s unless the client goes first); a 403 waits as long for close-ok; the client's own close is
answered with close-ok, then the client hangs up first (state ANSWERED)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from pamqp import commands
from pamqp.base import Frame as Method

from rabbitish.config import Config
from rabbitish.engine.errors import (
    MAX_MESSAGE_SIZE,
    AMQPError,
    ConnectionError_,
    frame_error,
    log_unexpected,
)
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import ConnectionView
from rabbitish.frontend.lifecycle import ClientConnection
from rabbitish.protocol import handshake
from rabbitish.protocol.channel import Channel
from rabbitish.protocol.dispatch import ROUTES, Routes
from rabbitish.protocol.framing import (
    HEARTBEAT_FRAME,
    BadFrame,
    BadUtf8,
    FrameReader,
    FrameSyncError,
    MalformedTable,
    MethodDecodeError,
    Payload,
    RawFrame,
    cannot_decode,
    decode_method,
    encode_close,
    encode_method,
    malformed_utf8,
    method_ids,
    unexpected_frame_type,
    unknown_frame,
)
from rabbitish.protocol.handshake import MIN_FRAME_MAX
from rabbitish.protocol.states import (
    ChannelAction,
    ChannelState,
    ConnectionAction,
    ConnectionEvent,
    ConnectionState,
    OnError,
    Rule,
    channel_rule,
    connection_rule,
    content_to_channel,
    error_policy,
    next_connection_state,
)
from rabbitish.wire_names import VERSION_091

log = logging.getLogger("rabbitish.connection")

CONNECTION_CLOSE = 0x000A0032

_CLOSED = ConnectionState.CLOSED
_TO_CHANNEL = ConnectionAction.TO_CHANNEL


class DropConnection(Exception):
    """Close the socket without a close method: at once, as RabbitMQ does when a frame names a
    method it does not know (its reader process crashes), or with `linger`, as it refuses a
    handshake."""

    def __init__(self, reason: str, linger: bool = False) -> None:
        super().__init__(reason)
        self.linger = linger


class Connection(ClientConnection):
    """Protocol state of one client connection (the broker's `FrontEndConnection`)."""

    protocol = "AMQP 0-9-1"

    def __init__(
        self,
        node: Node,
        config: Config,
        peer: str = "",
        wake: Callable[[], None] | None = None,
        version: str = VERSION_091,
        routes: Routes = ROUTES,
    ) -> None:
        super().__init__(node, config, peer, wake)
        self.version = version
        self.routes = routes  # the method handlers every channel of this connection uses
        self.state = ConnectionState.AWAIT_START_OK  # once start() sent connection.start
        self.reader = FrameReader(MIN_FRAME_MAX)  # until tuned: the spec's minimum frame size
        self.reader.body_sink = self  # large body frames straight into their content
        self.frame_max = config.frame_max
        self.channel_max = config.channel_max
        self.heartbeat = config.heartbeat
        # Larger bodies are refused (406); as RabbitMQ, never above its hard limit of 512 MiB.
        self.max_message_size = min(config.max_message_size, MAX_MESSAGE_SIZE)
        self.channels: dict[int, Channel] = {}
        # The confirm flush of each channel in confirm mode, run after every read batch: the
        # other channels have none to send, so a read costs them nothing.
        self.confirming: dict[int, Callable[[], None]] = {}
        self.capabilities: dict[str, Any] = {}
        self.linger = False  # after should_close: read nothing more for a moment (see the top)
        self.close_wait: float | None = None  # longest wait for close-ok (None: I/O default)
        # Work to finish once the current input batch is processed (tx.commit-ok).
        self.pending_completions: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ output
    def send_method(self, channel: int, method: Method) -> None:
        self.write(encode_method(channel, method))

    def resume_consumers(self) -> None:
        """Output drained: every consumer of the connection may take again, all of them
        before any queue delivers, so they compete in the queues' own order."""
        channels = list(self.channels.values())
        for channel in channels:
            channel.unblock_consumers()
        for channel in channels:
            channel.dispatch_queues()

    # ------------------------------------------------------------------ input
    def start(self, data: bytes = b"") -> None:
        """The I/O layer accepted the protocol header: send connection.start, then read `data`,
        the bytes that came in after the header."""
        handshake.start(self)
        if data:
            self.receive(data)

    def receive(self, data: bytes) -> None:
        """Feed bytes from the socket. Errors are turned into closes here; nothing raises."""
        if self.state is not _CLOSED and not self.should_close:
            self._take_frames(self.reader.feed(data))

    def read_buffer(self, scratch: memoryview) -> memoryview:
        """Where the socket's next read should go (then `received`): `scratch`, a buffer the
        caller reuses, or the rest of a large body frame, read straight into the body it is
        part of (`payload_target`) or into a buffer of its own."""
        return self.reader.read_buffer(scratch)

    def payload_target(self, channel: int, size: int) -> memoryview | None:
        """The frame reader's body sink: where the payload of a large body frame on `channel`
        goes, when that channel waits for body frames and the body has room for it."""
        found = self.channels.get(channel)
        return None if found is None else found.payload_target(size)

    def received(self, count: int) -> None:
        """`count` bytes were read into the last `read_buffer`, as `receive` takes them."""
        if self.state is not _CLOSED and not self.should_close:
            self._take_frames(self.reader.received(count))

    def _take_frames(self, frames: Iterator[RawFrame]) -> None:
        """Handle the frames the reader yields; errors are turned into closes here."""
        try:
            for ftype, channel_id, payload in frames:
                self._handle_frame(ftype, channel_id, payload)
                if self.should_close or self.state is _CLOSED:
                    return
        except DropConnection as drop:
            self.drop(str(drop), drop.linger)
        except FrameSyncError as lost:
            self._lost_sync(lost)
        except AMQPError as error:
            self.connection_error(error)
        except Exception:
            # A bug must cost one connection, never the broker: RabbitMQ answers a crashed
            # channel the same way.
            log_unexpected(log, f"connection {self.peer}")
            self.connection_error(ConnectionError_(541, ""))
        finally:
            if self.confirming:
                for flush in self.confirming.values():
                    flush()
            if self.pending_completions:
                completions, self.pending_completions = self.pending_completions, []
                for complete in completions:
                    complete()

    def _handle_frame(self, ftype: int, channel_id: int, payload: Payload) -> None:
        """One whole frame: the state's rule (states.py) decides what happens to it. Content
        frames on a channel skip the lookup in the states where the table sends them on
        (states.CONTENT_TO_CHANNEL): two of the three frames of every publish."""
        if not content_to_channel(self.state, ftype, channel_id, payload):
            rule = connection_rule(self.state, ftype, channel_id, payload)
            if rule.action is not _TO_CHANNEL:
                method = self._connection_method(payload) if rule.decode else None
                _ACTIONS[rule.action](self, rule, ftype, payload, method)
                return
        channel = self.channels.get(channel_id)
        if channel is None:
            self._new_channel(channel_id, ftype, payload)
        else:
            channel.handle_frame(ftype, payload)

    def _connection_method(self, payload: Payload) -> Method:
        """Decode a connection method: 501 for a short string that is not UTF-8, 541 for other
        arguments that do not fit (during the handshake any error just drops the socket)."""
        assert isinstance(payload, bytes), "a method frame's payload is never a view"
        try:
            return decode_method(payload)
        except (MethodDecodeError, MalformedTable) as err:
            if isinstance(err, BadUtf8):
                raise frame_error("Malformed UTF-8 in shortstr").at(*method_ids(payload)) from err
            raise ConnectionError_(541, "") from err

    def advance(self, event: ConnectionEvent) -> None:
        """Move to the state states.py names for `event` in the current one."""
        self.state = next_connection_state(self.state, event)

    def _decode(self, payload: Payload) -> Method:
        """Decode a channel method; arguments that do not fit its layout are a 501."""
        assert isinstance(payload, bytes), "a method frame's payload is never a view"
        try:
            return decode_method(payload)
        except (KeyError, MalformedTable) as undecodable:
            raise DropConnection(f"undecodable method {method_ids(payload)}") from undecodable
        except BadUtf8 as not_utf8:
            raise malformed_utf8() from not_utf8
        except MethodDecodeError as misfit:
            raise cannot_decode(payload[4:]).at(*method_ids(payload)) from misfit

    def _new_channel(self, channel_id: int, ftype: int, payload: Payload) -> None:
        """First frame on a channel number: RabbitMQ counts channels against channel_max (it
        does not check the number itself), then the unopened channel's rules apply."""
        if len(self.channels) >= self.channel_max:
            raise ConnectionError_(
                530,
                f"number of channels opened ({len(self.channels)}) has reached the "
                f"negotiated channel_max ({self.channel_max})",
            )
        rule = channel_rule(ChannelState.UNOPENED, ftype, payload)
        if rule.decode:
            self._decode(payload)
        if rule.action is ChannelAction.OPEN_CHANNEL:
            self.channels[channel_id] = Channel(self, channel_id, self.routes)
            self.node.churn["channel_created"] += 1
            self.send_method(channel_id, commands.Channel.OpenOk())
            return
        assert rule.action is ChannelAction.REFUSE and rule.error is not None
        raise rule.error.error(ftype, payload)

    # ------------------------------------------------------------------ connection class
    def _ignore(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        return

    def _drop_frame(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        """An unknown method crashes RabbitMQ's reader (the socket goes at once); a known one
        out of place in the handshake is a silent refusal."""
        class_id, method_id = method_ids(payload)
        raise DropConnection(
            f"method {class_id}/{method_id} in state {self.state.name}", linger=method is not None
        )

    def _frame_error(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        raise unknown_frame(ftype, payload)

    def _unexpected_frame(
        self, rule: Rule, ftype: int, payload: Payload, method: Method | None
    ) -> None:
        raise unexpected_frame_type(ftype, payload)

    def _refuse(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        assert rule.error is not None
        raise rule.error.error(ftype, payload)

    def _close(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        """The client closes: release everything, close-ok, and let the client hang up."""
        self._teardown()
        self.send_method(0, commands.Connection.CloseOk())
        self.advance(ConnectionEvent.CLOSE_ANSWERED)
        self.close_reason = "client closed"

    def _update_secret(
        self, rule: Rule, ftype: int, payload: Payload, method: Method | None
    ) -> None:
        self.send_method(0, commands.Connection.UpdateSecretOk())

    def _answer_close(
        self, rule: Rule, ftype: int, payload: Payload, method: Method | None
    ) -> None:
        self.send_method(0, commands.Connection.CloseOk())

    def _close_done(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        self.should_close = True

    def _start_ok(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        assert isinstance(method, commands.Connection.StartOk)
        handshake.start_ok(self, method)

    def _tune_ok(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        assert isinstance(method, commands.Connection.TuneOk)
        handshake.tune_ok(self, method)

    def _open(self, rule: Rule, ftype: int, payload: Payload, method: Method | None) -> None:
        assert isinstance(method, commands.Connection.Open)
        handshake.open_vhost(self, method)

    # ------------------------------------------------------------------ closing
    def connection_error(self, error: AMQPError) -> None:
        """A hard error: connection.close once open; during the handshake, just the socket."""
        policies = error_policy(self.state, self.should_close)
        policy = policies.bad_frame if isinstance(error, BadFrame) else policies.error
        if policy is OnError.CLOSE:
            self.close_with(error)
        elif policy is OnError.DROP:
            self.drop(f"error in state {self.state.name}: {error.reply_text}", linger=True)

    def _lost_sync(self, error: FrameSyncError) -> None:
        """Frame error: say why, then read nothing more and let the socket go."""
        policy = error_policy(self.state, self.should_close).frame_sync
        if policy is OnError.CLOSE:
            self.close_with(error)
            self.should_close = True
            self.linger = True
        elif policy is OnError.DROP:
            self.drop(f"frame error: {error.reply_text}", linger=True)

    def close_with(self, error: AMQPError) -> None:
        """connection.close with `error`, after releasing everything; close-ok ends it."""
        self.close_reason = error.reply_text
        self._teardown()
        self._write_close(error)
        self.advance(ConnectionEvent.CLOSE_SENT)

    def _write_close(self, error: AMQPError) -> None:
        self.write(
            encode_close(0, CONNECTION_CLOSE, error.reply_code, error.reply_text, *_ids(error))
        )

    def drop(self, reason: str, linger: bool = False) -> None:
        """Close the socket after flushing output, no close method (`linger`: see the top)."""
        super().drop(reason)
        self.linger = linger

    def server_close(self, reply_code: int, text: str) -> None:
        """Broker-initiated close, e.g. 320 CONNECTION_FORCED on shutdown."""
        policy = error_policy(self.state, self.should_close).server_close
        if policy is OnError.CLOSE:
            self.close_with(ConnectionError_(reply_code, text))
        elif policy is OnError.DROP:
            self.drop(text)

    def _release_sessions(self) -> int:
        """Close every channel (requeueing its unacked messages)."""
        for channel in list(self.channels.values()):
            channel.connection_closed()
        released = len(self.channels)
        self.channels.clear()
        self.confirming.clear()
        return released

    def _socket_gone(self) -> None:
        self.advance(ConnectionEvent.LOST)

    def view(self) -> ConnectionView:
        return ConnectionView(
            protocol=self.protocol,
            user=self.user,
            vhost=self.vhost.name if self.vhost is not None else None,
            peer=self.peer,
            channel_max=self.channel_max,
            frame_max=self.frame_max,
            heartbeat=self.heartbeat,
            client_properties=self.client_properties,
            sessions=tuple(ch.view() for _, ch in sorted(self.channels.items())),
            auth_mechanism=self.auth_mechanism,
        )

    def heartbeat_frame(self) -> None:
        self.write(HEARTBEAT_FRAME)

    def channel_closed(self, channel_id: int) -> None:
        self.confirming.pop(channel_id, None)
        if self.channels.pop(channel_id, None) is not None:
            self.node.churn["channel_closed"] += 1


# Keyed by any rule's action type: the connection's rules only ever name connection actions.
_ACTIONS: dict[
    ConnectionAction | ChannelAction,
    Callable[[Connection, Rule, int, Payload, Method | None], None],
] = {
    ConnectionAction.IGNORE: Connection._ignore,
    ConnectionAction.DROP: Connection._drop_frame,
    ConnectionAction.FRAME_ERROR: Connection._frame_error,
    ConnectionAction.UNEXPECTED_FRAME: Connection._unexpected_frame,
    ConnectionAction.REFUSE: Connection._refuse,
    ConnectionAction.START_OK: Connection._start_ok,
    ConnectionAction.TUNE_OK: Connection._tune_ok,
    ConnectionAction.OPEN: Connection._open,
    ConnectionAction.CLOSE: Connection._close,
    ConnectionAction.UPDATE_SECRET: Connection._update_secret,
    ConnectionAction.ANSWER_CLOSE: Connection._answer_close,
    ConnectionAction.CLOSE_DONE: Connection._close_done,
}


def _ids(error: AMQPError) -> tuple[int, int]:
    return error.class_id, error.method_id
