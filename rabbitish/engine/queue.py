"""A queue: ordered ready messages, round-robin delivery to consumers with credit, requeue to the
original position, TTL at the head, length limits, dead-lettering and expiry of unused queues.
Browsers (AMQP 1.0 distribution-mode copy) see each ready message once, in publication order,
through a cursor of their own, and take nothing."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from rabbitish.engine.clock import Scheduler, TimerHandle
from rabbitish.engine.consumer import Consumer, Selection
from rabbitish.engine.delivery import BrowsedCopy, Delivery
from rabbitish.engine.errors import access_refused, resource_text
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.policies import Policy, effective_definition
from rabbitish.engine.queue_args import QueueArguments, effective_arguments
from rabbitish.engine.ready import PriorityReady, ReadyList

if TYPE_CHECKING:
    from rabbitish.engine.journal import Journal
    from rabbitish.engine.resources import BodyStore
    from rabbitish.engine.tracing import Firehose, TraceSource


SPILL_AFTER = 64  # ready messages kept in memory per queue under memory pressure
# A consumer's rank sorts by priority (higher first), then by arrival: priority is worth more
# than any arrival number.
PRIORITY_STEP = 1 << 64
FIRST_RANK = -(1 << 128)  # below every rank: the cursor at the start
_RANK = attrgetter("rank")
# Arrival numbers for ranks, increasing within every queue. One counter for all queues: a
# queue keeps no more instance attributes than it had (29), as past 29 CPython 3.11 gives up
# its fast attribute access and every message costs more (about 6% of an engine cycle).
_ARRIVALS = itertools.count()
STAT_NAMES = (
    "published",
    "delivered",
    "acked",
    "deliver",
    "deliver_no_ack",
    "get",
    "get_no_ack",
    "get_empty",
    "redeliver",
)


class QueueHost(Protocol):
    """What a queue needs of the vhost holding it, and nothing more: where durable changes go,
    where bodies go under memory pressure, and what becomes of messages and of the queue when
    they leave (settled, dead-lettered, deleted). `VirtualHost` is one."""

    @property
    def name(self) -> str:
        """The vhost's name, for texts and the store's keys."""
        ...

    # The journal and spill store are read at each use, never kept: the node swaps them on a
    # running vhost (after recovery, when memory limits start).
    @property
    def journal(self) -> Journal: ...

    @property
    def spill(self) -> BodyStore | None: ...

    @property
    def firehose(self) -> Firehose | None:
        """The vhost's tracer while tracing is on (engine/tracing.py): deliveries are traced."""
        ...

    def settled(self, queue: Queue, entry: QueueEntry) -> None:
        """`entry` left `queue` for good (acked, dropped, purged)."""
        ...

    def dead_letter(self, queue: Queue, entries: list[QueueEntry], reason: str) -> None:
        """`entries` left `queue` dead (rejected, expired, over its length limit)."""
        ...

    def delete_queue_object(self, queue: Queue) -> None:
        """The queue removes itself (auto-delete after its last consumer, x-expires)."""
        ...


class Drained(NamedTuple):
    """What `Queue.drain` did: deliveries made, and whether nothing ready was left."""

    delivered: int
    dry: bool


