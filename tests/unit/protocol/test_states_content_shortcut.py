"""The connection passes content frames on without a rule lookup (connection.py `_handle_frame`);
that shortcut must say exactly what the table says, for every state and every content frame."""

from __future__ import annotations

import pytest

from rabbitish.protocol.framing import FRAME_BODY, FRAME_HEADER
from rabbitish.protocol.states import (
    CONTENT_TO_CHANNEL,
    HEADER_FIXED_SIZE,
    ConnectionAction,
    ConnectionState,
    connection_rule,
    content_to_channel,
)


@pytest.mark.parametrize("state", list(ConnectionState))
@pytest.mark.parametrize("ftype", [FRAME_HEADER, FRAME_BODY])
@pytest.mark.parametrize("channel", [0, 1, 65535])
def test_the_shortcut_agrees_with_the_table(state, ftype, channel) -> None:
    for size in range(HEADER_FIXED_SIZE + 3):
        payload = bytes(size)
        to_channel = connection_rule(state, ftype, channel, payload).action
        if content_to_channel(state, ftype, channel, payload):
            assert to_channel is ConnectionAction.TO_CHANNEL
    # ...and it does apply where it should: a body, or a whole header, on an open channel.
    if state is ConnectionState.OPEN and channel:
        assert content_to_channel(state, ftype, channel, bytes(HEADER_FIXED_SIZE))


def test_it_applies_on_an_open_connection_only() -> None:
    assert {ConnectionState.OPEN} == CONTENT_TO_CHANNEL
