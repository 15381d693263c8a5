"""The consumer acknowledgement timeout's close text is RabbitMQ's."""

from __future__ import annotations

from rabbitish.protocol.ack_timeout import timed_out_text


def test_the_timeout_text_is_rabbitmqs():
    assert timed_out_text(2, 1800000) == (
        "delivery acknowledgement on channel 2 timed out. Timeout value used: 1800000 ms. "
        "This timeout value can be configured, see consumers doc guide to learn more"
    )
