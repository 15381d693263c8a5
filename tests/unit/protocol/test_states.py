"""Walks the state tables of protocol/states.py with real bytes: drive a Connection (and channel 1)
into each state, send each kind of frame (every method pamqp knows, with valid arguments and
with a byte too many; content headers; body frames; heartbeats; malformed, unknown and
out-of-sync frames; on channel 0 and on channel 1) and check the outcome is the one the tables
name: the reply, the close code, text and method, a dropped socket, or nothing at all. The
harness fails any input that reaches the Connection's internal-error path.

The exhaustive walk covers every (state, frame) pair once; Hypothesis adds random slicings of
the input and sequences of frames, each checked against the state it arrives in."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import commands

from rabbitish.engine.errors import REPLY_NAMES, ConnectionError_
from rabbitish.protocol.dispatch import ROUTES
from rabbitish.protocol.framing import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    KNOWN_METHODS,
    BadFrame,
    FrameReader,
    FrameSyncError,
    cannot_decode,
    encode_frame,
    encode_method,
    method_ids,
    method_index,
    unexpected_frame_type,
    unknown_frame,
)
from rabbitish.protocol.states import (
    CHANNEL_RULES,
    CONNECTION_RULES,
    ChannelAction,
    ChannelState,
    ConnectionAction,
    ConnectionState,
    OnError,
    channel_rule,
    connection_rule,
    error_policy,
)
from tests.unit.harness import Close, Harness, publish_bytes

CH = 1  # the channel the walk drives through the channel states


# ---------------------------------------------------------------------- probes
@dataclass(frozen=True)
class Probe:
    label: str
    ftype: int
    payload: bytes
    raw: bytes | None = None  # bytes that are not one well-formed frame (reader errors)
    overlong: bool = False  # a method with a byte more than its arguments take

    def wire(self, channel: int) -> bytes:
        return self.raw if self.raw is not None else encode_frame(self.ftype, channel, self.payload)


_ZERO = {
    "octet": b"\0",
    "short": b"\0\0",
    "long": b"\0" * 4,
    "longlong": b"\0" * 8,
    "shortstr": b"\0",
    "longstr": b"\0" * 4,
    "table": b"\0" * 4,
}


def zero_arguments(cls: type) -> bytes:
    """The method's arguments, each zero or empty: always decodable."""
    out, bits = b"", 0
    for name in cls.__slots__:
        kind = cls.amqp_type(name)
        if kind == "bit":
            if bits % 8 == 0:
                out += b"\0"
            bits += 1
        else:
            bits = 0
            out += _ZERO[kind]
    return out


def _method_probes() -> list[Probe]:
    probes = []
    for index, cls in sorted(commands.INDEX_MAPPING.items()):
        payload = struct.pack(">I", index) + zero_arguments(cls)
        probes.append(Probe(cls.name, FRAME_METHOD, payload))
        probes.append(Probe(f"{cls.name} + 1 byte", FRAME_METHOD, payload + b"\0", overlong=True))
    return probes


def _header(class_id: int, size: int, properties: bytes = b"\0\0") -> bytes:
    return struct.pack(">HHQ", class_id, 0, size) + properties


PROBES: list[Probe] = [
    *_method_probes(),
    Probe("header, empty body", FRAME_HEADER, _header(60, 0)),
    Probe("header, 4-byte body", FRAME_HEADER, _header(60, 4)),
    Probe("header for class 50", FRAME_HEADER, _header(50, 0)),
    Probe("header without property flags", FRAME_HEADER, _header(60, 0, b"")),
    Probe("header too short", FRAME_HEADER, b"\0" * 5),
    Probe("body", FRAME_BODY, b"abcd"),
    Probe("empty body", FRAME_BODY, b""),
    Probe("heartbeat", FRAME_HEARTBEAT, b""),
    Probe("heartbeat with a payload", FRAME_HEARTBEAT, b"x"),
    Probe("method too short", FRAME_METHOD, b"\0\x14"),
    Probe("unknown method 99/1", FRAME_METHOD, struct.pack(">HH", 99, 1)),
    Probe("unknown frame type", 5, b"abc"),
    Probe("bad frame-end", 0, b"", raw=b"\x08\x00\x00\x00\x00\x00\x00\x00"),
    Probe("oversized frame", 0, b"", raw=b"\x01\x00\x00\x00\x10\x00\x00"),
]


# ---------------------------------------------------------------------- reaching a state
START_OK = commands.Connection.StartOk(
    client_properties={"capabilities": {"authentication_failure_close": True}},
    mechanism="PLAIN",
    response="\0guest\0guest",
)
Situation = tuple[ConnectionState, ChannelState | None]
SITUATIONS: list[Situation] = [
    (ConnectionState.AWAIT_START_OK, None),
    (ConnectionState.AWAIT_TUNE_OK, None),
    (ConnectionState.AWAIT_OPEN, None),
    *((ConnectionState.OPEN, state) for state in ChannelState if state is not ChannelState.CLOSED),
    (ConnectionState.CLOSING, None),
    (ConnectionState.CLOSED, None),
    (ConnectionState.ANSWERED, None),
]


