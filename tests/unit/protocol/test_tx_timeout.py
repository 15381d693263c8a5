"""The text a tx channel idle past --transaction-timeout is closed with."""

from __future__ import annotations

from rabbitish.protocol.tx_timeout import idle_transaction_text


def test_the_idle_transaction_text_names_the_channel_and_the_timeout():
    assert idle_transaction_text(3, 2500) == (
        "transaction on channel 3 timed out: idle with uncommitted work. Timeout value used: "
        "2500 ms. This timeout value can be configured with --transaction-timeout"
    )
