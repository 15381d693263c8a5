"""One 0-9-1 connection, sans-IO: `receive(bytes)` in; frames accumulate in an output list that
the I/O layer drains (`take_output`). Handles the protocol header, the handshake (start, tune,
open), the channel table, connection.close both ways and connection-level errors. Channel work
goes to protocol.channel.

Error handling follows RabbitMQ's reader: once open, a hard error sends connection.close and
waits for close-ok; a frame error (the stream is out of sync) sends connection.close and stops
reading; during the handshake errors close the socket without a word, except refused
credentials (403, for clients announcing authentication_failure_close) and a refused vhost (530);
a frame naming an unknown method drops the socket at once."""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Callable
from typing import Any

from pamqp import commands
from pamqp.base import Frame as Method

from rabbitish.config import Config
from rabbitish.engine.errors import (
    AMQPError,
    ConnectionError_,
    channel_error,
    frame_error,
    unexpected_frame,
)
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import ConnectionView
from rabbitish.engine.vhost import VirtualHost
from rabbitish.protocol.channel import Channel
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    HEARTBEAT_FRAME,
    KNOWN_METHODS,
    PROTOCOL_HEADER,
    PROTOCOL_HEADER_0_9,
    BadUtf8,
    FrameReader,
    FrameSyncError,
    MalformedTable,
    MethodDecodeError,
    cannot_decode,
    decode_method,
    encode_close,
    encode_method,
    encode_start,
    malformed_utf8,
    method_ids,
    method_index,
    unexpected_frame_type,
    unknown_frame,
)
from rabbitish.protocol.sasl import parse_response

log = logging.getLogger("rabbitish.connection")

PRODUCT = "RabbitMQ"  # clients key features off the product name; rabbitish answers as RabbitMQ
PLATFORM = "Python/asyncio"
MECHANISMS = "PLAIN AMQPLAIN"
MIN_FRAME_MAX = 4096
CONNECTION_CLOSE = 0x000A0032
CHANNEL_OPEN = 0x0014000A


class State(enum.Enum):
    AWAIT_HEADER = "awaiting protocol header"
    AWAIT_START_OK = "awaiting connection.start-ok"
    AWAIT_TUNE_OK = "awaiting connection.tune-ok"
    AWAIT_OPEN = "awaiting connection.open"
    OPEN = "open"
    CLOSING = "closing"  # we sent connection.close, waiting for close-ok
    CLOSED = "closed"


class DropConnection(Exception):
    """Close the socket now without a close method: what RabbitMQ does when a frame names a
    method it does not know (its reader process crashes)."""


def server_properties(version: str) -> dict[str, Any]:
    """connection.start's server-properties; the capability table (keys and order) is the one
    RabbitMQ announces."""
    return {
        "capabilities": {
            "publisher_confirms": True,
            "exchange_exchange_bindings": True,
            "basic.nack": True,
            "consumer_cancel_notify": True,
            "connection.blocked": True,
            "consumer_priorities": True,
            "authentication_failure_close": True,
            "per_consumer_qos": True,
            "direct_reply_to": True,
        },
        "cluster_name": "rabbitish@localhost",
        "copyright": "Copyright (c) rabbitish authors",
        "information": "rabbitish, a RabbitMQ-compatible broker; see its README",
        "platform": PLATFORM,
        "product": PRODUCT,
        "version": version,
    }


@functools.cache
def start_frame(version: str) -> bytes:
    return encode_start(server_properties(version), MECHANISMS, "en_US")


