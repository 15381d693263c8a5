"""Half messages: prepared transactions that outlive the connection that made them.

A publish whose headers carry `x-half-txn` = ID is routed as usual, then held here instead of
entering its queues: invisible to consumers, basic.get and message counts (each queue counts it
in `Queue.half`). A publish to `amq.rabbitish.txn` with routing key `commit` or `rollback` and the
same header decides ID: commit appends every held message of ID at the tail of its queues in one
step (dispatch held on all of them until all are in), rollback drops them. Both reach the journal
in one step of the event loop, so the store commits or loses a decision whole.

An ID still undecided `x-check-immunity` seconds after its first half message is asked about
with a check message on its `x-check-queue`, every `check_interval` seconds, and rolled back
after `check_max` checks. Timers run on the engine's Scheduler; first-seen and check times are
kept as wall-clock times too, so the store can resume them after a restart.

A prepared transaction is a half transaction made from a whole engine `Transaction` (`prepare`):
its publishes are held as half messages are, and its settlements (acks, nacks, rejects, 1.0
outcomes) lock their deliveries (`Queue.lock`): neither redelivered nor visible, until a decision
applies them as staged (commit) or puts the messages back in place, redelivered (rollback). On
0-9-1 a publish to amq.rabbitish.txn with routing key `prepare` on a tx channel asks for it; it
takes effect at that channel's tx.commit (`HalfPrepare`, engine/transactions.py).

A publish to amq.rabbitish.txn with routing key `read` and `reply_to` naming a queue puts copies
of the messages a transaction's settlements lock on that queue, in the order they were settled,
and decides nothing (`HalfRead`): a consumer that prepared its acks and lost its memory (a
restarted Spark driver) learns again which messages it holds, by the transaction's name."""

from __future__ import annotations

import decimal
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.engine.clock import TimerHandle
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import not_found, precondition_failed, resource_text
from rabbitish.engine.exchanges.direct import DirectExchange
from rabbitish.engine.message import Message, PropertyCodec
from rabbitish.engine.queue import Queue
from rabbitish.engine.queue_args import python_type_name
from rabbitish.wire_names import (
    CHECK_COUNT_HEADER,
    CHECK_IMMUNITY_HEADER,
    CHECK_QUEUE_HEADER,
    HALF_HEADER,
    TXN_EXCHANGE,
)

if TYPE_CHECKING:
    from rabbitish.engine.transactions import Transaction
    from rabbitish.engine.vhost import VirtualHost

log = logging.getLogger("rabbitish.half")

# Every encoding of a header table holds the key's bytes verbatim: a cheap test that lets
# ordinary publishes skip decoding their headers.
HALF_MARK = HALF_HEADER.encode()
DEFAULT_IMMUNITY = 60.0
MAX_ID_BYTES = 255
# Decided ids remembered, so a repeated decision is a no-op rather than "unknown" (oldest go).
DECIDED_KEEP = 10_000

# What a commit holds: queue id -> queue whose dispatch is suspended until the commit is done.
Touched = dict[int, Queue]


@dataclass
class HalfSettings:
    """Node-wide check-back settings (`--half-check-interval`, `--half-check-max`)."""

    check_interval: float = 5.0
    check_max: int = 15


@dataclass(frozen=True, slots=True)
class HalfView:
    """One undecided half transaction, as the CLI and the management API list it."""

    id: str
    vhost: str
    messages: int  # held messages (one per queue a publish reached)
    queues: tuple[str, ...]  # where its messages are held or its settlements lock deliveries
    created_at: float  # wall-clock time of the first half message, or of the prepare
    checks_sent: int
    check_queue: str | None
    acks: int = 0  # deliveries locked by its settlements (acks, nacks, rejects)
    prepared: bool = False  # made by a prepare (with settlements), not only half messages


