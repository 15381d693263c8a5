"""AMQP 1.0 transactions on the engine's one `Transaction` model: the coordinator link (declare,
discharge) and the connection's table of declared transactions that the other links use for
transactional posting (transfers), retirement (dispositions) and acquisition (flows).

A 1.0 txn-id is the engine transaction's id as binary, so `rabbitish tx` and the management API
name the same transaction the client holds. Transactions belong to the connection: work on any
link of any session of the connection may name one (`amqp:multi-ssns-per-txn`). A transaction
ends when it is discharged, when the coordinator link that declared it detaches, or when the
connection goes; the last two roll it back. The resource ends one itself when it refuses work
done in it (a transactional transfer refused on any session, or sent on a control link): it is
rolled back at once and its id stays known, so the next use of it, or its discharge, hears why
(`amqp:transaction:rollback`). So does a transaction idle past `--transaction-timeout`
(`amqp:transaction:timeout`).

A declare with a `global-id` starts a transaction branch: the same staged work, which a commit
discharge may not apply. The controller prepares it with a discharge carrying
`rabbitish:prepare` = true (message annotations or application properties): its work becomes
the prepared half transaction named by the global-id (engine/half.py), accepted once that is on
disk, and decided later from any connection, the management API or `rabbitish tx`.

Rollback puts things back as the spec asks: staged publishes are dropped; a delivery retired
in the transaction while still unsettled at the client stays unsettled (the client may settle it
again); one the client settled goes back in place in its queue; a delivery acquired in the
transaction goes back in place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.bridge.addresses import LinkError, RefusedAttach
from rabbitish.bridge.codec import DecodeError, Symbol, decode_all
from rabbitish.bridge.codec.definitions import (
    Accepted,
    AmqpValue,
    ApplicationProperties,
    Attach,
    Coordinator,
    Declare,
    Declared,
    Discharge,
    Error,
    MessageAnnotations,
    Rejected,
    Source,
    TransactionalState,
    Transfer,
)
from rabbitish.bridge.links import ReceivingLink, outcome_of

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError, precondition_failed
from rabbitish.engine.transactions import Transaction, TxState

if TYPE_CHECKING:
    from rabbitish.bridge.connection import Connection10
    from rabbitish.bridge.session import Session

    from rabbitish.engine.vhost import VirtualHost

LOCAL_TRANSACTIONS = Symbol("amqp:local-transactions")
MULTI_TXNS_PER_SSN = Symbol("amqp:multi-txns-per-ssn")
MULTI_SSNS_PER_TXN = Symbol("amqp:multi-ssns-per-txn")
DISTRIBUTED_TRANSACTIONS = Symbol("amqp:distributed-transactions")
# What the coordinator offers: transactions may span the sessions of a connection, a session may
# hold several at once, and a declare may carry a global-id (a branch prepared with
# `rabbitish:prepare`, decided as a half transaction).
CAPABILITIES: tuple[str, ...] = (
    LOCAL_TRANSACTIONS,
    MULTI_TXNS_PER_SSN,
    MULTI_SSNS_PER_TXN,
    DISTRIBUTED_TRANSACTIONS,
)
PREPARE = "rabbitish:prepare"  # in a discharge's message annotations or application properties
PROMOTABLE = Symbol("amqp:promotable-transactions")
REJECTED_OUTCOME = Symbol("amqp:rejected:list")
UNKNOWN_ID = "amqp:transaction:unknown-id"
ROLLBACK = "amqp:transaction:rollback"
TIMEOUT = "amqp:transaction:timeout"
ILLEGAL_STATE = "amqp:illegal-state"
NOT_IMPLEMENTED = "amqp:not-implemented"
PRECONDITION_FAILED = "amqp:precondition-failed"
INVALID_FIELD = "amqp:invalid-field"
MAX_GLOBAL_ID = 255  # bytes of UTF-8, as an x-half-txn id
CREDIT = 100  # declares and discharges a controller may have in flight


@dataclass(eq=False)
class Retirement:
    """A delivery the client settled (or updated) in a transaction."""

    session: Session
    delivery_id: int
    delivery: Delivery
    outcome_state: Any  # the outcome the client asked for, sent back when it is applied
    client_settled: bool


@dataclass(eq=False)
class Acquisition:
    session: Session
    delivery_id: int
    delivery: Delivery


@dataclass(eq=False)
class DeclaredTxn:
    """A transaction as this connection knows it."""

    txn_id: bytes
    tx: Transaction
    controller: CoordinatorLink
    retirements: list[Retirement] = field(default_factory=list)
    acquisitions: list[Acquisition] = field(default_factory=list)
    acquiring: list[Any] = field(default_factory=list)  # outgoing links acquiring under it
    # Set when the resource ended it (rolled back): the condition and description its next use
    # or its discharge gets.
    ended_with: tuple[str, str] | None = None
    global_id: str | None = None  # a branch: prepared as the half transaction of this id

    def acquired(
        self, session: Session, delivery_id: int, delivery: Delivery, settled: bool
    ) -> None:
        """A delivery made under this transaction; one sent pre-settled is accepted at commit."""
        self.tx.stage_acquire(delivery)
        self.acquisitions.append(Acquisition(session, delivery_id, delivery))
        if settled:
            self.tx.stage_settle([delivery], Outcome.ACK)


class TransactionTable:
    """The transactions declared on one connection, by txn-id."""

    def __init__(self, conn: Connection10) -> None:
        self.conn = conn
        self.by_id: dict[bytes, DeclaredTxn] = {}

    def declare(self, controller: CoordinatorLink, global_id: str | None = None) -> DeclaredTxn:
        """A local transaction, or with `global_id` a branch (406 when that id is held by a
        prepared or half transaction, was decided, or names a live branch here)."""
        if global_id is not None:
            self._vhost().half.check_unused(global_id)
            if any(d.global_id == global_id for d in self.by_id.values()):
                raise precondition_failed(f"transaction branch '{global_id}' is already open")
        tx = self.conn.node.transactions.begin(controller.session, on_timeout=self._idle)
        declared = DeclaredTxn(tx.id.encode(), tx, controller, global_id=global_id)
        self.by_id[declared.txn_id] = declared
        return declared

    def _vhost(self) -> VirtualHost:
        vhost = self.conn.vhost
        assert vhost is not None  # a session exists only on an open connection
        return vhost

    def _idle(self, tx: Transaction) -> None:
        """Idle past --transaction-timeout with work in it: rolled back now; its next use or
        its discharge gets `amqp:transaction:timeout`."""
        declared = self.by_id.get(tx.id.encode())
        if declared is not None and declared.tx is tx and declared.ended_with is None:
            seconds = self.conn.node.transactions.idle_timeout
            self.end(declared, TIMEOUT, f"transaction idle for more than {seconds:g} s")

    def lookup(self, txn_id: Any) -> DeclaredTxn:
        """The live transaction that work (posting, retirement, acquisition) names."""
        declared = self.known(txn_id)
        if declared.ended_with is not None:
            raise LinkError(*declared.ended_with)
        return declared

    def known(self, txn_id: Any) -> DeclaredTxn:
        """The transaction a discharge names, live or ended by the resource."""
        declared = self.by_id.get(bytes(txn_id)) if isinstance(txn_id, bytes | memoryview) else None
        if declared is None:
            raise LinkError(UNKNOWN_ID, f"unknown transaction id {txn_id!r}")
        return declared

    def declared_by(self, session: Session) -> tuple[Transaction, ...]:
        return tuple(
            d.tx
            for d in self.by_id.values()
            if d.controller.session is session and d.ended_with is None
        )

    # ------------------------------------------------------------------ work
    def retire(
        self,
        declared: DeclaredTxn,
        session: Session,
        delivery_id: int,
        delivery: Delivery,
        outcome_state: Any,
        client_settled: bool,
    ) -> bool:
        """Stage the client's outcome for a delivery it received. False when that ended the
        transaction: the delivery was acquired in another live one (the spec's error, which
        terminates the retiring transaction's control link with a rollback)."""
        for other in self.by_id.values():
            if (
                other is not declared
                and other.ended_with is None
                and any(a.delivery is delivery for a in other.acquisitions)
            ):
                self.fail(declared, ROLLBACK, "delivery acquired in a different transaction")
                return False
        outcome, flags = outcome_of(outcome_state)
        declared.tx.stage_settle([delivery], outcome, **flags)
        declared.retirements.append(
            Retirement(session, delivery_id, delivery, outcome_state, client_settled)
        )
        return True

    def refused(self, txn_id: Any, description: str) -> None:
        """Work the client did in a transaction was refused (a transactional transfer, on any
        session): the transaction can no longer commit, as the spec requires. It rolls back
        now; its next use or commit discharge gets `amqp:transaction:rollback`."""
        declared = self.by_id.get(bytes(txn_id)) if isinstance(txn_id, bytes | memoryview) else None
        if declared is not None and declared.ended_with is None:
            self.end(declared, ROLLBACK, description)

    def end(self, declared: DeclaredTxn, condition: str, description: str) -> None:
        """The resource ends a transaction: rolled back at once, its id kept until discharged
        (or its control link goes) so that the client hears `condition`."""
        self.rollback(declared, forget=False)
        declared.ended_with = (condition, description)

    def take_over(self, deliveries: list[Delivery]) -> list[Delivery]:
        """Deliveries whose link or session is going: those retired in a live transaction stay
        with it (applied at commit, back in place at rollback); returns the others."""
        retired = {id(r.delivery): r for d in self.by_id.values() for r in d.retirements}
        rest = []
        for delivery in deliveries:
            retirement = retired.get(id(delivery))
            if retirement is None:
                rest.append(delivery)
            else:
                retirement.client_settled = True  # nobody can settle it now but the txn
        return rest

    def incomplete(self, declared: DeclaredTxn) -> bool:
        """A transfer of this transaction has frames still to come."""
        for session in self.conn.sessions.values():
            for link in session.links.values():
                first = link.pending_transfer if isinstance(link, ReceivingLink) else None
                if first is not None and _txn_of(first.state) == declared.txn_id:
                    return True
        return False

    # ------------------------------------------------------------------ outcome
    def commit(self, declared: DeclaredTxn) -> bool:
        """Apply the transaction; True when the completion must wait for disk (it published:
        a discharge of retirements alone is accepted at once, docs/transactions.md)."""
        result = declared.tx.commit()
        self._applied(declared)
        return result.needs_sync

    def prepare(self, declared: DeclaredTxn) -> None:
        """A branch's work becomes the prepared half transaction named by its global-id (406,
        nothing changed, when a commit would be refused or the id is taken); its retirements'
        deliveries are locked there until the decision. Complete once on disk."""
        assert declared.global_id is not None
        codec = self.conn.node.codec
        self._vhost().half.prepare(declared.global_id, declared.tx, codec=codec)
        self._applied(declared)

    def _applied(self, declared: DeclaredTxn) -> None:
        """Committed or prepared: the transaction is done, and what the client retired in it
        but left unsettled is settled for it with its outcome, as the spec allows."""
        self._finish(declared)
        for retirement in declared.retirements:
            session = retirement.session
            if retirement.client_settled or session.ended:
                continue
            if session.unsettled.pop(retirement.delivery_id, None) is not None:
                # The outcome is applied: settle it for the client, as the spec allows.
                state = retirement.outcome_state or Accepted()
                session.send_disposition(retirement.delivery_id, state, role=False)
        for session in list(self.conn.sessions.values()):
            session.resume()

    def rollback(self, declared: DeclaredTxn, forget: bool = True) -> None:
        if declared.tx.state in (TxState.ACTIVE, TxState.PREPARED):
            declared.tx.rollback()  # releases acquisitions back in place
        self._finish(declared, forget)
        for acquisition in declared.acquisitions:
            acquisition.session.unsettled.pop(acquisition.delivery_id, None)
        back = [r.delivery for r in declared.retirements if r.client_settled]
        declared.acquisitions, declared.retirements = [], []
        if back:
            settle(back, Outcome.RELEASED)
        for session in list(self.conn.sessions.values()):
            session.resume()

    def fail(self, declared: DeclaredTxn, condition: str, description: str) -> None:
        """The resource ends the transaction: the control link goes with the error."""
        declared.controller.session.detach_link(declared.controller, condition, description)

    def _finish(self, declared: DeclaredTxn, forget: bool = True) -> None:
        if forget:
            self.by_id.pop(declared.txn_id, None)
        for link in declared.acquiring:
            link.stop_acquiring(declared)
        declared.acquiring.clear()

    def rollback_all(self, controller: CoordinatorLink | None = None) -> None:
        """The control link (or, for None, the connection) is gone: roll its transactions back."""
        for declared in list(self.by_id.values()):
            if controller is None or declared.controller is controller:
                self.rollback(declared)


def _txn_of(state: Any) -> bytes | None:
    """The transaction a transfer's state names, if it names one."""
    if not isinstance(state, TransactionalState):
        return None
    txn_id = state.txn_id
    return bytes(txn_id) if isinstance(txn_id, bytes | memoryview) else None


class CoordinatorLink(ReceivingLink):
    """The client's control link: declare and discharge messages in, outcomes back."""

    coordinator = True
    credit_batch = CREDIT

    def __init__(self, session: Session, attach: Attach) -> None:
        super().__init__(session, attach)
        self.name = str(attach.name)
        target = attach.target
        desired = _symbols(attach.desired_capabilities)
        desired += _symbols(target.capabilities if isinstance(target, Coordinator) else None)
        if PROMOTABLE in desired:
            raise RefusedAttach(NOT_IMPLEMENTED, "promotable transactions are not supported")
        self.table: TransactionTable = session.conn.transactions
        self.target = Coordinator(capabilities=list(CAPABILITIES))
        # The spec's choice: a source that lists its outcomes without rejected hears errors
        # as a detach of the control link; otherwise they reject the declare or discharge.
        source = attach.source
        listed = _symbols(source.outcomes) if isinstance(source, Source) else []
        self.rejects = not listed or REJECTED_OUTCOME in listed

    def received(self, first: Transfer, body: bytes) -> None:
        if isinstance(first.state, TransactionalState):
            # No transactional work on the control link: refused, and the transaction it
            # names can no longer commit.
            self.table.refused(first.state.txn_id, "transactional work sent on the control link")
            if not first.settled:
                self._reject(
                    int(first.delivery_id),  # type: ignore[arg-type]
                    ILLEGAL_STATE,
                    "transactional work is not allowed on the control link",
                )
                return
        if first.settled:
            raise LinkError(ILLEGAL_STATE, "declare and discharge must be sent unsettled")
        # An unsettled transfer carries its delivery-id (a peer that leaves it out fails
        # here, with a TypeError, as it always has).
        request, prepare = _control_body(body)
        self._control(int(first.delivery_id), request, prepare)  # type: ignore[arg-type]

    def _control(self, delivery_id: int, request: Any, prepare: bool = False) -> None:
        if isinstance(request, Declare):
            self._declare(delivery_id, request)
        elif isinstance(request, Discharge):
            try:
                declared = self.table.known(request.txn_id)
            except LinkError as err:
                self._reject(delivery_id, err.condition, err.description)
                return
            self._discharge(delivery_id, declared, bool(request.fail), prepare)
        else:
            self._reject(delivery_id, "amqp:decode-error", "expected a declare or a discharge")

    def _declare(self, delivery_id: int, request: Declare) -> None:
        global_id = None
        if request.global_id is not None:
            global_id = _global_id(request.global_id)
            if global_id is None:
                text = f"global-id must be a string or binary of 1 to {MAX_GLOBAL_ID} bytes"
                self._reject(delivery_id, INVALID_FIELD, text)
                return
        try:
            declared = self.table.declare(self, global_id)
        except AMQPError as err:
            self._reject(delivery_id, PRECONDITION_FAILED, err.text)
            return
        self.session.send_disposition(delivery_id, Declared(txn_id=declared.txn_id), role=True)

    def _discharge(
        self, delivery_id: int, declared: DeclaredTxn, fail: bool, prepare: bool = False
    ) -> None:
        if fail:  # always possible, even for a transaction the resource already ended
            self.table.rollback(declared)
            self._accept(delivery_id)
            return
        if declared.ended_with is not None:  # rolled back by the resource: say why
            self.table.rollback(declared)
            self._reject(delivery_id, *declared.ended_with)
            return
        if prepare != (declared.global_id is not None):
            # Refused, the transaction stays open: a branch is prepared, never committed here;
            # a local transaction is committed, never prepared.
            if prepare:
                text = "only a transaction declared with a global-id can be prepared"
            else:
                text = (
                    f"transaction branch '{declared.global_id}' must be prepared: discharge "
                    f"it with {PREPARE}, then decide it as a half transaction"
                )
            self._reject(delivery_id, PRECONDITION_FAILED, text)
            return
        if self.table.incomplete(declared):
            self.table.rollback(declared)
            raise LinkError(ROLLBACK, "a transfer of the transaction is incomplete")
        try:
            if prepare:
                self.table.prepare(declared)
                wait = True  # a prepare is answered once it is on disk
            else:
                wait = self.table.commit(declared)
        except AMQPError as err:  # refused (a full reject-publish queue, an id in use)
            self.table.rollback(declared)
            self._reject(delivery_id, ROLLBACK, err.text)
            return
        if wait:
            vhost = self.session.conn.vhost
            assert vhost is not None  # a session exists only on an open connection
            journal = vhost.journal
            journal.when_synced(
                journal.position,
                lambda: self._accept(delivery_id),
                lambda reason: self.session.reject_incoming(delivery_id, reason),
            )
        else:
            self._accept(delivery_id)

    def _accept(self, delivery_id: int) -> None:
        if not self.session.ended:
            self.session.send_disposition(delivery_id, Accepted(), role=True)

    def _reject(self, delivery_id: int, condition: str, description: str) -> None:
        """A transaction error: the rejected outcome when the control link's source takes it,
        else a detach of the control link carrying the error (raised to the session)."""
        if not self.rejects:
            raise LinkError(condition, description)
        error = Error(condition=Symbol(condition), description=description)
        self.session.send_disposition(delivery_id, Rejected(error=error), role=True)

    def teardown(self) -> None:
        super().teardown()
        self.table.rollback_all(self)


def _symbols(value: Any) -> list[Any]:
    """A multiple symbol field: absent, one symbol or a list of them."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _control_body(body: bytes) -> tuple[Any, bool]:
    """The declare or discharge in a control message's amqp-value section, and whether its
    message annotations or application properties ask for a prepare (`rabbitish:prepare`)."""
    try:
        sections = decode_all(body)
    except DecodeError:
        return None, False
    value, prepare = None, False
    for section in sections:
        if isinstance(section, AmqpValue):
            value = section.value
        elif isinstance(section, MessageAnnotations | ApplicationProperties):
            fields = section.value if isinstance(section.value, dict) else {}
            prepare = prepare or fields.get(PREPARE) is True
    return value, prepare


def _global_id(value: Any) -> str | None:
    """A declare's global-id as a half-transaction id: a string, or binary in UTF-8, of 1 to
    255 bytes (None: not usable)."""
    if isinstance(value, bytes | memoryview):
        try:
            value = bytes(value).decode()
        except UnicodeDecodeError:
            return None
    if not isinstance(value, str) or not 0 < len(value.encode()) <= MAX_GLOBAL_ID:
        return None
    return str(value)