class Connection:
    """Protocol state of one client connection."""

    def __init__(
        self,
        node: Node,
        config: Config,
        peer: str = "",
        wake: Callable[[], None] | None = None,
        version: str = "3.13.7",
    ) -> None:
        self.node = node
        self.config = config
        self.peer = peer
        self.version = version
        self.state = State.AWAIT_HEADER
        self.reader = FrameReader(MIN_FRAME_MAX)  # until tuned: the spec's minimum frame size
        self.frame_max = config.frame_max
        self.channel_max = config.channel_max
        self.heartbeat = config.heartbeat
        self.channels: dict[int, Channel] = {}
        self.vhost: VirtualHost | None = None
        self.user: str | None = None
        self.client_properties: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._out: list[bytes] = []
        self.out_size = 0
        self._header_buffer = b""
        self._wake = wake or (lambda: None)
        self.should_close = False  # the I/O layer closes the socket once output is flushed
        self.linger = False  # ...after half-closing and waiting a moment for the peer to go
        self.paused = False  # transport asked us to stop writing
        self.consumers_starved = False
        self.close_reason: str | None = None
        # Work to finish once the current input batch is processed (tx.commit-ok).
        self.pending_completions: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ output
    def write(self, data: bytes) -> None:
        if self.state is State.CLOSED:
            return
        if not self._out:
            self._wake()
        self._out.append(data)
        self.out_size += len(data)

    def write_many(self, parts: list[bytes]) -> None:
        if self.state is State.CLOSED or not parts:
            return
        if not self._out:
            self._wake()
        self._out.extend(parts)
        self.out_size += sum(len(p) for p in parts)

    def send_method(self, channel: int, method: Method) -> None:
        self.write(encode_method(channel, method))

    def take_output(self) -> bytes:
        data = b"".join(self._out)
        self._out.clear()
        self.out_size = 0
        return data

    @property
    def output_blocked(self) -> bool:
        return self.paused or self.out_size > self.config.max_pending_output

    def output_drained(self) -> None:
        """The I/O layer wrote our output and the transport can take more: resume consumers
        that were held back."""
        if self.consumers_starved and not self.output_blocked:
            self.consumers_starved = False
            for channel in list(self.channels.values()):
                channel.resume_deliveries()

    # ------------------------------------------------------------------ input
    def receive(self, data: bytes) -> None:
        """Feed bytes from the socket. Errors are turned into closes here; nothing raises."""
        if self.state is State.CLOSED or self.should_close:
            return
        try:
            if self.state is State.AWAIT_HEADER:
                data = self._receive_header(data)
                if not data:
                    return
            for frame in self.reader.feed(data):
                self._handle_frame(frame.type, frame.channel, frame.payload)
                if self.should_close or self.state is State.CLOSED:
                    return
        except DropConnection as drop:
            self._drop(str(drop))
        except FrameSyncError as error:
            self._lost_sync(error)
        except AMQPError as error:
            self.connection_error(error)
        except Exception:
            # A bug must cost one connection, never the broker: RabbitMQ answers a crashed
            # channel the same way.
            log.exception("internal error on connection %s", self.peer)
            self.connection_error(ConnectionError_(541, ""))
        finally:
            for channel in list(self.channels.values()):
                channel.flush_confirms()
            if self.pending_completions:
                completions, self.pending_completions = self.pending_completions, []
                for complete in completions:
                    complete()

    def _receive_header(self, data: bytes) -> bytes:
        """Wait for eight bytes (as RabbitMQ does), then accept 0-9-1 (or 0-9, which RabbitMQ
        serves as 0-9-1) and answer anything else with the 0-9-1 header and a close."""
        self._header_buffer += data
        if len(self._header_buffer) < 8:
            return b""
        header, rest = self._header_buffer[:8], self._header_buffer[8:]
        self._header_buffer = b""
        if header not in (PROTOCOL_HEADER, PROTOCOL_HEADER_0_9):
            self.write(PROTOCOL_HEADER)
            self._drop("bad protocol header")
            return b""
        self.state = State.AWAIT_START_OK
        self.write(start_frame(self.version))
        return rest

    def _handle_frame(self, ftype: int, channel_id: int, payload: bytes) -> None:
        if self.state is State.CLOSING:
            self._while_closing(ftype, channel_id, payload)
            return
        if ftype == FRAME_METHOD:
            if len(payload) < 4:
                raise unknown_frame(ftype, payload)
            if method_index(payload) not in KNOWN_METHODS:
                class_id, method_id = method_ids(payload)
                raise DropConnection(f"unknown method {class_id}/{method_id}")
        elif ftype == FRAME_HEADER:
            if len(payload) < 12:
                raise unknown_frame(ftype, payload)
        elif ftype == FRAME_HEARTBEAT:
            if payload:
                raise unknown_frame(ftype, payload)
            if channel_id == 0:
                return
            raise unexpected_frame_type(ftype, payload)
        elif ftype != FRAME_BODY:
            raise unknown_frame(ftype, payload)
        if channel_id == 0:
            if ftype != FRAME_METHOD:
                raise unexpected_frame_type(ftype, payload)
            self._channel0(payload)
            return
        if self.state is not State.OPEN:
            raise unexpected_frame_type(ftype, payload)
        channel = self.channels.get(channel_id)
        if channel is None:
            self._new_channel(channel_id, ftype, payload)
        else:
            channel.handle_frame(ftype, payload)

    def _while_closing(self, ftype: int, channel_id: int, payload: bytes) -> None:
        """After we sent connection.close only close and close-ok on channel 0 count."""
        if ftype != FRAME_METHOD or channel_id != 0 or len(payload) < 4:
            return
        index = method_index(payload)
        if index == CONNECTION_CLOSE:
            self.send_method(0, commands.Connection.CloseOk())
        elif index == CONNECTION_CLOSE + 1:
            self.should_close = True

    def _decode(self, payload: bytes) -> Method:
        """Decode a channel method; arguments that do not fit its layout are a 501."""
        try:
            return decode_method(payload)
        except (KeyError, MalformedTable) as err:
            raise DropConnection(f"undecodable method {method_ids(payload)}") from err
        except BadUtf8 as err:
            raise malformed_utf8() from err
        except MethodDecodeError as err:
            raise cannot_decode(payload[4:]).at(*method_ids(payload)) from err

    def _new_channel(self, channel_id: int, ftype: int, payload: bytes) -> None:
        """First frame on a channel number: RabbitMQ counts channels against channel_max (it
        does not check the number itself) and wants channel.open first."""
        if len(self.channels) >= self.channel_max:
            raise ConnectionError_(
                530,
                f"number of channels opened ({len(self.channels)}) has reached the "
                f"negotiated channel_max ({self.channel_max})",
            )
        if ftype != FRAME_METHOD:
            raise unexpected_frame("expected method frame, got non method frame instead")
        self._decode(payload)
        if method_index(payload) != CHANNEL_OPEN:
            raise channel_error("expected 'channel.open'").at(*method_ids(payload))
        self.channels[channel_id] = Channel(self, channel_id)
        self.send_method(channel_id, commands.Channel.OpenOk())

    # ------------------------------------------------------------------ connection class
    def _channel0(self, payload: bytes) -> None:
        try:
            method = decode_method(payload)
        except (MethodDecodeError, MalformedTable) as err:
            if self.state is not State.OPEN:
                raise DropConnection("undecodable connection method") from err
            if isinstance(err, BadUtf8):
                raise frame_error("Malformed UTF-8 in shortstr").at(*method_ids(payload)) from err
            raise ConnectionError_(541, "") from err
        name = method.name
        if self.state is State.OPEN:
            if name == "Connection.Close":
                self._teardown()
                self.send_method(0, commands.Connection.CloseOk())
                self.should_close = True
                self.close_reason = "client closed"
            elif name == "Connection.UpdateSecret":
                self.send_method(0, commands.Connection.UpdateSecretOk())
            else:
                raise channel_error("unexpected method in connection state running").at(
                    *method_ids(payload)
                )
        elif self.state is State.AWAIT_START_OK and name == "Connection.StartOk":
            self._start_ok(method)
        elif self.state is State.AWAIT_TUNE_OK and name == "Connection.TuneOk":
            self._tune_ok(method)
        elif self.state is State.AWAIT_OPEN and name == "Connection.Open":
            self._open(method)
        else:
            raise DropConnection(f"{name} during the handshake ({self.state.value})")

    def _start_ok(self, method: commands.Connection.StartOk) -> None:
        self.client_properties = method.client_properties or {}
        caps = self.client_properties.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        mechanism = method.mechanism
        if mechanism not in MECHANISMS.split():
            raise DropConnection(f"unknown authentication mechanism '{mechanism}'")
        credentials = parse_response(mechanism, method.response)
        if credentials is None:
            raise DropConnection(f"malformed {mechanism} response")
        user = self.node.users.authenticate(*credentials)
        if user is None:
            self._refuse_login(mechanism)
            return
        self.user = user.name
        self.state = State.AWAIT_TUNE_OK
        self.send_method(
            0,
            commands.Connection.Tune(
                channel_max=self.config.channel_max,
                frame_max=self.config.frame_max,
                heartbeat=self.config.heartbeat,
            ),
        )

    def _refuse_login(self, mechanism: str) -> None:
        """403 for clients that asked to be told (then the socket closes), silence otherwise."""
        if self.capabilities.get("authentication_failure_close"):
            error = ConnectionError_(
                403,
                f"Login was refused using authentication mechanism {mechanism}. "
                "For details see the broker logfile.",
            )
            self._write_close(error)
        self._drop("authentication failed")

    def _tune_ok(self, method: commands.Connection.TuneOk) -> None:
        """The client's values must lie within ours; 0 (no limit) is refused because we have
        limits. RabbitMQ closes the socket silently on a refusal."""
        self._check_tuned("frame_max", method.frame_max, MIN_FRAME_MAX, self.config.frame_max)
        self._check_tuned("channel_max", method.channel_max, 1, self.config.channel_max)
        self.frame_max = method.frame_max
        self.channel_max = method.channel_max
        self.heartbeat = method.heartbeat
        self.reader.frame_max = method.frame_max
        self.state = State.AWAIT_OPEN

    @staticmethod
    def _check_tuned(field: str, value: int, minimum: int, maximum: int) -> None:
        if value == 0 or value > maximum:
            raise DropConnection(f"negotiated {field} = {value} is above {maximum}")
        if value < minimum:
            raise DropConnection(f"negotiated {field} = {value} is below {minimum}")

    def _open(self, method: commands.Connection.Open) -> None:
        vhost = self.node.vhost(method.virtual_host)
        if vhost is None:
            self._close_with(
                ConnectionError_(530, f"vhost {method.virtual_host} not found").at(10, 40)
            )
            return
        user = self.node.users.users[self.user or ""]
        if not self.node.users.may_access(user, vhost.name):
            self._close_with(
                ConnectionError_(
                    530, f"access to vhost '{vhost.name}' refused for user '{self.user}'"
                ).at(10, 40)
            )
            return
        self.vhost = vhost
        self.state = State.OPEN
        self.node.connections.add(self)
        self.send_method(0, commands.Connection.OpenOk())

    # ------------------------------------------------------------------ closing
    def connection_error(self, error: AMQPError) -> None:
        """A hard error: connection.close once open; during the handshake, just the socket."""
        if self.state in (State.CLOSING, State.CLOSED) or self.should_close:
            return
        if self.state is not State.OPEN:
            self._drop(f"handshake error: {error.reply_text}")
            return
        self._close_with(error)

    def _lost_sync(self, error: FrameSyncError) -> None:
        """Frame error: say why, then read nothing more and let the socket go."""
        if self.state is State.OPEN:
            self._close_with(error)
            self.should_close = True
            self.linger = True
        else:
            self._drop(f"frame error: {error.reply_text}")

    def _close_with(self, error: AMQPError) -> None:
        self.close_reason = error.reply_text
        self._teardown()
        self._write_close(error)
        self.state = State.CLOSING

    def _write_close(self, error: AMQPError) -> None:
        self.write(
            encode_close(0, CONNECTION_CLOSE, error.reply_code, error.reply_text, *_ids(error))
        )

    def _drop(self, reason: str) -> None:
        """Close the socket after flushing what is already queued, without a close method."""
        self.close_reason = reason
        self.should_close = True

    def server_close(self, reply_code: int, text: str) -> None:
        """Broker-initiated close, e.g. 320 CONNECTION_FORCED on shutdown."""
        if self.state is State.OPEN and not self.should_close:
            self._close_with(ConnectionError_(reply_code, text))
        elif self.state is not State.CLOSING:
            self._drop(text)

    def _teardown(self) -> None:
        """Release everything the connection holds: channels (requeueing their unacked
        messages), exclusive queues, reply-to registrations."""
        for channel in list(self.channels.values()):
            channel.teardown()
        self.channels.clear()
        if self.vhost is not None:
            self.vhost.owner_closed(self)
        self.node.connections.discard(self)

    def lost(self) -> None:
        """The socket is gone (peer closed, heartbeat missed, error)."""
        if self.state is not State.CLOSED:
            self._teardown()
            self.state = State.CLOSED
            self._out.clear()

    def view(self) -> ConnectionView:
        return ConnectionView(
            protocol="AMQP 0-9-1",
            user=self.user,
            vhost=self.vhost.name if self.vhost is not None else None,
            peer=self.peer,
            channel_max=self.channel_max,
            frame_max=self.frame_max,
            heartbeat=self.heartbeat,
            client_properties=self.client_properties,
            sessions=tuple(ch.view() for _, ch in sorted(self.channels.items())),
        )

    def heartbeat_frame(self) -> None:
        self.write(HEARTBEAT_FRAME)

    def channel_closed(self, channel_id: int) -> None:
        self.channels.pop(channel_id, None)


def _ids(error: AMQPError) -> tuple[int, int]:
    return error.class_id, error.method_id
