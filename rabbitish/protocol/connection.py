"""One 0-9-1 connection, sans-IO: `receive(bytes)` in; frames accumulate in an output list that
the I/O layer drains (`take_output`). Handles the handshake (start, tune, open), the channel table,
connection.close both ways and connection-level errors. Channel work goes to protocol.channel."""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import Any

from pamqp import commands
from pamqp.base import Frame as Method
from pamqp.exceptions import UnmarshalingException

from rabbitish.config import Config
from rabbitish.engine.errors import (
    AMQPError,
    ConnectionError_,
    channel_error,
    command_invalid,
    frame_error,
    syntax_error,
    unexpected_frame,
)
from rabbitish.engine.node import Node
from rabbitish.engine.vhost import VirtualHost
from rabbitish.protocol.channel import Channel
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    HEARTBEAT_FRAME,
    PROTOCOL_HEADER,
    FrameReader,
    decode_method,
    encode_method,
    method_ids,
)

PRODUCT = "RabbitMQ"  # clients key features off the product name; rabbitish answers as RabbitMQ
PLATFORM = "Python/asyncio"
MIN_FRAME_MAX = 4096


class State(enum.Enum):
    AWAIT_HEADER = "awaiting protocol header"
    AWAIT_START_OK = "awaiting connection.start-ok"
    AWAIT_TUNE_OK = "awaiting connection.tune-ok"
    AWAIT_OPEN = "awaiting connection.open"
    OPEN = "open"
    CLOSING = "closing"  # we sent connection.close, waiting for close-ok
    CLOSED = "closed"


