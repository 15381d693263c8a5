"""Client helpers for half messages (docs/half-messages.md), in the shape of a transactional
producer: `send` holds the message(s) under a fresh ID, runs the local transaction and publishes
its outcome; a `checker` answers the broker's status checks for IDs left undecided. They are
thin wrappers over unmodified pika (`TransactionProducer`) and aio-pika
(`AsyncTransactionProducer`); each client library is imported only when its producer is used."""

from __future__ import annotations

from typing import Any

from rabbitish.transactional.common import (
    HalfTransactionError,
    LocalTransactionState,
    SendResult,
)

__all__ = [
    "AsyncTransactionProducer",
    "HalfTransactionError",
    "LocalTransactionState",
    "SendResult",
    "TransactionProducer",
]


def __getattr__(name: str) -> Any:
    # Lazy, so a pika user needs no aio-pika installed, and the other way round.
    if name == "TransactionProducer":
        from rabbitish.transactional.blocking import TransactionProducer

        return TransactionProducer
    if name == "AsyncTransactionProducer":
        from rabbitish.transactional.aio import AsyncTransactionProducer

        return AsyncTransactionProducer
    raise AttributeError(name)