class Queue:
    def __init__(
        self,
        vhost: QueueHost,
        name: str,
        *,
        durable: bool = False,
        exclusive_owner: object | None = None,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
        scheduler: Scheduler,
    ) -> None:
        self.vhost = vhost  # seen only through QueueHost: a queue never reaches further
        self.name = name
        self.durable = durable
        self.exclusive_owner = exclusive_owner
        self.auto_delete = auto_delete
        self.arguments = dict(arguments or {})
        self.args = QueueArguments.parse(self.arguments)
        self.policy: Policy | None = None
        self.operator_policy: Policy | None = None
        self.scheduler = scheduler
        self.ready: ReadyList | PriorityReady = (
            PriorityReady(self.args.max_priority)
            if self.args.max_priority is not None
            else ReadyList()
        )
        # Every consumer, in rank order: by priority (higher first), then by arrival (within
        # a priority, the one last served moves to the end when priorities differ).
        self.consumers: list[Consumer] = []
        # The consumers not found without credit, in the same order: dispatch walks only
        # these. A consumer found without credit is blocked (left out) until the front end
        # says its credit came back (`credit_returned`), as RabbitMQ's rabbit_queue_consumers
        # keeps active and blocked consumers apart.
        self._active: list[Consumer] = []
        # Browsers -> the sequence number of the first message each has not seen yet.
        self.browsers: dict[Consumer, int] = {}
        # Round-robin cursor: the next message goes to the first active consumer ranked at or
        # after `_cursor` (circling); `_rr` is that consumer's index in `_active` (the count
        # of active consumers ranked before the cursor), kept as consumers come and go.
        self._cursor = FIRST_RANK
        self._rr = 0
        self._prioritised = False  # consumers with different x-priority values
        self.outstanding: set[Delivery] = set()  # delivered, not settled yet
        self.deleted = False
        self._next_seq = 0
        self._ttl_timer: TimerHandle | None = None
        self._ttl_due: float | None = None
        self._expiry_timer: TimerHandle | None = None
        self._dispatching = False
        self._held = False  # a commit is applying its effects: no deliveries until it is done
        self._arriving: QueueEntry | None = None
        # Counters for statistics (management API, metrics): "delivered" counts every delivery
        # and get; the others split them as RabbitMQ's message_stats do.
        self.stats = dict.fromkeys(STAT_NAMES, 0)
        # Half messages held for this queue (engine/half.py): invisible, counted apart.
        self.half = 0
        # Deliveries settled by a prepared transaction (engine/half.py), awaiting its decision:
        # neither outstanding (not redelivered, not unacked) nor ready.
        self.locked: set[Delivery] = set()
        self.touch()

    # ------------------------------------------------------------------ counts
    @property
    def message_count(self) -> int:
        return self.ready.count

    @property
    def unacked(self) -> int:
        return len(self.outstanding)

    @property
    def prepared(self) -> int:
        """Messages locked by prepared transactions (management's `messages_prepared`)."""
        return len(self.locked)

    @property
    def consumer_count(self) -> int:
        return len(self.consumers)

    @property
    def exclusive(self) -> bool:
        return self.exclusive_owner is not None

    # ------------------------------------------------------------------ policies
    @property
    def policy_definition(self) -> dict[str, Any]:
        """The merged definition of the policy and operator policy applied (may be empty)."""
        return effective_definition(self.policy, self.operator_policy)

    def apply_policies(self, policy: Policy | None, operator_policy: Policy | None) -> None:
        """Act on the settings the queue's arguments and these policies give together, as
        RabbitMQ does when a policy changes: a new expiry restarts the countdown, new length
        limits drop from the head at once; messages keep the TTL they were published under."""
        self.policy, self.operator_policy = policy, operator_policy
        args = QueueArguments.parse(effective_arguments(self.arguments, self.policy_definition))
        if args == self.args:
            return
        old, self.args = self.args, args
        if args.expires != old.expires:
            self._cancel_expiry()
            self.touch()
        if not args.rejects_overflow and (
            args.max_length is not None or args.max_length_bytes is not None
        ):
            self._drop_head_over_limit()

    # ------------------------------------------------------------------ publish side
    def enqueue(self, message: Message) -> bool:
        """Add a published message. False when x-overflow reject-publish refuses it, or when
        the store, failing to write, holds as much unwritten work as it may (`refusing`)."""
        if self.durable and message.persistent and self.vhost.journal.refusing:
            return False
        args = self.args
        if args.rejects_overflow and self.would_overflow(
            self.ready.count, self.ready.bytes, message.size
        ):
            if args.overflow == "reject-publish-dlx":
                self.vhost.dead_letter(self, [self._new_entry(message)], "maxlen")
            return False
        entry = self._new_entry(message)
        self.ready.append(entry)
        if not self.durable:
            message.pinned = True  # only durable queues' messages can be read back from disk
        self.vhost.journal.message_enqueued(self, entry)
        spill = self.vhost.spill
        if spill is not None and spill.paging and self.ready.count > SPILL_AFTER:
            # Memory pressure: the body waits on disk (after the journal took its copy).
            # Persistent messages on durable queues too: the journal's pager drops theirs only
            # past its per-queue limits.
            spill.page_out(message)
        self.stats["published"] += 1
        # A consumer ready to take the message gets it whatever its TTL (even 0) and whatever
        # the length limit (even 0), as in RabbitMQ; only messages left waiting can expire or
        # be dropped.
        self._arriving = entry
        try:
            if self.browsers:  # they see it before a consumer may take it
                self._browse_all()
            if self._active:  # else every consumer lacks credit: the message waits
                self.dispatch_active()
        finally:
            self._arriving = None
        if args.max_length is not None or args.max_length_bytes is not None:
            self._drop_head_over_limit()
        if entry.expires_at is not None:
            self._drop_expired()
        return True

    def _new_entry(self, message: Message) -> QueueEntry:
        seq = self._next_seq
        self._next_seq += 1
        ttl = self.args.message_ttl
        if message.expiration_ms is not None:
            ttl = message.expiration_ms if ttl is None else min(ttl, message.expiration_ms)
        expires_at = None if ttl is None else self.scheduler.now() + ttl / 1000.0
        return QueueEntry(self, seq, message, expires_at)

    def would_overflow(self, count: int, total_bytes: int, size: int) -> bool:
        """Whether a message of `size` bytes would exceed the length limits of a queue holding
        `count` ready messages of `total_bytes` (transactions check a commit with this)."""
        args = self.args
        if args.max_length is not None and count >= args.max_length:
            return True
        return args.max_length_bytes is not None and total_bytes + size > args.max_length_bytes

    def _drop_head_over_limit(self) -> None:
        args = self.args
        dropped: list[QueueEntry] = []
        while self.ready.count and (
            (args.max_length is not None and self.ready.count > args.max_length)
            or (args.max_length_bytes is not None and self.ready.bytes > args.max_length_bytes)
        ):
            dropped.append(self.ready.pop())
        if dropped:
            self.vhost.dead_letter(self, dropped, "maxlen")

    # ------------------------------------------------------------------ delivery side
    def check_can_consume(self, consumer: Consumer) -> None:
        """403 when an exclusive consumer would share the queue."""
        if (consumer.exclusive and self.consumers) or any(c.exclusive for c in self.consumers):
            raise access_refused(
                f"{resource_text('queue', self.name, self.vhost.name)} in exclusive use"
            )

    def add_consumer(self, consumer: Consumer) -> None:
        self.check_can_consume(consumer)
        # Kept ordered by priority, highest first; a newcomer joins the end of its group.
        consumer.rank = next(_ARRIVALS) - consumer.priority * PRIORITY_STEP
        consumers = self.consumers
        consumers.insert(bisect_left(consumers, consumer.rank, key=_RANK), consumer)
        self._prioritised = consumers[0].priority != consumers[-1].priority  # ranked by priority
        consumer.blocked = True  # joins the active ones as one whose credit came back
        self.credit_returned(consumer)
        self._cancel_expiry()
        self.dispatch_active()

    def remove_consumer(self, consumer: Consumer) -> None:
        consumers = self.consumers
        index = bisect_left(consumers, consumer.rank, key=_RANK)
        if index == len(consumers) or consumers[index] is not consumer:
            return
        del consumers[index]
        self._prioritised = bool(consumers) and consumers[0].priority != consumers[-1].priority
        if consumer.blocked:
            consumer.blocked = False  # a settlement after it left unblocks nothing
        else:
            self._deactivate(bisect_left(self._active, consumer.rank, key=_RANK))
        if not consumers:
            if self.auto_delete:  # it had one: the one just removed
                self.vhost.delete_queue_object(self)
                return
            self.touch()

    def credit_returned(self, consumer: Consumer) -> None:
        """`consumer` may take deliveries again (a settlement, more prefetch or link credit,
        flow, drained output): if the queue had found it without credit, it rejoins the
        round-robin at its place. Nothing is delivered until `dispatch_active`, which a front
        end calls once it named every consumer whose credit came back, so they compete in the
        queue's order."""
        if not consumer.blocked:
            return
        # Among the active ones at its rank; the cursor keeps its place.
        active = self._active
        rank = consumer.rank
        if not active or active[-1].rank < rank:
            active.append(consumer)
        else:
            active.insert(bisect_left(active, rank, key=_RANK), consumer)
        if rank < self._cursor:
            self._rr += 1
        consumer.blocked = False

    def _deactivate(self, index: int) -> None:
        del self._active[index]
        if index < self._rr:
            self._rr -= 1

    def dispatch(self) -> None:
        """Deliver ready messages to consumers that have credit, round-robin, asking every
        consumer again, those found without credit before included: for a change that may
        concern any of them. A front end that knows whose credit came back names them
        (`credit_returned`) and calls `dispatch_active`, which asks no consumer known full."""
        active = self._active
        if len(active) != len(self.consumers):
            for consumer in self.consumers:
                consumer.blocked = False
            active[:] = self.consumers
            self._rr = bisect_left(active, self._cursor, key=_RANK)
        self.dispatch_active()

    def dispatch_active(self) -> None:
        """Deliver what credit allows, round-robin: the next consumer after the one served
        last (in rank order, circling) that has credit gets the next message. A consumer
        found without credit is blocked: no arriving message asks it again until
        `credit_returned` names it, so a message costs a look at the consumers that can take
        it, however many are full. With consumer priorities, `_dispatch_by_priority`."""
        active = self._active
        if self._dispatching or self._held or not active or not self.ready.count:
            return
        self._dispatching = True
        try:
            if self._prioritised:
                self._dispatch_by_priority()
                return
            ready = self.ready
            while ready.count and active:
                # Each active consumer once, from the cursor on, round the circle.
                count = len(active)
                pos = self._rr
                if pos >= count:
                    pos = 0
                chosen = entry = None
                for _ in range(len(active)):  # `count` shrinks as full ones leave
                    candidate = active[pos]
                    if candidate.credit > 0:
                        selection = candidate.selection
                        if selection is None:
                            entry = self._take()
                            if entry is None:
                                return
                            chosen = candidate
                            break
                        entry = self._take_selected(selection)
                        if entry is not None:
                            chosen = candidate
                            break
                        pos += 1  # nothing it accepts: the next consumer may take the head
                    else:
                        del active[pos]
                        count -= 1
                        candidate.blocked = True
                        if pos < self._rr:
                            self._rr -= 1
                    if pos >= count:
                        pos = 0
                if chosen is None or entry is None:
                    return
                # Next time, the consumer after it; after the last of all, the first.
                if chosen is self.consumers[-1]:
                    self._cursor = FIRST_RANK
                    self._rr = 0
                else:
                    self._cursor = chosen.rank + 1
                    self._rr = pos + 1
                self._hand_over(chosen, entry)
        finally:
            self._dispatching = False

    def _dispatch_by_priority(self) -> None:
        """The highest-priority consumer with credit gets the message; within a priority, the
        one served moves to the back of its group (round-robin), as RabbitMQ does."""
        active = self._active
        while self.ready.count and active:
            pos = 0
            chosen = entry = None
            while pos < len(active):
                candidate = active[pos]
                if candidate.credit > 0:
                    selection = candidate.selection
                    if selection is None:
                        entry = self._take()
                        if entry is None:
                            return
                        chosen = candidate
                        break
                    entry = self._take_selected(selection)
                    if entry is not None:
                        chosen = candidate
                        break
                    pos += 1
                else:
                    self._deactivate(pos)
                    candidate.blocked = True
            if chosen is None or entry is None:
                return
            self._to_back_of_its_priority(chosen, pos)
            self._hand_over(chosen, entry)

    def _to_back_of_its_priority(self, consumer: Consumer, active_index: int) -> None:
        consumers = self.consumers
        del consumers[bisect_left(consumers, consumer.rank, key=_RANK)]
        self._deactivate(active_index)
        consumer.rank = next(_ARRIVALS) - consumer.priority * PRIORITY_STEP
        consumers.insert(bisect_left(consumers, consumer.rank, key=_RANK), consumer)
        consumer.blocked = True
        self.credit_returned(consumer)

    # ------------------------------------------------------------------ browsing
    def add_browser(self, browser: Consumer) -> None:
        """A consumer that browses: copies of the ready messages, from the oldest on, each
        once, and of new ones as they arrive, while its credit lasts; nothing is acquired."""
        self.browsers[browser] = 0
        self._cancel_expiry()
        self.browse(browser, browser.credit)

    def remove_browser(self, browser: Consumer) -> None:
        if self.browsers.pop(browser, None) is not None and not self.consumers:
            self.touch()

    def browse(self, browser: Consumer, limit: int) -> Drained:
        """Hand `browser` copies of up to `limit` messages it has not seen (within its credit)
        and say whether none is left for it. Expired messages are skipped, not dropped; a
        browser with a selection (a JMS queue browser's selector) sees only what it accepts,
        each message judged once; while a commit holds the queue, nothing is handed out and the
        browser is not dry."""
        cursor = self.browsers.get(browser)
        if cursor is None or self._held:
            return Drained(0, False)
        limit = min(limit, browser.credit)
        now = self.scheduler.now()
        arriving = self._arriving
        selection = browser.selection
        passed = cursor  # past the messages the selection turned down
        wanted: list[QueueEntry] = []
        more = False
        for entry in self.ready.since(cursor):
            if entry.expires_at is not None and entry.expires_at <= now and entry is not arriving:
                continue  # its TTL drops it from the head in time; a browser never sees it
            if selection is not None and not selection.accepts(entry):
                passed = entry.seq + 1
                continue
            if len(wanted) >= limit:
                more = True
                break
            wanted.append(entry)
        delivered = 0
        for entry in wanted:
            self.browsers[browser] = entry.seq + 1
            copy = BrowsedCopy(self, entry, browser)
            copy.settled = True
            browser.delivered(copy)
            delivered += 1
            if browser not in self.browsers:  # it went away while taking the copy
                break
        if delivered == len(wanted) and browser in self.browsers:
            self.browsers[browser] = max(self.browsers[browser], passed)
        dry = not more
        return Drained(delivered, dry)

    def _browse_all(self) -> None:
        for browser in list(self.browsers):
            self.browse(browser, browser.credit)

    def suspend_dispatch(self) -> None:
        """Hold deliveries while a transaction commit applies its effects across queues."""
        self._held = True

    def resume_dispatch(self) -> None:
        self._held = False
        if self.browsers:
            self._browse_all()
        self.dispatch_active()

    def drain(self, consumer: Consumer, limit: int) -> Drained:
        """Deliver up to `limit` ready messages to `consumer` now, as its credit allows, and say
        whether the queue ran dry (AMQP 1.0 drain). A queue held by a commit is not dry: its
        messages are about to become visible."""
        if self._held or self._dispatching:
            return Drained(0, False)
        delivered = 0
        selection = consumer.selection
        none_left = False  # nothing left this consumer would take
        self._dispatching = True
        try:
            while delivered < limit and consumer.credit > 0:
                entry = self._take() if selection is None else self._take_selected(selection)
                if entry is None:
                    none_left = True
                    break
                self._hand_over(consumer, entry)
                delivered += 1
        finally:
            self._dispatching = False
        return Drained(delivered, none_left or not self.ready.count)

    def _hand_over(self, consumer: Consumer, entry: QueueEntry) -> None:
        entry.delivery_count += 1
        stats = self.stats
        stats["delivered"] += 1
        stats["deliver_no_ack" if consumer.settled_on_delivery else "deliver"] += 1
        if entry.delivery_count > 1:
            stats["redeliver"] += 1
        delivery = Delivery(self, entry, consumer)
        if consumer.settled_on_delivery:
            delivery.settled = True
            consumer.delivered(delivery)
            self.vhost.settled(self, entry)
        else:
            if entry.delivery_count == 1:
                self.vhost.journal.message_delivered(self, entry)
            self.outstanding.add(delivery)
            consumer.unsettled += 1
            consumer.delivered(delivery)
        firehose = self.vhost.firehose
        if firehose is not None:  # traced once on the wire, as RabbitMQ's channel does
            firehose.delivered(consumer.session, self.name, entry.message, entry.delivery_count > 1)

    def _take(self) -> QueueEntry | None:
        """Pop the head, dead-lettering expired messages on the way."""
        ready = self.ready
        now = None
        expired: list[QueueEntry] = []
        taken = None
        while ready.count:
            head = ready.pop()
            if head.expires_at is not None and head is not self._arriving:
                now = now if now is not None else self.scheduler.now()
                if head.expires_at <= now:
                    expired.append(head)
                    continue
            taken = head
            break
        if expired:
            self.vhost.dead_letter(self, expired, "expired")
        if taken is not None and ready.count:
            new_head = ready.peek()
            if new_head is not None and new_head.expires_at is not None:
                self._arm_ttl()  # the new head carries an expiry nobody may be timing yet
        return taken

    def _take_selected(self, selection: Selection) -> QueueEntry | None:
        """The first ready message `selection` accepts, wherever it is; expired ones are not
        delivered (they leave at the head, as any expired message does)."""
        arriving = self._arriving
        now = self.scheduler.now()
        accepts = selection.accepts

        def deliverable(entry: QueueEntry) -> bool:
            expires_at = entry.expires_at
            if expires_at is not None and expires_at <= now and entry is not arriving:
                return False
            return accepts(entry)

        taken = self.ready.take_matching(deliverable, selection.seen)
        if taken is not None and self.ready.count:
            self._arm_ttl()
        return taken

    def get(self, settled: bool, source: TraceSource | None = None) -> Delivery | None:
        """basic.get: a delivery of the head message, or None when empty. A `settled` one (0-9-1
        no-ack) has left the queue already. While the vhost is traced the delivery is traced,
        naming `source` (the taker's session) as who received it."""
        self.touch()
        entry = self._take()
        stats = self.stats
        if entry is None:
            stats["get_empty"] += 1
            return None
        entry.delivery_count += 1
        stats["delivered"] += 1
        stats["get_no_ack" if settled else "get"] += 1
        if entry.delivery_count > 1:
            stats["redeliver"] += 1
        delivery = Delivery(self, entry, None)
        if settled:
            delivery.settled = True
            self.vhost.settled(self, entry)
        else:
            if entry.delivery_count == 1:
                self.vhost.journal.message_delivered(self, entry)
            self.outstanding.add(delivery)
        firehose = self.vhost.firehose
        if firehose is not None:
            firehose.delivered(source, self.name, entry.message, entry.delivery_count > 1)
        return delivery

    # ------------------------------------------------------------------ settlement
    # Front ends settle through engine.delivery.settle, which calls these per queue.
    def forget(self, delivery: Delivery) -> bool:
        """Stop tracking a delivery being settled; False when the queue no longer holds it."""
        if self.deleted:
            return False
        try:
            self.outstanding.remove(delivery)
        except KeyError:
            return False
        return True

    def lock(self, delivery: Delivery) -> bool:
        """A prepared transaction holds `delivery` until its decision; False when the delivery
        is not outstanding here (settled, or the queue is gone)."""
        if self.deleted or delivery not in self.outstanding:
            return False
        self.outstanding.remove(delivery)
        self.locked.add(delivery)
        return True

    def unlock(self, delivery: Delivery) -> bool:
        """The decision came: `delivery` is outstanding again, for `settle` to apply it."""
        if self.deleted or delivery not in self.locked:
            return False
        self.locked.remove(delivery)
        self.outstanding.add(delivery)
        return True

    def ack(self, entries: Iterable[QueueEntry]) -> None:
        stats = self.stats
        for entry in entries:
            stats["acked"] += 1
            self.vhost.settled(self, entry)

    def requeue(self, entries: Iterable[QueueEntry]) -> None:
        """Put delivered messages back at their original position. A quorum queue counts the
        return: past its delivery limit the message is dead-lettered instead."""
        if self.args.delivery_limit is not None:
            entries = self._within_delivery_limit(entries, self.args.delivery_limit)
        any_back = False
        for entry in entries:
            self.ready.requeue(entry)
            any_back = True
        if any_back:
            if self.browsers:  # one it had not reached yet is back in its view
                self._browse_all()
            self.dispatch_active()
            if not self.args.rejects_overflow and (
                self.args.max_length is not None or self.args.max_length_bytes is not None
            ):
                self._drop_head_over_limit()  # requeued messages count against the limit too
            self._arm_ttl()

    def _within_delivery_limit(self, entries: Iterable[QueueEntry], limit: int) -> list[QueueEntry]:
        """The entries that may come back; the others (returned more than `limit` times: each
        delivery ends in at most one return, so the delivery count is the return count, and
        a released delivery was uncounted before it came here) go to the dead-letter exchange
        with reason delivery_limit, or are dropped without one (RabbitMQ's rabbit_fifo)."""
        back: list[QueueEntry] = []
        over: list[QueueEntry] = []
        for entry in entries:
            (over if entry.delivery_count > limit else back).append(entry)
        if over:
            self.vhost.dead_letter(self, over, "delivery_limit")
        return back

    def discard(self, entries: list[QueueEntry], reason: str = "rejected") -> None:
        """Reject without requeue: dead-letter if configured, else drop."""
        self.vhost.dead_letter(self, entries, reason)

    def restore(
        self, seq: int, message: Message, delivered: bool, expires_at: float | None
    ) -> None:
        """Recovery: put a stored message back at its place (rows arrive in seq order)."""
        entry = QueueEntry(self, seq, message, expires_at)
        entry.delivery_count = 1 if delivered else 0
        self.ready.append(entry)
        self._next_seq = max(self._next_seq, seq + 1)

    def restore_locked(self, seq: int, message: Message, expires_at: float | None) -> Delivery:
        """Recovery: a stored message a prepared transaction had settled, locked again."""
        entry = QueueEntry(self, seq, message, expires_at)
        entry.delivery_count = 1
        self._next_seq = max(self._next_seq, seq + 1)
        delivery = Delivery(self, entry, None)
        self.locked.add(delivery)
        return delivery

    def restored(self) -> None:
        """Recovery is complete: start the TTL clock on what came back."""
        self._arm_ttl()

    def purge(self) -> int:
        entries = self.ready.clear()
        for entry in entries:
            self.vhost.settled(self, entry)
        return len(entries)

    # ------------------------------------------------------------------ TTL and expiry
    def _arm_ttl(self) -> None:
        head = self.ready.peek()
        if head is None or head.expires_at is None:
            return
        due = head.expires_at
        if self._ttl_due is not None and self._ttl_due <= due:
            return
        if self._ttl_timer is not None:
            self._ttl_timer.cancel()
        self._ttl_due = due
        delay = max(0.0, due - self.scheduler.now())
        self._ttl_timer = self.scheduler.call_later(delay, self._on_ttl_timer)

    def _on_ttl_timer(self) -> None:
        self._ttl_timer = None
        self._ttl_due = None
        if not self.deleted:
            self._drop_expired()

    def _drop_expired(self) -> None:
        """Dead-letter the expired messages at the head, then wait for the next head's TTL."""
        now = self.scheduler.now()
        expired: list[QueueEntry] = []
        while self.ready.count:
            head = self.ready.peek()
            assert head is not None
            if head.expires_at is None or head.expires_at > now:
                break
            expired.append(self.ready.pop())
        if expired:
            self.vhost.dead_letter(self, expired, "expired")
        self._arm_ttl()

    def touch(self) -> None:
        """Reset the x-expires countdown (declare, get, consumer cancel)."""
        if self.args.expires is None or self.consumers or self.browsers or self.deleted:
            return
        self._cancel_expiry()
        self._expiry_timer = self.scheduler.call_later(self.args.expires / 1000.0, self._on_expire)

    def _cancel_expiry(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    def _on_expire(self) -> None:
        self._expiry_timer = None
        if not self.deleted and not self.consumers and not self.browsers:
            self.vhost.delete_queue_object(self)

    # ------------------------------------------------------------------ deletion
    def mark_deleted(self) -> list[Consumer]:
        """Called by the vhost when the queue is removed; returns the consumers to notify."""
        self.deleted = True
        self._cancel_expiry()
        if self._ttl_timer is not None:
            self._ttl_timer.cancel()
            self._ttl_timer = None
        for consumer in self.consumers:
            consumer.blocked = False
        consumers, self.consumers = self.consumers + list(self.browsers), []
        self._active.clear()
        self.browsers = {}
        self.ready.clear()
        self.outstanding.clear()
        self.locked.clear()
        return consumers

    def __repr__(self) -> str:
        return f"<Queue {self.name!r} in {self.vhost.name!r}>"
