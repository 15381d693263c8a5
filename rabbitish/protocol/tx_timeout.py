"""The transaction idle timeout (`--transaction-timeout`) on a 0-9-1 tx channel: the engine's
transaction registry times the transaction (engine/transactions.py); past the timeout the
channel is closed with 406 PRECONDITION_FAILED and this text, in the style of RabbitMQ's
consumer_timeout text (ack_timeout.py), which rolls the transaction back as any channel close
does. RabbitMQ itself has no such timeout."""

from __future__ import annotations


def idle_transaction_text(channel_id: int, timeout_ms: int) -> str:
    return (
        f"transaction on channel {channel_id} timed out: idle with uncommitted work. Timeout "
        f"value used: {timeout_ms} ms. This timeout value can be configured with "
        "--transaction-timeout"
    )
