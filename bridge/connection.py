"""One AMQP 1.0 connection, sans-IO: the listener hands over the protocol header it read and
the bytes after it; `receive(bytes)` in, frames accumulate for the I/O layer (`take_output`).
It runs the SASL exchange (or logs in anonymously when the client skips SASL), the open/close
handshake with max-frame-size, channel-max and idle-time-out negotiated, and the session table;
sessions run their links on the engine.

Every state and the frames it accepts are in `ACCEPTS`; a frame a state does not accept, an
undecodable one and a broken frame each close the connection with the condition the spec names
(amqp:illegal-state, amqp:decode-error, amqp:connection:framing-error)."""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable
from typing import Any

from rabbitish.bridge import sasl
from rabbitish.bridge.addresses import INTERNAL_ERROR
from rabbitish.bridge.codec import (
    AMQP_HEADER,
    FRAME_AMQP,
    FRAME_SASL,
    MIN_MAX_FRAME_SIZE,
    SASL_HEADER,
    DecodeError,
    Frame,
    FrameReader,
    FramingError,
    Symbol,
    UInt,
    UShort,
    encode_frame,
)
from rabbitish.bridge.codec.definitions import (
    Attach,
    Begin,
    Close,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Open,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
    SaslResponse,
    Transfer,
)
from rabbitish.bridge.session import Session, reply_description, session_condition
from rabbitish.bridge.transactions import TransactionTable

from rabbitish.config import Config
from rabbitish.engine.errors import AMQPError, log_unexpected
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import ConnectionView
from rabbitish.engine.vhost import VirtualHost
from rabbitish.frontend.lifecycle import ClientConnection
from rabbitish.frontend.output import Chunk
from rabbitish.wire_names import PRODUCT, VERSION_AMQP10

log = logging.getLogger("rabbitish.amqp10")

NODE_PREFIX = "rabbitish@"  # the container-id and `node` property: rabbitish@HOST
DECODE_ERROR = "amqp:decode-error"
FRAMING_ERROR = "amqp:connection:framing-error"
ILLEGAL_STATE = "amqp:illegal-state"
UNAUTHORIZED = "amqp:unauthorized-access"
FORCED = "amqp:connection:forced"


class State(enum.Enum):
    SASL = "awaiting sasl-init"
    AWAIT_HEADER = "awaiting the AMQP header after SASL"
    AWAIT_OPEN = "awaiting open"
    OPENED = "opened"
    CLOSE_SENT = "close sent"  # we closed (error or shutdown); waiting for the peer's close
    CLOSED = "closed"


# Frame bodies each state accepts (None: an empty frame, i.e. a heartbeat).
ACCEPTS: dict[State, tuple[Any, ...]] = {
    State.SASL: (SaslInit, SaslResponse),
    State.AWAIT_HEADER: (),
    State.AWAIT_OPEN: (Open,),
    State.OPENED: (Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close, type(None)),
    State.CLOSE_SENT: (Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close, type(None)),
    State.CLOSED: (),
}


class ConnectionClosed(Exception):
    """Raised inside frame handling to close the connection with an AMQP 1.0 error."""

    def __init__(self, condition: str, description: str = "") -> None:
        super().__init__(f"{condition}: {description}")
        self.condition = condition
        self.description = description


