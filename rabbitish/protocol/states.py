"""Every rule of the 0-9-1 state machines, as data: the states a connection and a channel go
through, what each state does with each kind of frame, which outcome moves it to which state, and
how a connection answers an error in each state. connection.py and channel.py look their rules up
here and carry the actions out; they keep no state rules of their own.

A frame is classified first, without looking at any state (`classify`): malformed, an unknown
method, a heartbeat, a frame on the wrong channel, a connection method, or a frame for a channel.
The connection's state then names an action for that kind (or for the method, where a state tells
methods apart); frames for a channel go on to the channel's table. Refusals carry the reply code
and text RabbitMQ sends. States change only through the transition tables, on named events.

Output and flow control (what to write, when the socket closes) stay with the Connection: once it
has decided to hang up (`should_close`) it reads no more input, whatever its state."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from rabbitish.engine.errors import (
    CHANNEL_ERROR,
    UNEXPECTED_FRAME,
    ConnectionError_,
)
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    KNOWN_METHODS,
    METHOD_INDEX,
    Payload,
    method_ids,
    method_index,
)


# ---------------------------------------------------------------------- states and frame kinds
class ConnectionState(enum.IntEnum):
    AWAIT_START_OK = 1  # the header was accepted and connection.start sent
    AWAIT_TUNE_OK = 2
    AWAIT_OPEN = 3
    OPEN = 4
    CLOSING = 5  # we sent connection.close and wait for close-ok
    CLOSED = 6  # the socket is gone
    ANSWERED = 7  # we answered the client's connection.close: the client hangs up first


class ChannelState(enum.IntEnum):
    UNOPENED = 1  # no channel by this number yet: only channel.open starts one
    OPEN = 2
    AWAIT_HEADER = 3  # a method that carries content arrived; its content header comes next
    AWAIT_BODY = 4  # body frames until the announced size is in
    COMMITTING = 5  # tx.commit is in progress (until its effects are synced)
    CLOSING = 6  # we sent channel.close and wait for close-ok
    CLOSED = 7  # closed both ways; the number is free again


class FrameKind(enum.IntEnum):
    MALFORMED = 1  # unknown type, too short for its fixed fields, or a heartbeat with a payload
    UNKNOWN_METHOD = 2  # a class/method id pair the protocol does not define
    HEARTBEAT = 3  # on channel 0
    MISPLACED = 4  # content on channel 0, a heartbeat on a channel
    CONNECTION_METHOD = 5  # a known method on channel 0
    CHANNEL_FRAME = 6  # a known method, a content header or a body frame on a channel


# Module-level names for the kinds: enum attribute lookups are slow on the per-frame path.
_MALFORMED = FrameKind.MALFORMED
_UNKNOWN_METHOD = FrameKind.UNKNOWN_METHOD
_HEARTBEAT = FrameKind.HEARTBEAT
_MISPLACED = FrameKind.MISPLACED
_CONNECTION_METHOD = FrameKind.CONNECTION_METHOD
_CHANNEL_FRAME = FrameKind.CHANNEL_FRAME


def classify(ftype: int, channel: int, payload: Payload) -> FrameKind:
    """What a frame is, before any state is consulted (RabbitMQ's reader checks these first)."""
    if ftype == FRAME_METHOD:
        if len(payload) < 4:
            return _MALFORMED
        if method_index(payload) not in KNOWN_METHODS:
            return _UNKNOWN_METHOD
        return _CHANNEL_FRAME if channel else _CONNECTION_METHOD
    if ftype == FRAME_BODY:
        return _CHANNEL_FRAME if channel else _MISPLACED
    if ftype == FRAME_HEADER:
        if len(payload) < HEADER_FIXED_SIZE:
            return _MALFORMED
        return _CHANNEL_FRAME if channel else _MISPLACED
    if ftype == FRAME_HEARTBEAT and not payload:
        return _MISPLACED if channel else _HEARTBEAT
    return _MALFORMED


# ---------------------------------------------------------------------- actions and rules
class ConnectionAction(enum.IntEnum):
    IGNORE = 1
    DROP = 2  # close the socket without a word (RabbitMQ's reader process crashes)
    FRAME_ERROR = 3  # 501 naming the frame ("type 1, all octets = ...: unknown_frame")
    UNEXPECTED_FRAME = 4  # 505 naming the frame
    REFUSE = 5  # the rule's error
    START_OK = 6  # check the credentials, send connection.tune
    TUNE_OK = 7  # check the client's limits
    OPEN = 8  # check the vhost, send open-ok
    CLOSE = 9  # the client closes: release everything, close-ok, hang up
    UPDATE_SECRET = 10  # update-secret-ok
    TO_CHANNEL = 11  # the channel's table decides
    ANSWER_CLOSE = 12  # the client's close crossed ours: close-ok, keep waiting for theirs
    CLOSE_DONE = 13  # close-ok to our close: hang up


class ChannelAction(enum.IntEnum):
    IGNORE = 1
    REFUSE = 2  # the rule's error (all are hard errors: the connection closes)
    OPEN_CHANNEL = 3  # start a channel on this number, open-ok
    DISPATCH = 4  # run the method's handler (protocol.dispatch)
    CONTENT_HEADER = 5
    CONTENT_BODY = 6
    ANSWER_CLOSE = 7  # the client's close crossed ours: close-ok
    CLOSE_DONE = 8  # close-ok to our close: the channel is gone


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error a state answers a frame with. `at` is the method RabbitMQ names in the close;
    None names the refused frame itself (its method, or 0/0 for a content frame)."""

    code: int
    text: str
    at: tuple[int, int] | None = None

    def error(self, ftype: int, payload: Payload) -> ConnectionError_:
        if self.at is not None:
            at = self.at
        else:
            at = method_ids(payload) if ftype == FRAME_METHOD else (0, 0)
        error = ConnectionError_(self.code, self.text)
        error.at(*at)
        return error


@dataclass(frozen=True, slots=True)
class Rule:
    """What a state does with one kind of frame. `decode`: a method's arguments are decoded
    (and their errors reported) before the action, as RabbitMQ decodes before it looks at the
    state."""

    action: ConnectionAction | ChannelAction
    error: Refusal | None = None
    decode: bool = False


@dataclass(frozen=True, slots=True)
class StateRules:
    """One state's row: a rule per frame kind (connection) or frame type (channel), and rules
    for particular methods where the state tells methods apart (keyed by method index)."""

    frames: Mapping[int, Rule]
    methods: Mapping[int, Rule] = field(default_factory=dict)


def _by_method(rules: Mapping[str, Rule]) -> dict[int, Rule]:
    """Method rules are written with pamqp names and looked up by method index."""
    return {METHOD_INDEX[name]: rule for name, rule in rules.items()}


# ---------------------------------------------------------------------- the connection
_IGNORE = Rule(ConnectionAction.IGNORE)
_DROP = Rule(ConnectionAction.DROP)

# Frames the handshake and the open state treat alike. During the handshake every error closes
# the socket silently (ERROR_POLICY), so a 501 or 505 never reaches the client as a close method.
_COMMON: dict[int, Rule] = {
    FrameKind.MALFORMED: Rule(ConnectionAction.FRAME_ERROR),
    FrameKind.UNKNOWN_METHOD: _DROP,
    FrameKind.HEARTBEAT: _IGNORE,
    FrameKind.MISPLACED: Rule(ConnectionAction.UNEXPECTED_FRAME),
}
_HANDSHAKE: dict[int, Rule] = {
    **_COMMON,
    FrameKind.CHANNEL_FRAME: Rule(ConnectionAction.UNEXPECTED_FRAME),
    # any connection method but the one the state awaits
    FrameKind.CONNECTION_METHOD: Rule(ConnectionAction.DROP, decode=True),
}
_WHILE_CLOSING = StateRules(
    dict.fromkeys(FrameKind, _IGNORE),
    _by_method(
        {
            "Connection.Close": Rule(ConnectionAction.ANSWER_CLOSE),
            "Connection.CloseOk": Rule(ConnectionAction.CLOSE_DONE),
        }
    ),
)

CONNECTION_RULES: dict[ConnectionState, StateRules] = {
    ConnectionState.AWAIT_START_OK: StateRules(
        _HANDSHAKE, _by_method({"Connection.StartOk": Rule(ConnectionAction.START_OK, decode=True)})
    ),
    ConnectionState.AWAIT_TUNE_OK: StateRules(
        _HANDSHAKE, _by_method({"Connection.TuneOk": Rule(ConnectionAction.TUNE_OK, decode=True)})
    ),
    ConnectionState.AWAIT_OPEN: StateRules(
        _HANDSHAKE, _by_method({"Connection.Open": Rule(ConnectionAction.OPEN, decode=True)})
    ),
    ConnectionState.OPEN: StateRules(
        {
            **_COMMON,
            FrameKind.CHANNEL_FRAME: Rule(ConnectionAction.TO_CHANNEL),
            FrameKind.CONNECTION_METHOD: Rule(
                ConnectionAction.REFUSE,
                Refusal(CHANNEL_ERROR, "unexpected method in connection state running"),
                decode=True,
            ),
        },
        _by_method(
            {
                "Connection.Close": Rule(ConnectionAction.CLOSE, decode=True),
                "Connection.UpdateSecret": Rule(ConnectionAction.UPDATE_SECRET, decode=True),
            }
        ),
    ),
    # After connection.close only close and close-ok on channel 0 count, both ways: a client
    # whose close we answered gets close-ok for another close, and its close-ok ends it.
    ConnectionState.CLOSING: _WHILE_CLOSING,
    ConnectionState.ANSWERED: _WHILE_CLOSING,
    ConnectionState.CLOSED: StateRules(dict.fromkeys(FrameKind, _IGNORE)),
}


# The states in which a frame of kind CHANNEL_FRAME goes to its channel, read off the table above.
# A body frame on a channel is always of that kind, a content header once it holds its fixed
# fields (`is_content_for_channel`), so the connection passes the two content frames of every
# published message on without a rule lookup in these states.
CONTENT_TO_CHANNEL: frozenset[ConnectionState] = frozenset(
    state
    for state, rules in CONNECTION_RULES.items()
    if rules.frames[FrameKind.CHANNEL_FRAME].action is ConnectionAction.TO_CHANNEL
)
HEADER_FIXED_SIZE = 12  # class, weight, body size: a shorter content header is MALFORMED


def content_to_channel(state: ConnectionState, ftype: int, channel: int, payload: Payload) -> bool:
    """True for a content frame whose rule is surely TO_CHANNEL, decided without the lookup."""
    return (
        channel != 0
        and (ftype == FRAME_BODY or (ftype == FRAME_HEADER and len(payload) >= HEADER_FIXED_SIZE))
        and state in CONTENT_TO_CHANNEL
    )


def connection_rule(state: ConnectionState, ftype: int, channel: int, payload: Payload) -> Rule:
    rules = CONNECTION_RULES[state]
    kind = classify(ftype, channel, payload)
    if kind is _CONNECTION_METHOD:
        rule = rules.methods.get(method_index(payload))
        if rule is not None:
            return rule
    return rules.frames[kind]


class ConnectionEvent(enum.IntEnum):
    STARTED = 1  # start-ok with good credentials
    TUNED = 2  # tune-ok within our limits
    OPENED = 3  # the vhost is there and the user may use it
    CLOSE_SENT = 4  # we sent connection.close
    LOST = 5  # the socket is gone
    CLOSE_ANSWERED = 6  # the client's connection.close, answered with close-ok


CONNECTION_TRANSITIONS: dict[tuple[ConnectionState, ConnectionEvent], ConnectionState] = {
    (ConnectionState.AWAIT_START_OK, ConnectionEvent.STARTED): ConnectionState.AWAIT_TUNE_OK,
    (ConnectionState.AWAIT_TUNE_OK, ConnectionEvent.TUNED): ConnectionState.AWAIT_OPEN,
    (ConnectionState.AWAIT_OPEN, ConnectionEvent.OPENED): ConnectionState.OPEN,
    (
        ConnectionState.AWAIT_OPEN,
        ConnectionEvent.CLOSE_SENT,
    ): ConnectionState.CLOSING,  # 530: vhost missing or refused
    (ConnectionState.OPEN, ConnectionEvent.CLOSE_SENT): ConnectionState.CLOSING,
    # 403: refused credentials, to a client that announced authentication_failure_close
    (ConnectionState.AWAIT_START_OK, ConnectionEvent.CLOSE_SENT): ConnectionState.CLOSING,
    (ConnectionState.OPEN, ConnectionEvent.CLOSE_ANSWERED): ConnectionState.ANSWERED,
    **{
        (state, ConnectionEvent.LOST): ConnectionState.CLOSED
        for state in ConnectionState
        if state is not ConnectionState.CLOSED
    },
}

# The I/O layer runs heartbeats from tune-ok on (as RabbitMQ does, before open).
TUNED_STATES = frozenset({ConnectionState.AWAIT_OPEN, ConnectionState.OPEN})


class OnError(enum.IntEnum):
    CLOSE = 1  # connection.close with the error, then wait for close-ok
    DROP = 2  # no close method: stop reading, close the socket after a moment (RabbitMQ's 3 s)
    NOTHING = 3  # already on the way out


class ErrorPolicy(NamedTuple):
    error: OnError  # a hard error (AMQPError) from a frame
    frame_sync: OnError  # the byte stream cannot be trusted any more (CLOSE also stops reading)
    server_close: OnError  # the broker closes the connection (shutdown, management API)
    bad_frame: OnError  # a frame of a kind no state takes (501 unknown_frame, 505 misplaced)


_SILENT = ErrorPolicy(OnError.DROP, OnError.DROP, OnError.DROP, OnError.DROP)
ERROR_POLICY: dict[ConnectionState, ErrorPolicy] = {
    # Before open RabbitMQ closes the socket without a word, except for refused credentials
    # (403 to clients announcing authentication_failure_close), a refused vhost (530) and,
    # once tuned, errors about the frames themselves (501, 505).
    ConnectionState.AWAIT_START_OK: _SILENT,
    ConnectionState.AWAIT_TUNE_OK: _SILENT,
    ConnectionState.AWAIT_OPEN: ErrorPolicy(
        OnError.DROP, OnError.CLOSE, OnError.DROP, OnError.CLOSE
    ),
    ConnectionState.OPEN: ErrorPolicy(OnError.CLOSE, OnError.CLOSE, OnError.CLOSE, OnError.CLOSE),
    ConnectionState.CLOSING: ErrorPolicy(
        OnError.NOTHING, OnError.DROP, OnError.NOTHING, OnError.NOTHING
    ),
    ConnectionState.ANSWERED: ErrorPolicy(
        OnError.NOTHING, OnError.DROP, OnError.DROP, OnError.NOTHING
    ),
    ConnectionState.CLOSED: ErrorPolicy(
        OnError.NOTHING, OnError.DROP, OnError.DROP, OnError.NOTHING
    ),
}


def error_policy(state: ConnectionState, hanging_up: bool) -> ErrorPolicy:
    """How to answer errors now. A connection that already decided to hang up adds nothing to
    an error, and can no longer start a close handshake."""
    policy = ERROR_POLICY[state]
    if not hanging_up:
        return policy
    server_close = OnError.DROP if policy.server_close is OnError.CLOSE else policy.server_close
    return ErrorPolicy(OnError.NOTHING, policy.frame_sync, server_close, OnError.NOTHING)


# ---------------------------------------------------------------------- the channel
_NOT_A_METHOD = Rule(
    ChannelAction.REFUSE,
    Refusal(UNEXPECTED_FRAME, "expected method frame, got non method frame instead"),
)
_NO_HEADER = Rule(
    ChannelAction.REFUSE,
    Refusal(
        UNEXPECTED_FRAME,
        "expected content header for class 60, got non content header frame instead",
        (60, 40),
    ),
)
_NO_BODY = Rule(
    ChannelAction.REFUSE,
    Refusal(
        UNEXPECTED_FRAME, "expected content body, got non content body frame instead", (60, 40)
    ),
)
_COMMITTING = Rule(
    ChannelAction.REFUSE, Refusal(CHANNEL_ERROR, "unexpected command while processing 'tx.commit'")
)
_IGNORED = Rule(ChannelAction.IGNORE)

CHANNEL_RULES: dict[ChannelState, StateRules] = {
    ChannelState.UNOPENED: StateRules(
        {
            FRAME_METHOD: Rule(
                ChannelAction.REFUSE, Refusal(CHANNEL_ERROR, "expected 'channel.open'"), decode=True
            ),
            FRAME_HEADER: _NOT_A_METHOD,
            FRAME_BODY: _NOT_A_METHOD,
        },
        _by_method({"Channel.Open": Rule(ChannelAction.OPEN_CHANNEL, decode=True)}),
    ),
    ChannelState.OPEN: StateRules(
        {
            FRAME_METHOD: Rule(ChannelAction.DISPATCH),
            FRAME_HEADER: _NOT_A_METHOD,
            FRAME_BODY: _NOT_A_METHOD,
        }
    ),
    ChannelState.AWAIT_HEADER: StateRules(
        {
            FRAME_METHOD: _NO_HEADER,
            FRAME_HEADER: Rule(ChannelAction.CONTENT_HEADER),
            FRAME_BODY: _NO_HEADER,
        }
    ),
    # A body longer than announced never completes, as in RabbitMQ: the next frame that is not
    # a body frame is the error.
    ChannelState.AWAIT_BODY: StateRules(
        {
            FRAME_METHOD: _NO_BODY,
            FRAME_HEADER: _NO_BODY,
            FRAME_BODY: Rule(ChannelAction.CONTENT_BODY),
        }
    ),
    # channel.close while a commit is in progress closes the channel as usual; the commit
    # stands, and its commit-ok is never sent (RabbitMQ's answer, frame for frame).
    ChannelState.COMMITTING: StateRules(
        dict.fromkeys((FRAME_METHOD, FRAME_HEADER, FRAME_BODY), _COMMITTING),
        _by_method({"Channel.Close": Rule(ChannelAction.DISPATCH)}),
    ),
    # After channel.close everything but close and close-ok is discarded.
    ChannelState.CLOSING: StateRules(
        dict.fromkeys((FRAME_METHOD, FRAME_HEADER, FRAME_BODY), _IGNORED),
        _by_method(
            {
                "Channel.Close": Rule(ChannelAction.ANSWER_CLOSE),
                "Channel.CloseOk": Rule(ChannelAction.CLOSE_DONE),
            }
        ),
    ),
    ChannelState.CLOSED: StateRules(
        dict.fromkeys((FRAME_METHOD, FRAME_HEADER, FRAME_BODY), _IGNORED)
    ),
}


def channel_rule(state: ChannelState, ftype: int, payload: Payload) -> Rule:
    """The rule for a frame the connection passed on (a known method, a header or a body)."""
    rules = CHANNEL_RULES[state]
    if ftype == FRAME_METHOD and rules.methods:
        rule = rules.methods.get(method_index(payload))
        if rule is not None:
            return rule
    return rules.frames[ftype]


class ChannelEvent(enum.IntEnum):
    CONTENT_METHOD = 1  # a method that carries content (basic.publish)
    CONTENT_HEADER = 2  # its header, announcing a body
    CONTENT_DONE = 3  # the last body frame (or a header announcing none): the command is whole
    COMMIT_STARTED = 4
    COMMIT_DONE = 5
    CLOSE_SENT = 6  # we sent channel.close (a soft error)
    CLOSED = 7  # the client's channel.close answered, or its close-ok to ours
    CONNECTION_CLOSED = 8  # the connection closed or went: nothing more is sent on the channel


CHANNEL_TRANSITIONS: dict[tuple[ChannelState, ChannelEvent], ChannelState] = {
    (ChannelState.OPEN, ChannelEvent.CONTENT_METHOD): ChannelState.AWAIT_HEADER,
    (ChannelState.AWAIT_HEADER, ChannelEvent.CONTENT_HEADER): ChannelState.AWAIT_BODY,
    (ChannelState.AWAIT_HEADER, ChannelEvent.CONTENT_DONE): ChannelState.OPEN,
    (ChannelState.AWAIT_BODY, ChannelEvent.CONTENT_DONE): ChannelState.OPEN,
    (ChannelState.OPEN, ChannelEvent.COMMIT_STARTED): ChannelState.COMMITTING,
    (ChannelState.COMMITTING, ChannelEvent.COMMIT_DONE): ChannelState.OPEN,
    (ChannelState.OPEN, ChannelEvent.CLOSE_SENT): ChannelState.CLOSING,
    (ChannelState.OPEN, ChannelEvent.CLOSED): ChannelState.CLOSED,
    (ChannelState.CLOSING, ChannelEvent.CLOSED): ChannelState.CLOSED,
    (ChannelState.COMMITTING, ChannelEvent.CLOSED): ChannelState.CLOSED,
    **{
        (state, ChannelEvent.CONNECTION_CLOSED): ChannelState.CLOSED
        for state in ChannelState
        if state is not ChannelState.CLOSED
    },
}


class StateError(Exception):
    """An event the current state has no transition for: a bug in the broker, never the
    client's doing."""


def next_connection_state(state: ConnectionState, event: ConnectionEvent) -> ConnectionState:
    try:
        return CONNECTION_TRANSITIONS[state, event]
    except KeyError:
        raise StateError(f"connection: {event.name} in state {state.name}") from None


def next_channel_state(state: ChannelState, event: ChannelEvent) -> ChannelState:
    try:
        return CHANNEL_TRANSITIONS[state, event]
    except KeyError:
        raise StateError(f"channel: {event.name} in state {state.name}") from None