@dataclass(slots=True)
class Prepared:
    """What a prepare did, for the front end to report as it reports a commit."""

    locked: list[Delivery] = field(default_factory=list)  # their consumers' credit is free
    returned: list[Message] = field(default_factory=list)  # mandatory publishes routed nowhere
    queues_touched: int = 0  # queues a staged decision or half message of another id reached


@dataclass(slots=True)
class PreparedSettlement:
    """One settlement of a prepared transaction: a locked delivery and the outcome staged for
    it, applied by a commit; `ord` is its place in the transaction (and its key in the store)."""

    delivery: Delivery
    outcome: Outcome
    delivery_failed: bool
    undeliverable_here: bool
    ord: int


class HalfTxn:
    """The held messages of one ID, in publish order, and its check-back state."""

    __slots__ = (
        "acquired",
        "check_queue",
        "checks_sent",
        "codec",
        "created_at",
        "durable",
        "entries",
        "first_seen",
        "id",
        "immunity",
        "last_check",
        "last_check_at",
        "next_ord",
        "prepared",
        "settlements",
        "timer",
    )

    def __init__(self, txn_id: str, created_at: float, first_seen: float) -> None:
        self.id = txn_id
        self.created_at = created_at  # wall clock, for listings and the store
        self.first_seen = first_seen  # scheduler clock, for timers
        self.entries: list[tuple[Queue, Message, int]] = []  # queue, message, ord
        self.next_ord = 0
        self.check_queue: str | None = None
        self.immunity: float | None = None
        self.checks_sent = 0
        self.last_check: float | None = None  # scheduler clock
        self.last_check_at: float | None = None  # wall clock
        self.codec: PropertyCodec | None = None
        self.durable = False  # holds a persistent message on a durable queue: the store knows it
        self.timer: TimerHandle | None = None
        self.prepared = False  # made by `HalfRegistry.prepare`: the store always knows it
        self.settlements: list[PreparedSettlement] = []  # in the order they were staged
        # Deliveries acquired under the transaction (AMQP 1.0), released again on rollback.
        self.acquired: list[Delivery] = []

    def live(self) -> list[tuple[Queue, Message, int]]:
        return [e for e in self.entries if not e[0].deleted]

    def live_settlements(self) -> list[PreparedSettlement]:
        return [s for s in self.settlements if not s.delivery.queue.deleted]


class DecisionExchange(DirectExchange):
    """amq.rabbitish.txn: a predeclared direct exchange whose publishes the broker consumes as
    decisions. Bindings to it are accepted, as to any amq.* exchange, but nothing routes
    through it (not even exchange-to-exchange bindings or alternate exchanges)."""

    def match(self, message: Message, routing_key: str) -> tuple[()]:
        return ()


