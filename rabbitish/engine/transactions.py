"""One transaction model for every front end. A 0-9-1 channel after tx.select and a 1.0 txn-id
are both a `Transaction` in the node's `TransactionRegistry`, with an id, an owner and a state:

    active -> prepared -> committed | rolled back      (active -> committed | rolled back too)

Work is staged in arrival order: publishes with the queues they were routed to when they arrived,
settlements of deliveries (which stay outstanding on their queues, holding their consumers'
credit, until commit), and acquisitions (deliveries made under the transaction, released back in
place on rollback). Commit first checks everything that can fail, then applies publishes in order
and then settlements, with delivery to consumers held until the whole commit is applied, so no
consumer on any queue sees part of a commit and a refused commit changes nothing. Half messages
and their decisions (engine/half.py) are staged publishes with an effect, applied in their place
by the commit under the same hold. A staged prepare (`HalfPrepare`) turns the commit into a
prepare: the work becomes a prepared half transaction instead of being applied.

The registry also bounds how long an active transaction holding work may stay idle
(`--transaction-timeout`): the idle clock starts at the first staged work and restarts at every
further staging or method naming the transaction (`touch`); past the timeout the registry calls
the front end's `on_timeout`, which ends the transaction its protocol's way. One timer per
transaction, armed at its first work and re-armed only when it fires early, for both protocols.
An empty transaction holds nothing and is never timed out; a prepared one is bounded by the
half-transaction rules instead."""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rabbitish.engine.clock import Scheduler, TimerHandle
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.half import Effect, HalfPrepare
from rabbitish.engine.message import Message
from rabbitish.engine.queue import Queue

PARTIAL_COMPLETION = "partial tx completion"  # RabbitMQ's reply when a queue refuses a commit


class TxState(enum.Enum):
    ACTIVE = "active"
    PREPARED = "prepared"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled back"


@dataclass(slots=True)
class StagedPublish:
    message: Message
    queues: list[Queue]
    mandatory: bool
    effect: Effect | None = None  # a half message or a decision (engine/half.py)


@dataclass(slots=True)
class StagedSettlement:
    deliveries: list[Delivery]
    outcome: Outcome
    delivery_failed: bool = True
    undeliverable_here: bool = False


@dataclass
class CommitResult:
    returned: list[Message] = field(default_factory=list)  # mandatory publishes that hit no queue
    settled: list[Delivery] = field(default_factory=list)
    queues_touched: int = 0  # a commit that touched no queue completes at once
    prepared: str | None = None  # the commit was a prepare: the prepared transaction's id
    published: bool = False  # it put a message on a queue, or applied a half message or decision

    @property
    def needs_sync(self) -> bool:
        """Whether the reply must wait for the store: a commit that published, and every
        prepare (a prepare is acknowledged only once it is on disk). A commit of settlements
        alone (acks, rejects, releases) does not wait, as RabbitMQ's does not: its removals are
        journaled in order like every change, so a crash before they reach the disk brings
        such a message back, redelivered, never loses one and never reorders."""
        return self.published or self.prepared is not None


