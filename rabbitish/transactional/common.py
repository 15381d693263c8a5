"""What both producers share, so the pika and aio-pika ones differ only in how they talk: the
outcome enum, the headers of a half message (named in rabbitish/wire_names.py, as the broker
reads them), and reading a status check."""

from __future__ import annotations

import decimal
import enum
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rabbitish.wire_names import (
    CHECK_COUNT_HEADER,
    CHECK_IMMUNITY_HEADER,
    CHECK_QUEUE_HEADER,
    HALF_HEADER,
)

__all__ = [
    "PERSISTENT",
    "HalfTransactionError",
    "LocalTransactionState",
    "SendResult",
    "as_state",
    "body_list",
    "checked_id",
    "decision_key",
    "half_headers",
    "log",
    "new_id",
    "not_held",
    "unroutable",
]

log = logging.getLogger("rabbitish.transactional")

PERSISTENT = 2  # half messages are meant to survive (step 2 of the flow): persistent by default


class LocalTransactionState(enum.Enum):
    """What the local transaction (or a status check) says about an ID."""

    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"  # decide nothing now: the broker's status check asks again later


class HalfTransactionError(Exception):
    """The broker did not take a half message or a decision (it reached no queue, or the ID
    is no longer held, e.g. rolled back after its last status check)."""


def not_held(txn_id: str) -> HalfTransactionError:
    return HalfTransactionError(f"the broker holds no half transaction {txn_id!r}")


def unroutable(txn_id: str, exchange: str, routing_key: str) -> HalfTransactionError:
    return HalfTransactionError(
        f"half message of {txn_id!r} reached no queue ({exchange!r}, {routing_key!r})"
    )


@dataclass(frozen=True)
class SendResult:
    """What `send` did: the ID it used and the outcome it published (UNKNOWN: none)."""

    txn_id: str
    state: LocalTransactionState


def new_id() -> str:
    return uuid.uuid4().hex


def body_list(body: bytes | Sequence[bytes]) -> list[bytes]:
    """One body, or several sent as separate half messages of the same ID."""
    if isinstance(body, bytes | bytearray | memoryview):
        return [bytes(body)]
    return [bytes(b) for b in body]


def half_headers(
    headers: Mapping[str, Any] | None, txn_id: str, check_queue: str, immunity: float | None
) -> dict[str, Any]:
    """The caller's headers plus those that make a message half of `txn_id`, checked back on
    `check_queue` (a caller's own x-check-immunity wins over the producer's)."""
    merged = dict(headers or {})
    merged[HALF_HEADER] = txn_id
    merged[CHECK_QUEUE_HEADER] = check_queue
    if immunity is not None:
        merged.setdefault(CHECK_IMMUNITY_HEADER, table_number(immunity))
    return merged


def table_number(seconds: float) -> int | decimal.Decimal:
    """Seconds as a field-table value every client encodes (pika has no float type)."""
    if float(seconds).is_integer():
        return int(seconds)
    return decimal.Decimal(str(seconds))


def as_state(value: Any) -> LocalTransactionState:
    """The callback's answer as the enum (its values, "commit" ..., are accepted too)."""
    if isinstance(value, LocalTransactionState):
        return value
    try:
        return LocalTransactionState(value)
    except ValueError:
        raise TypeError(
            f"a local transaction or checker must return a LocalTransactionState, got {value!r}"
        ) from None


def decision_key(state: LocalTransactionState) -> str | None:
    """The routing key of the decision for `state` on amq.rabbitish.txn (None: publish none)."""
    return None if state is LocalTransactionState.UNKNOWN else state.value


def checked_id(headers: Mapping[str, Any] | None) -> str | None:
    """The ID a status check asks about, or None for a message that is not one."""
    value = (headers or {}).get(HALF_HEADER)
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str) or CHECK_COUNT_HEADER not in (headers or {}):
        return None
    return value