# ---------------------------------------------------------------------- header parsing
def _text(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def parse_id(value: Any, header: str = HALF_HEADER) -> str:
    """A transaction id (or check queue name): a string of 1 to 255 bytes, else 406, as
    RabbitMQ refuses other headers it interprets (CC, BCC) when they have the wrong shape."""
    text = _text(value)
    size = len(text.encode()) if text is not None else 0
    if text is None or not 1 <= size <= MAX_ID_BYTES:
        got = f"{size} bytes" if text is not None else python_type_name(value)
        raise precondition_failed(
            f"invalid {header} header: expected a string of 1 to {MAX_ID_BYTES} bytes, got {got}"
        )
    return text


def parse_immunity(value: Any) -> float:
    """Seconds before the first status check: a number >= 0 (a numeric string is accepted)."""
    number: float | None = None
    if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
        number = float(value)
    elif (text := _text(value)) is not None:
        try:
            number = float(text)
        except ValueError:
            number = None
    if number is None or not number >= 0 or number == float("inf"):
        raise precondition_failed(
            f"invalid {CHECK_IMMUNITY_HEADER} header: expected a number of seconds >= 0"
        )
    return number


def _check_headers(headers: dict[str, Any]) -> tuple[str | None, float | None]:
    """x-check-queue and x-check-immunity, validated (406 for bad ones)."""
    check_queue = headers.get(CHECK_QUEUE_HEADER)
    if check_queue is not None:
        check_queue = parse_id(check_queue, CHECK_QUEUE_HEADER)
    immunity = headers.get(CHECK_IMMUNITY_HEADER)
    if immunity is not None:
        immunity = parse_immunity(immunity)
    return check_queue, immunity


# ---------------------------------------------------------------------- effects
class HalfPublish:
    """A publish that becomes half at once, or at tx.commit when staged in a transaction."""

    decides = False
    __slots__ = ("check_queue", "immunity", "registry", "txn_id")

    def __init__(
        self, registry: HalfRegistry, txn_id: str, check_queue: str | None, immunity: float | None
    ) -> None:
        self.registry = registry
        self.txn_id = txn_id
        self.check_queue = check_queue
        self.immunity = immunity

    def apply(self, message: Message, queues: list[Queue], touched: Touched | None) -> bool:
        """Hold `message` on `queues`; True when it reached any (else it is just unroutable)."""
        live = [q for q in queues if not q.deleted]
        if touched is not None:
            for queue in live:
                if id(queue) not in touched:
                    touched[id(queue)] = queue
                    queue.suspend_dispatch()
        if live:
            self.registry.hold(self, message, live)
        return bool(queues)


class HalfDecision:
    """A publish to amq.rabbitish.txn: commit or roll back an ID (None: not understood)."""

    decides = True
    __slots__ = ("commit", "registry", "txn_id")

    def __init__(self, registry: HalfRegistry, txn_id: str | None, commit: bool | None) -> None:
        self.registry = registry
        self.txn_id = txn_id
        self.commit = commit

    def apply(self, message: Message, queues: list[Queue], touched: Touched | None) -> bool:
        """Decide; False when there was nothing to decide (the publish counts as unroutable)."""
        if self.txn_id is None or self.commit is None:
            return False
        return self.registry.decide(self.txn_id, self.commit, touched)


class HalfPrepare:
    """A publish to amq.rabbitish.txn with routing key `prepare`: staged in a transaction, it
    makes the whole transaction prepared transaction `txn_id` at commit (engine/transactions.py)
    instead of applying it. Outside a transaction there is nothing to prepare."""

    decides = True
    __slots__ = ("check_queue", "codec", "immunity", "registry", "txn_id")

    def __init__(
        self,
        registry: HalfRegistry,
        txn_id: str,
        check_queue: str | None,
        immunity: float | None,
        codec: PropertyCodec,
    ) -> None:
        self.registry = registry
        self.txn_id = txn_id
        self.check_queue = check_queue
        self.immunity = immunity
        self.codec = codec

    def apply(self, message: Message, queues: list[Queue], touched: Touched | None) -> bool:
        raise precondition_failed(NOT_IN_TX)

    def prepare(self, tx: Transaction) -> Prepared:
        """Make `tx` prepared transaction `txn_id`."""
        return self.registry.prepare(
            self.txn_id, tx, check_queue=self.check_queue, immunity=self.immunity, codec=self.codec
        )


class HalfRead:
    """A publish to amq.rabbitish.txn with routing key `read`: copies of what transaction
    `txn_id` locks go to `reply_queue` (at once, or at tx.commit when staged). It decides
    nothing; an ID the broker does not hold is unroutable, as a decision for it is."""

    decides = True
    __slots__ = ("registry", "reply_queue", "txn_id")

    def __init__(self, registry: HalfRegistry, txn_id: str, reply_queue: Queue) -> None:
        self.registry = registry
        self.txn_id = txn_id
        self.reply_queue = reply_queue

    def apply(self, message: Message, queues: list[Queue], touched: Touched | None) -> bool:
        return self.registry.read(self.txn_id, self.reply_queue)


Effect = HalfPublish | HalfDecision | HalfPrepare | HalfRead
NOT_IN_TX = "prepare needs a transaction: publish it on a channel in tx mode"


# ---------------------------------------------------------------------- registry
class HalfRegistry:
    """The half transactions of one vhost: what `vhost.half` is."""

    def __init__(
        self,
        vhost: VirtualHost,
        settings: HalfSettings,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.vhost = vhost
        self.settings = settings
        self.wall = wall
        self.txns: dict[str, HalfTxn] = {}
        self.decided: OrderedDict[str, bool] = OrderedDict()  # id -> committed

    # ------------------------------------------------------------------ classification
    def effect_for(self, exchange_name: str, routing_key: str, message: Message) -> Effect | None:
        """What a publish means here: a decision (to amq.rabbitish.txn), a half message (it
        carries x-half-txn), or None (an ordinary publish). Bad headers are refused (406) now,
        when the publish arrives."""
        headers = message.headers
        value = headers.get(HALF_HEADER)
        if exchange_name == TXN_EXCHANGE:
            txn_id = None if value is None else parse_id(value)
            if routing_key == "prepare":
                if txn_id is None:
                    raise precondition_failed(f"prepare needs an {HALF_HEADER} header")
                self.check_unused(txn_id)
                check_queue, immunity = _check_headers(headers)
                return HalfPrepare(self, txn_id, check_queue, immunity, message.codec)
            if routing_key == "read":
                return self._read_effect(txn_id, message)
            commit = {"commit": True, "rollback": False}.get(routing_key)
            return HalfDecision(self, txn_id, commit)
        if value is None:
            return None
        txn_id = parse_id(value)
        held = self.txns.get(txn_id)
        if held is not None and held.prepared:
            raise precondition_failed(f"transaction '{txn_id}' is prepared: no work can join it")
        check_queue, immunity = _check_headers(headers)
        return HalfPublish(self, txn_id, check_queue, immunity)

    def _read_effect(self, txn_id: str | None, message: Message) -> HalfRead:
        """A read is refused when it arrives (406 without an ID or a reply_to, 404 for a
        reply_to queue that does not exist), as RabbitMQ refuses a publish it cannot route."""
        if txn_id is None:
            raise precondition_failed(f"read needs an {HALF_HEADER} header")
        reply_to = _text(message.codec.to_fields(message.raw_properties).get("reply_to"))
        if not reply_to:
            raise precondition_failed("read needs a reply_to property naming a queue")
        queue = self.vhost.queues.get(reply_to)
        if queue is None:
            raise not_found(f"no {resource_text('queue', reply_to, self.vhost.name)}")
        return HalfRead(self, txn_id, queue)

    def check_unused(self, txn_id: str) -> None:
        """406 unless `txn_id` can name a new prepared transaction: not held (undecided), and
        not among the remembered decisions (a repeated decision would then be ambiguous)."""
        if txn_id in self.txns:
            raise precondition_failed(f"transaction '{txn_id}' is already held")
        if txn_id in self.decided:
            raise precondition_failed(f"transaction '{txn_id}' was already decided")

    # ------------------------------------------------------------------ holding
    def hold(self, publish: HalfPublish, message: Message, queues: list[Queue]) -> None:
        txn = self.txns.get(publish.txn_id)
        if txn is None and publish.txn_id in self.decided:
            # A part of a decided transaction arriving late (held up in the network while a
            # status check decided it): holding it would start the id over, undecidable.
            raise precondition_failed(f"transaction '{publish.txn_id}' was already decided")
        if txn is None:
            txn = HalfTxn(publish.txn_id, self.wall(), self.vhost.scheduler.now())
            self.txns[txn.id] = txn
        if txn.codec is None:
            txn.codec = message.codec
        changed = False
        if txn.check_queue is None and publish.check_queue is not None:
            txn.check_queue, changed = publish.check_queue, True
        if txn.immunity is None and publish.immunity is not None:
            txn.immunity, changed = publish.immunity, True
        for queue in queues:
            if self._add_entry(txn, queue, message) and not txn.durable:
                txn.durable = changed = True
        if changed:
            self._save(txn)
            self._arm(txn)

    def _add_entry(self, txn: HalfTxn, queue: Queue, message: Message) -> bool:
        """Hold `message` for `queue` in `txn`; True when the store keeps it."""
        ord_ = txn.next_ord
        txn.next_ord += 1
        txn.entries.append((queue, message, ord_))
        queue.half += 1
        if not queue.durable:
            message.pinned = True  # only durable queues' messages can be read back
            return False
        if message.persistent:
            self.vhost.journal.half_held(queue, message, txn.id, ord_)
            return True
        return False

    # ------------------------------------------------------------------ preparing
    def prepare(
        self,
        txn_id: str,
        tx: Transaction,
        *,
        check_queue: str | None = None,
        immunity: float | None = None,
        codec: PropertyCodec | None = None,
    ) -> Prepared:
        """Turn `tx`'s staged work into prepared transaction `txn_id`, which outlives the
        connection (and, for persistent messages on durable queues, a restart). Its publishes
        are held as half messages; its settlements lock their deliveries (taken off their
        consumers, whose credit they free) until a decision. Staged decisions and half messages
        of other ids apply now, as a commit would apply them. `tx` ends, empty. 406 (nothing
        changed) when `txn_id` is held or was decided, or when a commit of `tx` would be
        refused. Durable once `vhost.journal.when_synced(vhost.journal.position, ...)` calls
        back."""
        self.check_unused(txn_id)
        publishes, settlements, acquired = tx.hand_over()
        result = Prepared()
        txn = HalfTxn(txn_id, self.wall(), self.vhost.scheduler.now())
        txn.prepared = txn.durable = True
        txn.check_queue, txn.immunity, txn.codec = check_queue, immunity, codec
        held: Touched = {}
        try:
            for staged in publishes:
                effect = staged.effect
                if effect is not None and not (
                    isinstance(effect, HalfPublish) and effect.txn_id == txn_id
                ):
                    if not effect.apply(staged.message, staged.queues, held) and staged.mandatory:
                        result.returned.append(staged.message)
                    continue
                if effect is not None:  # a half message of this same id
                    txn.check_queue = txn.check_queue or effect.check_queue
                    txn.immunity = effect.immunity if txn.immunity is None else txn.immunity
                if not staged.queues and staged.mandatory:
                    result.returned.append(staged.message)
                txn.codec = txn.codec or staged.message.codec
                for queue in staged.queues:
                    if not queue.deleted:
                        self._add_entry(txn, queue, staged.message)
        finally:
            for queue in held.values():
                queue.resume_dispatch()
        result.queues_touched = len(held)
        self.txns[txn_id] = txn  # after the staged decisions: none of them can decide it
        for settlement in settlements:
            for delivery in settlement.deliveries:
                queue = delivery.queue
                if delivery.settled or not queue.lock(delivery):
                    continue  # settled meanwhile, or its queue is gone
                consumer = delivery.consumer
                if consumer is not None:
                    consumer.release_credit(1)  # the consumer is done with it
                    if consumer.blocked:
                        consumer.queue.credit_returned(consumer)
                    delivery.consumer = None
                lock = PreparedSettlement(
                    delivery,
                    settlement.outcome,
                    settlement.delivery_failed,
                    settlement.undeliverable_here,
                    txn.next_ord,
                )
                txn.next_ord += 1
                txn.settlements.append(lock)
                result.locked.append(delivery)
                txn.codec = txn.codec or delivery.entry.message.codec
        if txn.settlements:
            self.vhost.journal.half_settlements_locked(txn.id, txn.settlements)
        txn.acquired = [d for d in acquired if not d.settled]
        self._save(txn)
        self._arm(txn)
        return result

    def restore(
        self,
        txn_id: str,
        created_at: float,
        check_queue: str | None,
        immunity: float | None,
        checks_sent: int,
        last_check_at: float | None,
        entries: list[tuple[Queue, Message, int]],
        settlements: list[PreparedSettlement] | None,
        prepared: bool,
        now_wall: float,
    ) -> None:
        """Recovery: an undecided transaction, its durable messages in publish order and, for
        a prepared one, its settlements with their deliveries locked again (Queue.restore).
        `now_wall` is recovery's wall-clock reading, so message expiry and check-backs agree
        on how long the broker was down."""
        now = self.vhost.scheduler.now()
        txn = HalfTxn(txn_id, created_at, now - (now_wall - created_at))
        txn.check_queue, txn.immunity, txn.checks_sent = check_queue, immunity, checks_sent
        if last_check_at is not None:
            txn.last_check_at = last_check_at
            txn.last_check = now - (now_wall - last_check_at)
        txn.entries = entries
        txn.settlements = settlements or []
        txn.prepared = prepared
        ords = [e[2] for e in entries] + [s.ord for s in txn.settlements]
        txn.next_ord = max(ords, default=-1) + 1
        txn.durable = True
        for queue, message, _ in entries:
            queue.half += 1
            txn.codec = txn.codec or message.codec
        for lock in txn.settlements:
            txn.codec = txn.codec or lock.delivery.entry.message.codec
        self.txns[txn_id] = txn
        self._arm(txn)

    def remember(self, txn_id: str, commit: bool) -> None:
        """Recovery: a decision made before the restart (so repeating it stays a no-op)."""
        self.decided[txn_id] = commit

    # ------------------------------------------------------------------ deciding
    def decide(self, txn_id: str, commit: bool, touched: Touched | None = None) -> bool:
        """Commit or roll back `txn_id`. True when the broker held it, or this same decision was
        made before (a no-op); False for an unknown id. In a transaction commit `touched` holds
        dispatch across everything the commit does; alone, this decision holds its own queues.
        Durable once `vhost.journal.when_synced(vhost.journal.position, ...)` calls back."""
        txn = self.txns.pop(txn_id, None)
        if txn is None:
            return self.decided.get(txn_id) is commit
        if txn.timer is not None:
            txn.timer.cancel()
            txn.timer = None
        held: Touched = {} if touched is None else touched
        try:
            for queue, message, _ in txn.entries:
                queue.half -= 1
                if queue.deleted:
                    continue  # deleted since the publish: its share is gone, as in a tx commit
                if id(queue) not in held:
                    held[id(queue)] = queue
                    queue.suspend_dispatch()
                if commit:
                    queue.enqueue(message)
            self._release(txn, commit, held)
            self.decided[txn_id] = commit
            self.decided.move_to_end(txn_id)
            forget = None
            if len(self.decided) > DECIDED_KEEP:
                forget = self.decided.popitem(last=False)[0]
            self.vhost.journal.half_decided(self.vhost.name, txn, commit, forget)
        finally:
            if touched is None:
                for queue in held.values():
                    queue.resume_dispatch()
        return True

    def _release(self, txn: HalfTxn, commit: bool, held: Touched) -> None:
        """Settle the locked deliveries: as staged on commit (after the publishes, as a
        transaction commit applies them), back in place and redelivered on rollback."""
        run: list[Delivery] = []
        how: tuple[Outcome, bool, bool] | None = None
        for lock in txn.settlements:
            delivery = lock.delivery
            queue = delivery.queue
            if not queue.unlock(delivery):
                continue  # its queue is gone, and the message with it
            if id(queue) not in held:
                held[id(queue)] = queue
                queue.suspend_dispatch()
            staged = (lock.outcome, lock.delivery_failed, lock.undeliverable_here)
            if not commit:
                staged = (Outcome.REQUEUE, True, False)
            if staged != how and run:
                assert how is not None
                settle(run, how[0], delivery_failed=how[1], undeliverable_here=how[2])
                run = []
            how = staged
            run.append(delivery)
        if run:
            assert how is not None
            settle(run, how[0], delivery_failed=how[1], undeliverable_here=how[2])
        if not commit:
            acquired = [d for d in txn.acquired if not d.settled]
            if acquired:
                settle(acquired, Outcome.RELEASED)

    # ------------------------------------------------------------------ reading
    def read(self, txn_id: str, reply_queue: Queue) -> bool:
        """Copies of the messages `txn_id`'s settlements lock, in settlement order, appended to
        `reply_queue` (copies: the originals stay locked, and deciding stays the only way to
        release them). False for an ID the broker does not hold."""
        txn = self.txns.get(txn_id)
        if txn is None:
            return False
        if reply_queue.deleted:
            return True
        for lock in txn.live_settlements():
            original = lock.delivery.entry.message
            reply_queue.enqueue(
                original.derive(
                    original.exchange,
                    original.routing_key,
                    original.raw_properties,
                    original.extra_keys or (),
                )
            )
        return True

    # ------------------------------------------------------------------ listing
    def list(self) -> list[HalfView]:
        """Every undecided transaction, oldest first."""
        views = []
        for txn in sorted(self.txns.values(), key=lambda t: t.created_at):
            live = txn.live()
            locks = txn.live_settlements()
            queues = {q.name for q, _, _ in live} | {s.delivery.queue.name for s in locks}
            views.append(
                HalfView(
                    txn.id,
                    self.vhost.name,
                    len(live),
                    tuple(sorted(queues)),
                    txn.created_at,
                    txn.checks_sent,
                    txn.check_queue,
                    len(locks),
                    txn.prepared,
                )
            )
        return views

    def get(self, txn_id: str) -> HalfView | None:
        return next((v for v in self.list() if v.id == txn_id), None)

    # ------------------------------------------------------------------ check-back
    def _save(self, txn: HalfTxn) -> None:
        if txn.durable:
            self.vhost.journal.half_txn_saved(self.vhost.name, txn)

    def _arm(self, txn: HalfTxn) -> None:
        """(Re)start the timer of the next status check, if the transaction has a check queue."""
        if txn.timer is not None:
            txn.timer.cancel()
            txn.timer = None
        if txn.check_queue is None:
            return
        scheduler = self.vhost.scheduler
        if txn.last_check is None:
            immunity = DEFAULT_IMMUNITY if txn.immunity is None else txn.immunity
            due = txn.first_seen + immunity
        else:
            due = txn.last_check + self.settings.check_interval
        delay = max(0.0, due - scheduler.now())
        txn.timer = scheduler.call_later(delay, lambda: self._check(txn))

    def _check(self, txn: HalfTxn) -> None:
        txn.timer = None
        if self.txns.get(txn.id) is not txn:
            return
        if txn.checks_sent >= self.settings.check_max:
            log.warning(
                "half transaction %r in vhost %r rolled back: undecided after %d status checks",
                txn.id,
                self.vhost.name,
                txn.checks_sent,
            )
            self.decide(txn.id, False)
            return
        txn.checks_sent += 1
        txn.last_check, txn.last_check_at = self.vhost.scheduler.now(), self.wall()
        self._send_check(txn)
        self._save(txn)
        self._arm(txn)

    def _send_check(self, txn: HalfTxn) -> None:
        """A check message on the check queue (as through the default exchange): headers
        x-half-txn and x-check-count, correlation-id = ID, empty body. It is enqueued directly:
        it carries x-half-txn but must not become half itself."""
        assert txn.check_queue is not None
        queue = self.vhost.queues.get(txn.check_queue)
        if queue is None or txn.codec is None:
            return
        raw = txn.codec.from_fields(
            {
                "headers": {HALF_HEADER: txn.id, CHECK_COUNT_HEADER: txn.checks_sent},
                "correlation_id": txn.id,
                "delivery_mode": 1,
            }
        )
        queue.enqueue(txn.codec.new_message("", txn.check_queue, raw, b""))