class Transaction:
    __slots__ = (
        "acquisitions",
        "active_at",
        "created_at",
        "id",
        "idle_timer",
        "on_timeout",
        "owner",
        "prepare_as",
        "publishes",
        "registry",
        "settlements",
        "state",
        "watch",
    )

    def __init__(
        self, txn_id: str, owner: Any, created_at: float, registry: TransactionRegistry | None
    ) -> None:
        self.id = txn_id
        self.owner = owner  # the front end's session object (channel, 1.0 session ...)
        self.created_at = created_at
        self.registry = registry
        self.state = TxState.ACTIVE
        self.publishes: list[StagedPublish] = []
        self.settlements: list[StagedSettlement] = []
        self.acquisitions: list[Delivery] = []
        # The idle timeout: the registry that watches this transaction (None: not watched), the
        # front end's callback, the monotonic time of the last activity and the pending check.
        self.watch: TransactionRegistry | None = None
        self.on_timeout: Callable[[Transaction], None] | None = None
        self.active_at = 0.0
        self.idle_timer: TimerHandle | None = None
        self.prepare_as: HalfPrepare | None = None  # a staged prepare: commit prepares instead

    # ------------------------------------------------------------------ counts
    @property
    def staged_deliveries(self) -> int:
        return sum(len(s.deliveries) for s in self.settlements)

    def counts(self) -> dict[str, int]:
        return {
            "publishes": len(self.publishes),
            "settlements": self.staged_deliveries,
            "acquisitions": len(self.acquisitions),
        }

    # ------------------------------------------------------------------ staging
    def _require(self, *states: TxState) -> None:
        if self.state not in states:
            raise precondition_failed(f"transaction {self.id} is {self.state.value}")

    def stage_publish(
        self,
        message: Message,
        queues: list[Queue],
        mandatory: bool,
        effect: Effect | None = None,
    ) -> None:
        if self.state is not TxState.ACTIVE:
            self._require(TxState.ACTIVE)
        if effect is not None and isinstance(effect, HalfPrepare):
            if self.prepare_as is not None and self.prepare_as.txn_id != effect.txn_id:
                raise precondition_failed(
                    f"transaction {self.id} already prepares '{self.prepare_as.txn_id}'"
                )
            self.prepare_as = self.prepare_as or effect
            return
        self.publishes.append(StagedPublish(message, queues, mandatory, effect))
        if self.watch is not None:
            self.watch.touch(self)

    def stage_settle(
        self,
        deliveries: list[Delivery],
        outcome: Outcome,
        *,
        delivery_failed: bool = True,
        undeliverable_here: bool = False,
    ) -> None:
        self._require(TxState.ACTIVE)
        self.settlements.append(
            StagedSettlement(deliveries, outcome, delivery_failed, undeliverable_here)
        )
        if self.watch is not None:
            self.watch.touch(self)

    def stage_acquire(self, delivery: Delivery) -> None:
        """A delivery made under this transaction: released back in place on rollback."""
        self._require(TxState.ACTIVE)
        self.acquisitions.append(delivery)
        if self.watch is not None:
            self.watch.touch(self)

    def touch(self) -> None:
        """A method named this transaction (a 1.0 flow acquiring in it, say): it is in use, so
        its idle time starts again, as with staged work."""
        if self.watch is not None:
            self.watch.touch(self)

    # ------------------------------------------------------------------ outcome
    def check(self) -> None:
        """Everything that can refuse a commit, checked before anything is applied: a queue with
        x-overflow reject-publish that would refuse a staged publish refuses the commit."""
        room: dict[int, list[int]] = {}  # queue -> [messages, bytes] as the commit would leave it
        for staged in self.publishes:
            if not staged.queues or staged.effect is not None:
                continue  # half messages are held, not enqueued
            size = staged.message.size
            for queue in staged.queues:
                if queue.deleted or not queue.args.rejects_overflow:
                    continue
                held = room.get(id(queue))
                if held is None:
                    room[id(queue)] = held = [queue.ready.count, queue.ready.bytes]
                if queue.would_overflow(held[0], held[1], size):
                    raise precondition_failed(PARTIAL_COMPLETION)
                held[0] += 1
                held[1] += size

    def prepare(self) -> None:
        """First phase of two: refuse now what commit would refuse."""
        self._require(TxState.ACTIVE)
        self.check()
        self.state = TxState.PREPARED
        if self.watch is not None:  # prepared work is bounded by the half-transaction rules
            self.watch.unwatch(self)

    def commit(self) -> CommitResult:
        """Apply everything, or nothing when `check` refuses (the transaction then stays as it
        was, for the front end to roll back). Returns what the front end must report."""
        self._require(TxState.ACTIVE, TxState.PREPARED)
        marker = self.prepare_as
        if marker is not None:
            prepared = marker.prepare(self)
            return CommitResult(
                prepared.returned, prepared.locked, prepared.queues_touched, marker.txn_id
            )
        self.check()
        result = CommitResult()
        touched: dict[int, Queue] = {}  # queues held (no deliveries) until all is applied
        try:
            for staged in self.publishes:
                if staged.effect is not None:
                    result.published = True
                    routed = staged.effect.apply(staged.message, staged.queues, touched)
                    if not routed and staged.mandatory:
                        result.returned.append(staged.message)
                    continue
                if not staged.queues and staged.mandatory:
                    result.returned.append(staged.message)
                for queue in staged.queues:
                    if queue.deleted:
                        continue  # deleted since the publish: not an error (RabbitMQ agrees)
                    if id(queue) not in touched:
                        touched[id(queue)] = queue
                        queue.suspend_dispatch()
                    queue.enqueue(staged.message)
                    result.published = True
            for settlement in self.settlements:
                for delivery in settlement.deliveries:
                    queue = delivery.queue
                    if id(queue) not in touched:
                        touched[id(queue)] = queue
                        queue.suspend_dispatch()
                settle(
                    settlement.deliveries,
                    settlement.outcome,
                    delivery_failed=settlement.delivery_failed,
                    undeliverable_here=settlement.undeliverable_here,
                )
                result.settled.extend(settlement.deliveries)
        finally:
            for queue in touched.values():
                queue.resume_dispatch()
        result.queues_touched = len(touched)
        self._end(TxState.COMMITTED)
        return result

    def rollback(self) -> list[Delivery]:
        """Discard staged publishes; deliveries acquired under the transaction go back in place;
        returns the deliveries of staged settlements, still outstanding, for the front end to
        put back into its unacked set (they are not requeued)."""
        self._require(TxState.ACTIVE, TxState.PREPARED)
        handed_back = [d for s in self.settlements for d in s.deliveries if not d.settled]
        acquired = [d for d in self.acquisitions if not d.settled]
        if acquired:
            settle(acquired, Outcome.RELEASED)
        self._end(TxState.ROLLED_BACK)
        return [d for d in handed_back if not d.settled]

    def hand_over(self) -> tuple[list[StagedPublish], list[StagedSettlement], list[Delivery]]:
        """A prepare takes the staged work (engine/half.py): refused now (nothing changes) when
        a commit would be refused; the transaction then ends, prepared and empty."""
        self._require(TxState.ACTIVE)
        self.check()
        work = (self.publishes, self.settlements, self.acquisitions)
        self._end(TxState.PREPARED)
        return work

    def _end(self, state: TxState) -> None:
        self.state = state
        self.publishes, self.settlements, self.acquisitions = [], [], []
        self.prepare_as = None
        if self.registry is not None:
            self.registry.ended(self)

    def __repr__(self) -> str:
        return f"<Transaction {self.id} {self.state.value}>"


