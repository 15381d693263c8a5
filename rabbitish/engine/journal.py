"""What the engine tells durable storage, and how it waits for it. The engine calls these methods
as durable state changes (synchronously, in order); a store turns them into SQL and syncs them in
groups. Replies that promise durability (confirms, tx.commit-ok) wait for `when_synced`; when the
store cannot write, they hear `failed` instead (a nack, a failed commit), never nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Binding, Exchange
    from rabbitish.engine.half import HalfTxn, PreparedSettlement
    from rabbitish.engine.message import Message, QueueEntry
    from rabbitish.engine.policies import Policy
    from rabbitish.engine.queue import Queue


Synced = Callable[[], None]
Failed = Callable[[str], None]  # called with the reason the store could not write


class Journal(Protocol):
    @property
    def refusing(self) -> bool:
        """True while writes fail and the unwritten backlog is at its bound: durable queues then
        refuse persistent messages (nacked), so a store that cannot write cannot fill memory."""
        ...

    def exchange_declared(self, exchange: Exchange, arg_types: dict[str, str]) -> None: ...

    def exchange_deleted(self, exchange: Exchange) -> None: ...

    def queue_declared(self, queue: Queue, arg_types: dict[str, str]) -> None: ...

    def queue_deleted(self, queue: Queue) -> None: ...

    def binding_added(self, binding: Binding) -> None: ...

    def binding_removed(self, binding: Binding) -> None: ...

    def policy_set(self, policy: Policy) -> None: ...

    def policy_cleared(self, policy: Policy) -> None: ...

    def message_enqueued(self, queue: Queue, entry: QueueEntry) -> None: ...

    def message_removed(self, queue: Queue, entry: QueueEntry) -> None: ...

    def message_delivered(self, queue: Queue, entry: QueueEntry) -> None:
        """First delivery of a durable message: after a crash it comes back redelivered."""
        ...

    def half_held(self, queue: Queue, message: Message, txn_id: str, ord_: int) -> None:
        """A persistent half message held for a durable queue (engine/half.py)."""
        ...

    def half_settlements_locked(self, txn_id: str, locks: list[PreparedSettlement]) -> None:
        """A prepare locked these settlements until its decision: those of persistent messages
        on durable queues are locked again by recovery. One call per prepare."""
        ...

    def half_txn_saved(self, vhost: str, txn: HalfTxn) -> None:
        """A durable half transaction's check-back state (first seen, checks sent) changed."""
        ...

    def half_decided(self, vhost: str, txn: HalfTxn, commit: bool, forget: str | None) -> None:
        """A half transaction was decided: its held messages and locks go (a commit has just
        enqueued and settled them), the decision is remembered and `forget`, the oldest
        remembered one, dropped."""
        ...

    @property
    def position(self) -> int:
        """How many changes have been journaled so far."""
        ...

    def when_synced(self, position: int, callback: Synced, failed: Failed | None = None) -> None:
        """Call `callback` once every change up to `position` is on disk (at once if it is), or
        `failed(reason)` if the write covering it failed."""
        ...


class NullJournal:
    """No durability (:memory: mode): nothing is written, every change counts as synced."""

    position = 0
    refusing = False

    def exchange_declared(self, exchange: Exchange, arg_types: dict[str, str]) -> None:
        pass

    def exchange_deleted(self, exchange: Exchange) -> None:
        pass

    def queue_declared(self, queue: Queue, arg_types: dict[str, str]) -> None:
        pass

    def queue_deleted(self, queue: Queue) -> None:
        pass

    def binding_added(self, binding: Binding) -> None:
        pass

    def binding_removed(self, binding: Binding) -> None:
        pass

    def policy_set(self, policy: Policy) -> None:
        pass

    def policy_cleared(self, policy: Policy) -> None:
        pass

    def message_enqueued(self, queue: Queue, entry: QueueEntry) -> None:
        pass

    def message_removed(self, queue: Queue, entry: QueueEntry) -> None:
        pass

    def message_delivered(self, queue: Queue, entry: QueueEntry) -> None:
        pass

    def half_held(self, queue: Queue, message: Message, txn_id: str, ord_: int) -> None:
        pass

    def half_settlements_locked(self, txn_id: str, locks: list[PreparedSettlement]) -> None:
        pass

    def half_txn_saved(self, vhost: str, txn: HalfTxn) -> None:
        pass

    def half_decided(self, vhost: str, txn: HalfTxn, commit: bool, forget: str | None) -> None:
        pass

    def when_synced(self, position: int, callback: Synced, failed: Failed | None = None) -> None:
        callback()
