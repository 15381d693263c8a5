"""The engine's Journal (engine/journal.py) on SQLite: each durable change the engine reports
becomes a typed record (ops.py) handed, in order, to the store's writer (writer.py), which
batches, writes, retries and says when a position is on disk. Only durable things are
journaled (durable exchanges, queues and bindings between them, policies, persistent messages on
durable queues, half messages), and a persistent message on a long queue is offered to the pager
so its body leaves memory once written. Recovery fills the engine before this journal is
attached, so it journals only changes made after start."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rabbitish.engine.exchanges.base import freeze
from rabbitish.protocol.field_tables import encode_table
from rabbitish.store import ops

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Binding, Exchange
    from rabbitish.engine.half import HalfTxn, PreparedSettlement
    from rabbitish.engine.message import Message, QueueEntry
    from rabbitish.engine.policies import Policy
    from rabbitish.engine.queue import Queue
    from rabbitish.store.lock import DataDirLock
    from rabbitish.store.pager import Pager
    from rabbitish.store.writer import JournalWriter


def binding_args_key(arguments: dict[str, Any]) -> bytes:
    return repr(freeze(arguments)).encode()


def _dest_kind(destination: Any) -> str:
    from rabbitish.engine.queue import Queue

    return "queue" if isinstance(destination, Queue) else "exchange"


class SqliteJournal:
    """The engine's Journal: events in, records out to `writer`. It also holds what a running
    store keeps open (the pager, the data dir's lock) and releases them on close."""

    def __init__(
        self,
        writer: JournalWriter,
        clock: Callable[[], float],
        pager: Pager | None = None,
        lock: DataDirLock | None = None,
    ) -> None:
        self.writer = writer
        self.clock = clock  # the engine's monotonic clock, to turn expiry times into wall time
        self.pager = pager
        self.lock = lock
        # The writer's own methods, bound once: a change costs no extra call on its way.
        self._add = writer.add
        self._add_message = writer.add_message
        self.when_synced = writer.when_synced  # the Journal's: the writer knows what is on disk
        self.writing = writer.writing  # for the busy-waiting event loop

    @property
    def position(self) -> int:
        """How many changes have been journaled so far."""
        return self.writer.position

    @property
    def refusing(self) -> bool:
        """Writes fail and the unwritten backlog is at its bound: refuse persistent messages."""
        return self.writer.refusing

    async def start(self) -> None:
        await self.writer.start()

    async def close(self) -> None:
        """Write what is pending (one more attempt if writes are failing), then stop and let go
        of the data dir."""
        await self.writer.close()
        if self.pager is not None:
            self.pager.close()
            self.pager = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # ------------------------------------------------------------------ wiring
    def exchange_declared(self, exchange: Exchange, arg_types: dict[str, str]) -> None:
        if exchange.durable and exchange.name and not exchange.name.startswith("amq."):
            self._add(
                ops.PutExchange(
                    exchange.vhost,
                    exchange.name,
                    exchange.type_name,
                    int(exchange.auto_delete),
                    int(exchange.internal),
                    encode_table(exchange.arguments),
                    json.dumps(arg_types),
                )
            )

    def exchange_deleted(self, exchange: Exchange) -> None:
        if exchange.durable:
            self._add(ops.DeleteExchange(exchange.vhost, exchange.name))

    def queue_declared(self, queue: Queue, arg_types: dict[str, str]) -> None:
        if queue.durable:
            self._add(
                ops.PutQueue(
                    queue.vhost.name,
                    queue.name,
                    int(queue.auto_delete),
                    encode_table(queue.arguments),
                    json.dumps(arg_types),
                )
            )

    def queue_deleted(self, queue: Queue) -> None:
        if queue.durable:
            self._add(ops.DeleteQueue(queue.vhost.name, queue.name))

    def binding_added(self, binding: Binding) -> None:
        if binding.source.durable and binding.destination.durable:
            self._add(
                ops.PutBinding(
                    binding.source.vhost,
                    binding.source.name,
                    _dest_kind(binding.destination),
                    binding.destination.name,
                    binding.routing_key,
                    binding_args_key(binding.arguments),
                    encode_table(binding.arguments),
                )
            )

    def binding_removed(self, binding: Binding) -> None:
        if binding.source.durable and binding.destination.durable:
            self._add(
                ops.DeleteBinding(
                    binding.source.vhost,
                    binding.source.name,
                    _dest_kind(binding.destination),
                    binding.destination.name,
                    binding.routing_key,
                    binding_args_key(binding.arguments),
                )
            )

    def policy_set(self, policy: Policy) -> None:
        self._add(
            ops.PutPolicy(
                policy.vhost,
                policy.name,
                int(policy.operator),
                policy.pattern,
                policy.apply_to,
                policy.priority,
                json.dumps(policy.definition),
            )
        )

    def policy_cleared(self, policy: Policy) -> None:
        self._add(ops.DeletePolicy(policy.vhost, policy.name, int(policy.operator)))

    # ------------------------------------------------------------------ messages
    def message_enqueued(self, queue: Queue, entry: QueueEntry) -> None:
        message = entry.message
        if not (queue.durable and message.persistent):
            return
        expires = None
        if entry.expires_at is not None:
            expires = time.time() + (entry.expires_at - self.clock())
        self._add_message(
            ops.Enqueue(
                queue.vhost.name,
                queue.name,
                entry.seq,
                message,
                message.body,
                int(entry.delivery_count > 0),
                expires,
            ),
            message.size,
        )
        pager = self.pager
        if pager is not None and queue.ready.bytes > pager.keep_bytes:
            self.writer.page_out_when_written(message)

    def message_removed(self, queue: Queue, entry: QueueEntry) -> None:
        message = entry.message
        if queue.durable and message.persistent:
            self._add(ops.Remove(queue.vhost.name, queue.name, entry.seq, message.id))

    def message_delivered(self, queue: Queue, entry: QueueEntry) -> None:
        if queue.durable and entry.message.persistent:
            self._add(ops.MarkDelivered(queue.vhost.name, queue.name, entry.seq))

    # ------------------------------------------------------------------ half messages
    def half_held(self, queue: Queue, message: Message, txn_id: str, ord_: int) -> None:
        op = ops.HoldHalf(queue.vhost.name, txn_id, ord_, queue.name, message, message.body)
        self._add_message(op, message.size)

    def half_settlements_locked(self, txn_id: str, locks: list[PreparedSettlement]) -> None:
        rows = []
        for lock in locks:
            queue = lock.delivery.queue
            entry = lock.delivery.entry
            if queue.durable and entry.message.persistent:
                rows.append(
                    (
                        queue.vhost.name,
                        txn_id,
                        lock.ord,
                        queue.name,
                        entry.seq,
                        lock.outcome.value,
                        int(lock.delivery_failed),
                        int(lock.undeliverable_here),
                    )
                )
        if rows:
            self._add(ops.LockSettlements(rows))

    def half_txn_saved(self, vhost: str, txn: HalfTxn) -> None:
        self._add(
            ops.SaveHalfTxn(
                vhost,
                txn.id,
                txn.created_at,
                txn.check_queue,
                txn.immunity,
                txn.checks_sent,
                txn.last_check_at,
                int(txn.prepared),
            )
        )

    def half_decided(self, vhost: str, txn: HalfTxn, commit: bool, forget: str | None) -> None:
        """Runs after a commit's enqueues, in the same batch: the rows of the held messages go
        and the message rows the queues now hold stay, all in one SQLite transaction."""
        ids = tuple(sorted({message.id for _, message, _ in txn.entries}))
        self._add(ops.DecideHalf(vhost, txn.id, txn.durable, ids, int(commit), forget))