def server_properties(version: str) -> dict[str, Any]:
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
        if self.state in (State.CLOSED,) or self.should_close:
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
        except AMQPError as error:
            self.connection_error(error)
        finally:
            for channel in list(self.channels.values()):
                channel.flush_confirms()
            if self.pending_completions:
                completions, self.pending_completions = self.pending_completions, []
                for complete in completions:
                    complete()

    def _receive_header(self, data: bytes) -> bytes:
        self._header_buffer += data
        if len(self._header_buffer) < 8:
            if not PROTOCOL_HEADER.startswith(self._header_buffer[: len(PROTOCOL_HEADER)]):
                self._reject_header()
            return b""
        header, rest = self._header_buffer[:8], self._header_buffer[8:]
        self._header_buffer = b""
        if header != PROTOCOL_HEADER:
            self._reject_header()
            return b""
        self.state = State.AWAIT_START_OK
        self.send_method(
            0,
            commands.Connection.Start(
                version_major=0,
                version_minor=9,
                server_properties=server_properties(self.version),
                mechanisms="AMQPLAIN PLAIN",
                locales="en_US",
            ),
        )
        return rest

    def _reject_header(self) -> None:
        """Anything but the 0-9-1 header: answer with the header we speak, then close."""
        self.write(PROTOCOL_HEADER)
        self.should_close = True
        self.close_reason = "bad protocol header"

    def _handle_frame(self, ftype: int, channel_id: int, payload: bytes) -> None:
        if ftype == FRAME_HEARTBEAT:
            if channel_id != 0:
                raise frame_error(
                    f"type 8, all octets = <<>>: {{heartbeat_on_non_zero_channel,{channel_id}}}"
                )
            return
        if self.state is State.CLOSING:
            # After sending connection.close we only care about close / close-ok.
            if (
                ftype == FRAME_METHOD
                and channel_id == 0
                and method_ids(payload) in ((10, 50), (10, 51))
            ):
                self._handle_connection_method(self._decode(payload))
            return
        if ftype not in (FRAME_METHOD, FRAME_HEADER, FRAME_BODY):
            raise frame_error(f"illegal frame type {ftype}")
        if channel_id == 0:
            if ftype != FRAME_METHOD:
                raise unexpected_frame("expected method frame, got non method frame instead")
            self._handle_connection_method(self._decode(payload))
            return
        if self.state is not State.OPEN:
            raise channel_error(
                "expected 'connection.open'"
                if self.state is State.AWAIT_OPEN
                else f"unexpected frame on channel {channel_id} during handshake"
            )
        channel = self.channels.get(channel_id)
        if channel is None:
            if ftype == FRAME_METHOD and method_ids(payload) == (20, 10):
                self._open_channel(channel_id)
                return
            raise channel_error("expected 'channel.open'")
        channel.handle_frame(ftype, payload)

    def _decode(self, payload: bytes) -> Method:
        try:
            return decode_method(payload)
        except KeyError as err:
            class_id, method_id = method_ids(payload)
            raise command_invalid(f"unknown method {class_id}/{method_id}") from err
        except (
            UnmarshalingException,
            ValueError,
            struct.error,
            IndexError,
            UnicodeDecodeError,
        ) as err:
            class_id, method_id = method_ids(payload)
            raise syntax_error(f"malformed method frame {class_id}/{method_id}").at(
                class_id, method_id
            ) from err

    def _open_channel(self, channel_id: int) -> None:
        if channel_id > self.channel_max:
            raise channel_error(
                f"channel number {channel_id} exceeds channel_max {self.channel_max}"
            )
        channel = Channel(self, channel_id)
        self.channels[channel_id] = channel
        self.send_method(channel_id, commands.Channel.OpenOk())

    # ------------------------------------------------------------------ connection class
    def _handle_connection_method(self, method: Method) -> None:
        name = method.name
        if name == "Connection.Close":
            self.send_method(0, commands.Connection.CloseOk())
            self._teardown()
            self.should_close = True
            self.close_reason = "client closed"
            return
        if name == "Connection.CloseOk":
            if self.state is State.CLOSING:
                self._teardown()
                self.should_close = True
            return
        if self.state is State.AWAIT_START_OK and name == "Connection.StartOk":
            self._start_ok(method)
        elif self.state is State.AWAIT_TUNE_OK and name == "Connection.TuneOk":
            self._tune_ok(method)
        elif self.state is State.AWAIT_OPEN and name == "Connection.Open":
            self._open(method)
        elif name == "Connection.Blocked" or name == "Connection.Unblocked":
            return
        elif name == "Connection.UpdateSecret":
            self.send_method(0, commands.Connection.UpdateSecretOk())
        else:
            class_id, method_id = method.index >> 16, method.index & 0xFFFF
            if self.state is State.OPEN and class_id != 10:
                raise command_invalid(f"{_amqp_name(name)} on channel 0").at(class_id, method_id)
            raise command_invalid(f"expected {self._expected()}, got {_amqp_name(name)}").at(
                class_id, method_id
            )

    def _expected(self) -> str:
        return {
            State.AWAIT_START_OK: "'connection.start_ok'",
            State.AWAIT_TUNE_OK: "'connection.tune_ok'",
            State.AWAIT_OPEN: "'connection.open'",
        }.get(self.state, "'connection.close'")

    def _start_ok(self, method: commands.Connection.StartOk) -> None:
        from rabbitish.protocol.sasl import parse_response

        self.client_properties = method.client_properties or {}
        caps = self.client_properties.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        mechanism = method.mechanism
        if mechanism not in ("PLAIN", "AMQPLAIN"):
            raise ConnectionError_(403, f"unsupported authentication mechanism '{mechanism}'").at(
                10, 11
            )
        credentials = parse_response(mechanism, method.response)
        user = None
        if credentials is not None:
            user = self.node.users.authenticate(*credentials)
        if user is None:
            self.close_reason = "authentication failed"
            if self.capabilities.get("authentication_failure_close"):
                self.connection_error(
                    ConnectionError_(
                        403,
                        f"Login was refused using authentication mechanism {mechanism}. "
                        "For details see the broker logfile.",
                    ).at(10, 11)
                )
            else:
                self.should_close = True
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

    def _tune_ok(self, method: commands.Connection.TuneOk) -> None:
        frame_max = method.frame_max or self.config.frame_max
        if frame_max < MIN_FRAME_MAX:
            raise ConnectionError_(530, f"frame_max={frame_max} < {MIN_FRAME_MAX} min size").at(
                10, 31
            )
        if frame_max > self.config.frame_max:
            raise ConnectionError_(
                530, f"frame_max={frame_max} > {self.config.frame_max} max size"
            ).at(10, 31)
        channel_max = method.channel_max or 65535
        if channel_max > self.config.channel_max and method.channel_max:
            raise ConnectionError_(
                530, f"channel_max={channel_max} > {self.config.channel_max} max size"
            ).at(10, 31)
        self.frame_max = frame_max
        self.channel_max = min(channel_max, self.config.channel_max)
        self.heartbeat = method.heartbeat
        self.reader.frame_max = frame_max
        self.state = State.AWAIT_OPEN

    def _open(self, method: commands.Connection.Open) -> None:
        vhost = self.node.vhost(method.virtual_host)
        if vhost is None:
            raise ConnectionError_(530, f"vhost {method.virtual_host} not found").at(10, 40)
        user = self.node.users.users[self.user or ""]
        if not self.node.users.may_access(user, vhost.name):
            raise ConnectionError_(
                530, f"access to vhost '{vhost.name}' refused for user '{self.user}'"
            ).at(10, 40)
        self.vhost = vhost
        self.state = State.OPEN
        self.node.connections.add(self)
        self.send_method(0, commands.Connection.OpenOk())

    # ------------------------------------------------------------------ closing
    def connection_error(self, error: AMQPError) -> None:
        """Send connection.close with the error and stop processing anything but close-ok."""
        if self.state in (State.CLOSING, State.CLOSED) or self.should_close:
            return
        if self.state in (State.AWAIT_HEADER,):
            self.should_close = True
            return
        self.close_reason = error.reply_text
        self._teardown()
        self.send_method(
            0,
            commands.Connection.Close(
                reply_code=error.reply_code,
                reply_text=error.reply_text[:255],
                class_id=error.class_id,
                method_id=error.method_id,
            ),
        )
        self.state = State.CLOSING

    def server_close(self, reply_code: int, text: str) -> None:
        """Broker-initiated close, e.g. 320 CONNECTION_FORCED on shutdown."""
        self.connection_error(ConnectionError_(reply_code, text))

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

    def heartbeat_frame(self) -> None:
        self.write(HEARTBEAT_FRAME)

    def channel_closed(self, channel_id: int) -> None:
        self.channels.pop(channel_id, None)


def _amqp_name(pamqp_name: str) -> str:
    """'Basic.Publish' -> 'basic.publish', 'Connection.StartOk' -> 'connection.start_ok'."""
    cls, _, meth = pamqp_name.partition(".")
    snake = "".join("_" + c.lower() if c.isupper() else c for c in meth).lstrip("_")
    return f"{cls.lower()}.{snake}"