class TransactionRegistry:
    """Every open (active or prepared) transaction of the node, by id: what the CLI and the
    management API list and what later protocols name."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        scheduler: Scheduler | None = None,
        idle_timeout: float = 0.0,
    ) -> None:
        self._clock = clock
        self._open: dict[str, Transaction] = {}
        self._ids = itertools.count(1)
        self.committed = 0  # transactions ended each way so far (metrics)
        self.rolled_back = 0
        self.prepared = 0  # ended by a prepare: handed over to a half transaction
        self._scheduler = scheduler
        # Seconds an active transaction holding work may stay idle (0: no limit); needs a
        # scheduler for its timers.
        self.idle_timeout = idle_timeout

    def begin(
        self,
        owner: Any,
        txn_id: str | None = None,
        on_timeout: Callable[[Transaction], None] | None = None,
    ) -> Transaction:
        """Open a transaction. `on_timeout` is how the front end ends it when it stays idle
        past the idle timeout (without it, or without a timeout, it is never timed out)."""
        if txn_id is None:
            txn_id = f"tx-{next(self._ids)}"
            while txn_id in self._open:
                txn_id = f"tx-{next(self._ids)}"
        elif txn_id in self._open:
            raise precondition_failed(f"transaction {txn_id} already exists")
        tx = Transaction(txn_id, owner, self._clock(), self)
        if on_timeout is not None and self.idle_timeout > 0 and self._scheduler is not None:
            tx.watch, tx.on_timeout = self, on_timeout
        self._open[txn_id] = tx
        return tx

    # ------------------------------------------------------------------ idle timeout
    def touch(self, tx: Transaction) -> None:
        """Activity on a watched transaction: its idle time starts again; the first activity
        arms its one timer."""
        scheduler = self._scheduler
        assert scheduler is not None  # only watched with a scheduler
        tx.active_at = scheduler.now()
        if tx.idle_timer is None:
            tx.idle_timer = scheduler.call_later(self.idle_timeout, lambda: self._idle_check(tx))

    def unwatch(self, tx: Transaction) -> None:
        """Prepared or ended: no longer timed out."""
        tx.watch = None
        if tx.idle_timer is not None:
            tx.idle_timer.cancel()
            tx.idle_timer = None

    def _idle_check(self, tx: Transaction) -> None:
        tx.idle_timer = None
        if tx.watch is not self or tx.state is not TxState.ACTIVE:
            return
        scheduler = self._scheduler
        assert scheduler is not None
        idle = scheduler.now() - tx.active_at
        if idle < self.idle_timeout:  # used since the timer was armed: wait for the rest
            tx.idle_timer = scheduler.call_later(
                self.idle_timeout - idle, lambda: self._idle_check(tx)
            )
            return
        callback = tx.on_timeout
        self.unwatch(tx)
        assert callback is not None  # watched transactions have one
        callback(tx)  # the front end ends it (rolls it back)

    def get(self, txn_id: str) -> Transaction | None:
        return self._open.get(txn_id)

    def ended(self, tx: Transaction) -> None:
        if tx.watch is not None:
            self.unwatch(tx)
        if self._open.get(tx.id) is tx:
            del self._open[tx.id]
        if tx.state is TxState.COMMITTED:
            self.committed += 1
        elif tx.state is TxState.PREPARED:
            self.prepared += 1
        else:
            self.rolled_back += 1

    def __iter__(self) -> Iterator[Transaction]:
        return iter(list(self._open.values()))

    def __len__(self) -> int:
        return len(self._open)
