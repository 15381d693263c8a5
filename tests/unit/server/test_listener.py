"""The listener reads the protocol header and picks the front end that speaks it."""

from __future__ import annotations

from rabbitish.server.connection import AmqpServerProtocol
from rabbitish.server.listener import (
    AMQP_0_9,
    AMQP_0_9_1,
    AMQP_1_0,
    AMQP_1_0_SASL,
    FRONT_ENDS,
    amqp10_front_end,
    front_end_for,
)


def test_the_protocol_header_chooses_the_front_end():
    assert front_end_for(AMQP_0_9_1) is AmqpServerProtocol
    assert front_end_for(AMQP_0_9) is AmqpServerProtocol
    assert front_end_for(AMQP_1_0) is front_end_for(AMQP_1_0_SASL) is amqp10_front_end
    for header in (b"GET / HT", b"AMQP\x00\x00\x09\x00", b"AMQP\x00\x02\x00\x00"):
        assert front_end_for(header) is None  # answered with our header and a close
    assert all(len(header) == 8 for header in FRONT_ENDS)