class Connection10(ClientConnection):
    """Protocol state of one AMQP 1.0 connection (the broker's `FrontEndConnection`)."""

    protocol = "AMQP 1-0"

    def __init__(
        self,
        node: Node,
        config: Config,
        peer: str = "",
        wake: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(node, config, peer, wake)
        self.state = State.AWAIT_OPEN
        self.reader = FrameReader(MIN_MAX_FRAME_SIZE)
        self.max_frame_size = config.frame_max  # ours until open, then the smaller of the two
        self.channel_max = config.channel_max
        self.idle_timeout_ms = config.heartbeat * 1000  # what we announce (0: none)
        self.remote_idle_timeout_ms = 0  # the peer's: we must send within half of it
        self.container_id = ""
        self.sessions: dict[int, Session] = {}  # by our channel number
        self.transactions = TransactionTable(self)  # declared through any of its sessions
        self._remote_channels: dict[int, int] = {}  # peer's channel -> ours
        self._ending: set[int] = set()  # peer's channels whose session we ended, until its end
        self._held: list[Session] = []  # sessions batching frames until the next flush
        self._header = b""

    # ------------------------------------------------------------------ output
    def send(self, channel: int, body: Any, payload: bytes = b"") -> None:
        if self._held:
            self._release()
        self.write(encode_frame(channel, body, payload))

    def hold(self, session: Session) -> None:
        """`session` batches frames (accepts) to send at its next flush: at the latest before
        this connection sends any other performative or hands its output to the socket."""
        self._held.append(session)
        self._wake()

    def _release(self) -> None:
        held, self._held = self._held, []
        for session in held:
            session.flush()

    def take_parts(self) -> list[Chunk]:
        if self._held:
            self._release()  # accepts batched by sessions go out with this output
        return super().take_parts()

    def resume_consumers(self) -> None:
        """Output drained: every outgoing link may take again, all of them before any queue
        delivers."""
        sessions = list(self.sessions.values())
        for session in sessions:
            session.unblock_links()
        for session in sessions:
            session.deliver_links()

    # ------------------------------------------------------------------ input
    def start(self, header: bytes, rest: bytes) -> None:
        """The listener read `header`: answer it, then read what followed."""
        if header == SASL_HEADER:
            self.state = State.SASL
            self.write(SASL_HEADER)
            mechanisms = sasl.mechanisms(self.config.anonymous_user, self.peer_info)
            offered = SaslMechanisms(sasl_server_mechanisms=[Symbol(m) for m in mechanisms])
            self.write(encode_frame(0, offered, frame_type=FRAME_SASL))
        else:
            outcome = self._authenticate(sasl.ANONYMOUS, None)
            if outcome.user is None:
                # No SASL and no anonymous user: the spec's answer is the SASL header, then go.
                self.write(SASL_HEADER)
                self.drop("a client without SASL and no anonymous user")
                return
            self.user = outcome.user
            self.write(AMQP_HEADER)
        if rest:
            self.receive(rest)

    def receive(self, data: bytes) -> None:
        """Feed bytes from the socket. Errors become closes here; nothing raises."""
        if self.state is State.CLOSED or self.should_close:
            return
        try:
            if self.state is State.SASL:
                data = self._receive_sasl(data)
            if self.state is State.AWAIT_HEADER:
                data = self._receive_header(data)
            if not data or self.should_close:
                return
            for frame in self.reader.feed(data):
                self._handle(frame)
                # _handle may have closed us: mypy keeps the narrowing from before the loop.
                if self.should_close or self.state is State.CLOSED:  # type: ignore[comparison-overlap]
                    return
        except FramingError as err:
            self._error(FRAMING_ERROR, str(err))
        except DecodeError as err:
            self._error(DECODE_ERROR, str(err))
        except ConnectionClosed as err:
            self._error(err.condition, err.description)
        except Exception:
            log_unexpected(log, f"AMQP 1.0 connection {self.peer}")
            self._error(INTERNAL_ERROR, "")
        finally:
            for session in list(self.sessions.values()):
                session.flush()

    def _receive_sasl(self, data: bytes) -> bytes:
        """SASL frames one at a time: the AMQP header that follows the outcome is no frame, so
        nothing after the sasl-init may go to the frame reader. Returns what is left."""
        self._header += data
        while self.state is State.SASL and len(self._header) >= 8:
            size = int.from_bytes(self._header[:4], "big")
            if size < 8 or size > MIN_MAX_FRAME_SIZE:  # SASL frames are at most 512 bytes
                self.drop(f"SASL frame of {size} bytes")
                return b""
            if len(self._header) < size:
                return b""
            raw, self._header = self._header[:size], self._header[size:]
            for frame in FrameReader(MIN_MAX_FRAME_SIZE).feed(raw):
                self._handle(frame)
            if self.should_close:
                return b""
        if self.state is State.SASL:
            return b""
        rest, self._header = self._header, b""
        return rest

    def _receive_header(self, data: bytes) -> bytes:
        self._header += data
        if len(self._header) < 8:
            return b""
        header, rest = self._header[:8], self._header[8:]
        self._header = b""
        if header != AMQP_HEADER:
            self.write(AMQP_HEADER)
            self.drop("bad protocol header after SASL")
            return b""
        self.write(AMQP_HEADER)
        self.state = State.AWAIT_OPEN
        self.reader = FrameReader(MIN_MAX_FRAME_SIZE)
        return rest

    def _handle(self, frame: Frame) -> None:
        body = frame.body
        if not isinstance(body, ACCEPTS[self.state]):
            name = type(body).__name__ if body is not None else "empty frame"
            if self.state in (State.SASL, State.AWAIT_OPEN):
                self.drop(f"{name} while {self.state.value}")
                return
            raise ConnectionClosed(ILLEGAL_STATE, f"{name} while {self.state.value}")
        if self.state is State.SASL:
            self._sasl(frame)
        elif self.state is State.AWAIT_OPEN:
            self._open(body)
        elif self.state is State.CLOSE_SENT:
            if isinstance(body, Close):
                self.drop("closed")
        elif body is None:
            return  # heartbeat
        elif isinstance(body, Close):
            self._closed_by_peer(body)
        else:
            self._session_frame(frame)

    # ------------------------------------------------------------------ SASL and open
    def _sasl(self, frame: Frame) -> None:
        if frame.type != FRAME_SASL or not isinstance(frame.body, SaslInit):
            self.drop("unexpected SASL frame")
            return
        init = frame.body
        outcome = self._authenticate(str(init.mechanism), init.initial_response)
        self.write(encode_frame(0, SaslOutcome(code=outcome.code), frame_type=FRAME_SASL))
        if outcome.user is None:
            self.drop("authentication failed")
            return
        self.user = outcome.user
        self.auth_mechanism = str(init.mechanism)
        self.state = State.AWAIT_HEADER

    def _authenticate(self, mechanism: str, response: bytes | None) -> sasl.Outcome:
        return sasl.authenticate(
            self.node.users,
            self.config.anonymous_user,
            mechanism,
            response,
            self.peer_info,
            self.config.loopback_users,
        )

    def _open(self, open_: Open) -> None:
        self.container_id = open_.container_id
        self.client_properties = dict(open_.properties or {})
        remote_max = int(open_.max_frame_size) if open_.max_frame_size is not None else 1 << 32
        self.max_frame_size = max(MIN_MAX_FRAME_SIZE, min(self.config.frame_max, remote_max))
        if open_.channel_max is not None:
            self.channel_max = min(self.channel_max, int(open_.channel_max))
        self.remote_idle_timeout_ms = int(open_.idle_time_out or 0)
        self.reader.max_frame_size = self.config.frame_max
        # As RabbitMQ 4 (the version this side announces): a vhost that does not exist or that
        # the user may not use fails the handshake, the socket closed without an open
        # (RabbitMQ 3.x answered the open and refused the first begin).
        vhost = self._vhost_for(open_.hostname)
        if vhost is None:
            name = self._vhost_name(open_.hostname)
            self.drop(f"AMQP 1.0 connection failed: virtual host '{name}' does not exist")
            return
        if not self.node.users.may_access(self.user or "", vhost.name):
            self.drop(f"access to vhost '{vhost.name}' refused for user '{self.user}'")
            return
        self.state = State.OPENED
        # Product and version as RabbitMQ 4 announces them (wire_names.py: why 4.2.0 here).
        node_name = NODE_PREFIX + os.uname().nodename
        self.send(
            0,
            Open(
                container_id=node_name,
                max_frame_size=UInt(self.config.frame_max),
                channel_max=UShort(self.channel_max),
                idle_time_out=UInt(self.idle_timeout_ms) if self.idle_timeout_ms else None,
                properties={
                    Symbol("node"): node_name,
                    Symbol("product"): PRODUCT,
                    Symbol("version"): VERSION_AMQP10,
                },
            ),
        )
        self.enter_vhost(vhost)

    @staticmethod
    def _vhost_name(hostname: str | None) -> str:
        """`vhost:NAME` (RabbitMQ 3.x) or a plain vhost name; no hostname: the default vhost."""
        if not hostname:
            return "/"
        if hostname.startswith("vhost:"):
            return hostname[len("vhost:") :]
        return hostname

    def _vhost_for(self, hostname: str | None) -> VirtualHost | None:
        name = self._vhost_name(hostname)
        vhost = self.node.vhost(name)
        if vhost is None and hostname and not hostname.startswith("vhost:"):
            # Clients put the host they dialled here ("localhost"): that is not a vhost name.
            vhost = self.node.vhost("/")
        return vhost

    # ------------------------------------------------------------------ sessions
    def _session_frame(self, frame: Frame) -> None:
        body = frame.body
        if isinstance(body, Begin):
            self._begin(frame.channel, body)
            return
        local = self._remote_channels.get(frame.channel)
        session = self.sessions.get(local) if local is not None else None
        if session is None:
            if frame.channel in self._ending:
                if isinstance(body, End):
                    self._ending.discard(frame.channel)
                return  # the peer had not yet seen the end we sent
            raise ConnectionClosed(
                "amqp:connection:framing-error", f"frame on unattached channel {frame.channel}"
            )
        if isinstance(body, End):
            self._end(session, body)
            return
        try:
            session.handle(body, frame.payload)
        except AMQPError as err:
            # An engine error (a publish to an exchange deleted since the attach): RabbitMQ
            # ends the session with it.
            session.end_with_error(session_condition(err), reply_description(err))

    def _begin(self, remote_channel: int, begin: Begin) -> None:
        if self.vhost is None:
            raise ConnectionClosed(
                UNAUTHORIZED,
                f"Access for user '{self.user}' was refused: insufficient permissions",
            )
        if remote_channel in self._remote_channels or remote_channel in self._ending:
            raise ConnectionClosed(ILLEGAL_STATE, f"channel {remote_channel} already in use")
        if remote_channel > self.channel_max:
            raise ConnectionClosed(FRAMING_ERROR, f"channel {remote_channel} above channel-max")
        local = next(n for n in range(self.channel_max + 2) if n not in self.sessions)
        if local > self.channel_max:
            raise ConnectionClosed("amqp:resource-limit-exceeded", "no free channel")
        session = Session(self, local, remote_channel, begin)
        self.sessions[local] = session
        self._remote_channels[remote_channel] = local
        self.node.churn["channel_created"] += 1
        session.begun()

    def _end(self, session: Session, end: End) -> None:
        session.teardown()
        self.send(session.channel, End())
        self._forget(session)

    def _forget(self, session: Session) -> None:
        if self.sessions.pop(session.channel, None) is not None:
            self.node.churn["channel_closed"] += 1
        self._remote_channels.pop(session.remote_channel, None)

    def ended_by_broker(self, session: Session) -> None:
        """We sent `end` with an error: forget the session, await the peer's end."""
        self._forget(session)
        self._ending.add(session.remote_channel)

    # ------------------------------------------------------------------ closing
    def _closed_by_peer(self, close: Close) -> None:
        self._teardown()
        self.send(0, Close())
        self.close_reason = "client closed"
        self.should_close = True

    def _error(self, condition: str, description: str) -> None:
        """Close with an error, then let the socket go once the close is written."""
        if self.state in (State.CLOSED, State.CLOSE_SENT) or self.should_close:
            return
        if self.state in (State.SASL, State.AWAIT_HEADER):
            self.drop(f"{condition}: {description}")
            return
        self._teardown()
        error = Error(condition=Symbol(condition), description=description or None)
        self.send(0, Close(error=error))
        self.close_reason = f"{condition}: {description}"
        self.state = State.CLOSE_SENT
        self.should_close = True

    def idle_timed_out(self) -> None:
        """The peer sent nothing for our whole idle-time-out: close as the spec says."""
        self._error("amqp:resource-limit-exceeded", "local-idle-timeout expired")

    def server_close(self, reply_code: int, text: str) -> None:
        """Broker-initiated close (management API, shutdown): connection:forced."""
        if self.state is State.OPENED and not self.should_close:
            self._error(FORCED, text)
        else:
            self.drop(text)

    def _release_sessions(self) -> int:
        """Roll back the connection's transactions, then end every session."""
        self.transactions.rollback_all()
        for session in list(self.sessions.values()):
            session.teardown()
        released = len(self.sessions)
        self.sessions.clear()
        self._remote_channels.clear()
        return released

    def _socket_gone(self) -> None:
        self.state = State.CLOSED

    def heartbeat_frame(self) -> None:
        self.write(encode_frame(0, None))

    def view(self) -> ConnectionView:
        return ConnectionView(
            protocol=self.protocol,
            user=self.user,
            vhost=self.vhost.name if self.vhost is not None else None,
            peer=self.peer,
            channel_max=self.channel_max,
            frame_max=self.max_frame_size,
            heartbeat=self.idle_timeout_ms // 1000,
            client_properties={str(k): v for k, v in self.client_properties.items()},
            sessions=tuple(s.view() for _, s in sorted(self.sessions.items())),
            auth_mechanism=self.auth_mechanism,
        )


__all__ = ["FRAME_AMQP", "Connection10", "State"]
