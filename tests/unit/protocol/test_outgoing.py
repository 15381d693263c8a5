"""The hand-rolled hot-frame encoders must produce the bytes pamqp's general encoder does."""

from __future__ import annotations

import pytest
from pamqp import commands, frame

from rabbitish.protocol import outgoing


@pytest.mark.parametrize("redelivered", [False, True])
@pytest.mark.parametrize(
    ("exchange", "routing_key"), [("", "q"), ("amq.topic", "a.b.c"), ("ex", "ключ" * 10)]
)
def test_deliver_matches_pamqp(redelivered: bool, exchange: str, routing_key: str) -> None:
    built = outgoing.deliver(
        7, outgoing.shortstr("ctag"), 2**40 + 3, redelivered, outgoing.names(exchange, routing_key)
    )
    method = commands.Basic.Deliver("ctag", 2**40 + 3, redelivered, exchange, routing_key)
    assert built == frame.marshal(method, 7)


def test_names_are_encoded_once_per_pair() -> None:
    assert outgoing.names("ex", "rk") is outgoing.names("ex", "rk")
    assert outgoing.names("ex", "rk") == b"\x02ex\x02rk"