def reach(situation: Situation) -> Harness:
    """A harness in the given connection (and channel 1) state, driven there by bytes only (the
    closed state: the socket went away)."""
    conn_state, chan_state = situation
    h = Harness(hold_syncs=True)
    order = list(ConnectionState)
    steps = [
        encode_method(0, START_OK),
        encode_method(0, commands.Connection.TuneOk(channel_max=2047, frame_max=131072)),
        encode_method(0, commands.Connection.Open(virtual_host="/")),
    ]
    for step in steps[: min(order.index(conn_state), 3)]:
        h.feed(step)
    if conn_state is ConnectionState.CLOSING:
        h.feed(encode_frame(FRAME_HEARTBEAT, 3, b""))  # 505
    elif conn_state is ConnectionState.ANSWERED:
        h.send(0, commands.Connection.Close(reply_code=200, reply_text="", class_id=0, method_id=0))
    elif conn_state is ConnectionState.CLOSED:
        h.conn.lost()
    elif chan_state is not None and chan_state is not ChannelState.UNOPENED:
        _channel_into(h, chan_state)
    h.frames()
    assert h.conn.state is conn_state
    assert _channel_state(h) is chan_state or conn_state is not ConnectionState.OPEN
    return h


def _channel_into(h: Harness, state: ChannelState) -> None:
    h.open_channel(CH)
    if state is ChannelState.AWAIT_HEADER:
        h.send(CH, commands.Basic.Publish(routing_key="q"))
    elif state is ChannelState.AWAIT_BODY:
        h.send(CH, commands.Basic.Publish(routing_key="q"))
        h.send_frame(FRAME_HEADER, CH, _header(60, 4))
    elif state is ChannelState.COMMITTING:
        h.send(CH, commands.Queue.Declare(queue="q"))
        h.send(CH, commands.Tx.Select())
        h.feed(publish_bytes(CH, b"body", routing_key="q"))
        h.send(CH, commands.Tx.Commit())  # commit-ok waits for the held sync
    elif state is ChannelState.CLOSING:
        h.send(CH, commands.Basic.Ack(delivery_tag=99))  # 406 unknown delivery tag


def _channel_state(h: Harness, channel: int = CH) -> ChannelState | None:
    if h.conn.state is not ConnectionState.OPEN:
        return None
    found = h.conn.channels.get(channel)
    return ChannelState.UNOPENED if found is None else found.state


# ---------------------------------------------------------------------- what the tables say
@dataclass(frozen=True)
class Expect:
    outcome: str  # ignored | dropped | close | reply | channel gone | handler
    close: Close | None = None
    reply: tuple[int, str] | None = None
    linger: bool = False
    then_drop: bool = False  # the reply is the last word (client's connection.close)


IGNORED = Expect("ignored")
DROPPED = Expect("dropped")
HANDLER = Expect("handler")


def _error(h: Harness, error: ConnectionError_ | FrameSyncError, sync: bool = False) -> Expect:
    policy = error_policy(h.conn.state, h.conn.should_close)
    answer = policy.bad_frame if isinstance(error, BadFrame) else policy.error
    if sync:
        answer = policy.frame_sync
    if answer is OnError.CLOSE:
        close = Close(error.reply_code, error.reply_text, error.class_id, error.method_id)
        return Expect("close", close, linger=sync)
    # A silent refusal: the socket goes after RabbitMQ's 3 s, or when the client goes first.
    return Expect("dropped", linger=True) if answer is OnError.DROP else IGNORED


def expected(h: Harness, probe: Probe, channel: int) -> Expect:
    state = h.conn.state
    if state is ConnectionState.CLOSED:
        return IGNORED  # the socket is gone: input is not read
    if probe.raw is not None:
        reader = FrameReader(h.conn.reader.frame_max)
        with pytest.raises(FrameSyncError) as caught:
            list(reader.feed(probe.raw))
        return _error(h, caught.value, sync=True)
    ftype, payload = probe.ftype, probe.payload
    rule = connection_rule(state, ftype, channel, payload)
    if rule.decode and probe.overlong:
        return _error(h, ConnectionError_(541, ""))  # arguments that do not fit: 541, 0/0
    action = rule.action
    if action is ConnectionAction.IGNORE:
        return IGNORED
    if action is ConnectionAction.DROP:
        # A method RabbitMQ does not know crashes its reader (the socket goes at once); a
        # known one out of place during the handshake is a silent refusal.
        known = len(payload) >= 4 and method_index(payload) in KNOWN_METHODS
        return Expect("dropped", linger=known)
    if action is ConnectionAction.FRAME_ERROR:
        return _error(h, unknown_frame(ftype, payload))
    if action is ConnectionAction.UNEXPECTED_FRAME:
        return _error(h, unexpected_frame_type(ftype, payload))
    if action is ConnectionAction.REFUSE:
        assert rule.error is not None
        return _error(h, rule.error.error(ftype, payload))
    if action is ConnectionAction.ANSWER_CLOSE:
        return Expect("reply", reply=(0, "Connection.CloseOk"))
    if action is ConnectionAction.CLOSE_DONE:
        return DROPPED
    if action is ConnectionAction.CLOSE:  # the client hangs up first
        return Expect("reply", reply=(0, "Connection.CloseOk"))
    if action is ConnectionAction.UPDATE_SECRET:
        return Expect("reply", reply=(0, "Connection.UpdateSecretOk"))
    if action is ConnectionAction.TO_CHANNEL:
        return _expected_on_channel(h, probe, channel)
    return HANDLER  # the handshake steps: their handlers decide


