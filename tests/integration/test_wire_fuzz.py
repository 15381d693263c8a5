"""The broker survives any bytes at all on the wire (hypothesis), before or after the handshake,
and keeps serving fresh connections."""

from __future__ import annotations

import logging
import struct
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import commands

from tests.support.raw_amqp import (
    RawClient,
)
from tests.support.wire import (
    opened,
    still_works,
)


# ---------------------------------------------------------------------- fuzzing
def _fresh_connection_works(url: str) -> None:
    with opened(RawClient(url)) as c:
        still_works(c)


def _throw(url: str, data: bytes, handshake: bool) -> None:
    """Send `data` (after a handshake, or instead of one) and read whatever comes back for a
    moment; the broker may close, answer, or wait for more."""
    with RawClient(url, timeout=2) as c:
        if handshake:
            opened(c)
        try:
            c.send(data)
            deadline = time.monotonic() + 0.02
            while time.monotonic() < deadline:
                if not c.recv_bytes(max(0.001, deadline - time.monotonic())):
                    break
        except (TimeoutError, ConnectionError):
            pass


def _frame(ftype: int, channel: int, payload: bytes, end: bytes) -> bytes:
    return struct.pack(">BHI", ftype, channel, len(payload)) + payload + end


_channels = st.integers(0, 3)

_any_frame = st.builds(
    _frame,
    st.sampled_from([1, 2, 3, 4, 8, 9]),
    _channels,
    st.binary(max_size=64),
    st.sampled_from([b"\xce", b"\x00", b""]),
)

# Known methods with random arguments reach the decoders and the method handlers.
_method_frame = st.builds(
    lambda index, channel, args: _frame(1, channel, struct.pack(">I", index) + args, b"\xce"),
    st.sampled_from(sorted(commands.INDEX_MAPPING)),
    _channels,
    st.binary(max_size=48),
)

_fuzz_bytes = st.binary(max_size=300) | st.lists(
    _any_frame | _method_frame, min_size=1, max_size=4
).map(b"".join)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_fuzz_bytes, handshake=st.booleans())
def test_broker_survives_any_bytes(broker_url, caplog, data, handshake):
    """No input reaches an unexpected exception (which would be logged as an error) and the
    broker keeps accepting connections."""
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        _throw(broker_url, data, handshake)
        _fresh_connection_works(broker_url)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