def _expected_on_channel(h: Harness, probe: Probe, channel: int) -> Expect:
    ftype, payload = probe.ftype, probe.payload
    found = h.conn.channels.get(channel)
    state = ChannelState.UNOPENED if found is None else found.state
    rule = channel_rule(state, ftype, payload)
    action = rule.action
    decodes = rule.decode or action is ChannelAction.DISPATCH
    if decodes and probe.overlong:
        return _error(h, cannot_decode(payload[4:]).at(*method_ids(payload)))  # type: ignore[arg-type]
    if action is ChannelAction.IGNORE:
        return IGNORED
    if action is ChannelAction.REFUSE:
        assert rule.error is not None
        return _error(h, rule.error.error(ftype, payload))
    if action is ChannelAction.OPEN_CHANNEL:
        return Expect("reply", reply=(channel, "Channel.OpenOk"))
    if action is ChannelAction.ANSWER_CLOSE:
        return Expect("reply", reply=(channel, "Channel.CloseOk"))
    if action is ChannelAction.CLOSE_DONE:
        return Expect("channel gone")
    if action is ChannelAction.DISPATCH and method_index(payload) not in ROUTES:
        error = ConnectionError_(503, "unimplemented method").at(*method_ids(payload))
        return _error(h, error)  # type: ignore[arg-type]
    return HANDLER  # handlers and content assembly decide


def check(h: Harness, probe: Probe, channel: int, cuts: list[int] | int | None = None) -> Expect:
    """Send the probe and compare the outcome with the tables."""
    expect = expected(h, probe, channel)
    before = (h.conn.state, _channel_state(h, channel))
    out = h.feed(probe.wire(channel), cuts)
    where = f"{probe.label} on channel {channel} in {before}"
    if expect.outcome == "ignored":
        assert (out, h.dropped) == ([], False), where
        assert (h.conn.state, _channel_state(h, channel)) == before, where
    elif expect.outcome == "dropped":
        assert (out, h.dropped, h.conn.linger) == ([], True, expect.linger), where
    elif expect.outcome == "close":
        assert [(f.channel, f.close) for f in out] == [(0, expect.close)], where
        assert h.conn.state is ConnectionState.CLOSING, where
        assert (h.dropped, h.conn.linger) == (expect.linger, expect.linger), where
    elif expect.outcome == "reply":
        assert [(f.channel, f.name) for f in out] == [expect.reply], where
        assert h.dropped is expect.then_drop, where
    elif expect.outcome == "channel gone":
        assert out == [] and channel not in h.conn.channels, where
    return expect


# ---------------------------------------------------------------------- the walks
@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: f"{s[0].name}-{s[1] and s[1].name}")
def test_every_frame_in_every_state(situation):
    for probe in PROBES:
        for channel in (0, CH):
            check(reach(situation), probe, channel)


@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: f"{s[0].name}-{s[1] and s[1].name}")
def test_every_frame_in_every_state_byte_by_byte(situation):
    for probe in PROBES:
        for channel in (0, CH):
            check(reach(situation), probe, channel, 1)


def test_the_walk_reaches_every_state_of_both_tables():
    reached = {s[0] for s in SITUATIONS} | {s[1] for s in SITUATIONS if s[1] is not None}
    assert set(CONNECTION_RULES) <= reached
    # A closed channel is gone from its connection: its number is unopened again.
    assert set(CHANNEL_RULES) - {ChannelState.CLOSED} <= reached


def test_every_reply_code_in_the_tables_is_a_known_one():
    for rules in [*CONNECTION_RULES.values(), *CHANNEL_RULES.values()]:
        for rule in [*rules.frames.values(), *rules.methods.values()]:
            if rule.error is not None:
                assert rule.error.code in REPLY_NAMES


_situations = st.sampled_from(SITUATIONS)
_probes = st.sampled_from(PROBES)
_channels = st.sampled_from([0, CH, 2])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_situations, _probes, _channels, st.lists(st.integers(1, 40), max_size=6))
def test_any_state_any_frame_any_slicing(situation, probe, channel, cuts):
    check(reach(situation), probe, channel, cuts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_situations, st.lists(st.tuples(_probes, _channels, st.booleans()), max_size=10))
def test_frame_sequences_follow_the_tables(situation, sequence):
    """Each frame is checked against the state the ones before it left behind."""
    h = reach(situation)
    for probe, channel, bytewise in sequence:
        if h.dropped:
            break
        check(h, probe, channel, 1 if bytewise else None)
