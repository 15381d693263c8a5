"""AMQP 1.0 transactions on the engine's one `Transaction` model: the coordinator link (declare,
discharge) and the connection's table of declared transactions that the other links use for
transactional posting (transfers), retirement (dispositions) and acquisition (flows).

A 1.0 txn-id is the engine transaction's id as binary, so `rabbitish tx` and the management API
name the same transaction the client holds. Transactions belong to the connection: work on any
link of any session of the connection may name one. A transaction ends when it is discharged,
when the coordinator link that declared it detaches, or when the connection goes; the last two
roll it back.

Rollback puts things back as the spec asks: staged publishes are dropped; a delivery retired
in the transaction while still unsettled at the client stays unsettled (the client may settle it
again); one the client settled goes back in place in its queue; a delivery acquired in the
transaction goes back in place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.bridge.addresses import LinkError
from rabbitish.bridge.codec import DecodeError, Symbol, decode_all
from rabbitish.bridge.codec.definitions import (
    Accepted,
    AmqpValue,
    Attach,
    Coordinator,
    Declare,
    Declared,
    Discharge,
    Error,
    Rejected,
    TransactionalState,
    Transfer,
)
from rabbitish.bridge.links import ReceivingLink, outcome_of

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.transactions import Transaction, TxState

if TYPE_CHECKING:
    from rabbitish.bridge.connection import Connection10
    from rabbitish.bridge.session import Session

LOCAL_TRANSACTIONS = Symbol("amqp:local-transactions")
MULTI_TXNS_PER_SSN = Symbol("amqp:multi-txns-per-ssn")
UNKNOWN_ID = "amqp:transaction:unknown-id"
ROLLBACK = "amqp:transaction:rollback"
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

    def declare(self, controller: CoordinatorLink) -> DeclaredTxn:
        tx = self.conn.node.transactions.begin(controller.session)
        declared = DeclaredTxn(tx.id.encode(), tx, controller)
        self.by_id[declared.txn_id] = declared
        return declared

    def lookup(self, txn_id: Any) -> DeclaredTxn:
        declared = self.by_id.get(bytes(txn_id)) if isinstance(txn_id, bytes | memoryview) else None
        if declared is None:
            raise LinkError(UNKNOWN_ID, f"unknown transaction id {txn_id!r}")
        return declared

    def declared_by(self, session: Session) -> tuple[Transaction, ...]:
        return tuple(d.tx for d in self.by_id.values() if d.controller.session is session)

    # ------------------------------------------------------------------ work
    def retire(
        self,
        declared: DeclaredTxn,
        session: Session,
        delivery_id: int,
        delivery: Delivery,
        outcome_state: Any,
        client_settled: bool,
    ) -> None:
        """Stage the client's outcome for a delivery it received."""
        for other in self.by_id.values():
            if other is not declared and any(a.delivery is delivery for a in other.acquisitions):
                # Acquired in one live transaction, retired in another: the spec's error.
                self.fail(other, ROLLBACK, "delivery retired in a different transaction")
                break
        outcome, flags = outcome_of(outcome_state)
        declared.tx.stage_settle([delivery], outcome, **flags)
        declared.retirements.append(
            Retirement(session, delivery_id, delivery, outcome_state, client_settled)
        )

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
        """Apply the transaction; True when the completion must wait for disk."""
        result = declared.tx.commit()
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
        return result.needs_sync

    def rollback(self, declared: DeclaredTxn) -> None:
        if declared.tx.state in (TxState.ACTIVE, TxState.PREPARED):
            declared.tx.rollback()  # releases acquisitions back in place
        self._finish(declared)
        for acquisition in declared.acquisitions:
            acquisition.session.unsettled.pop(acquisition.delivery_id, None)
        back = [r.delivery for r in declared.retirements if r.client_settled]
        if back:
            settle(back, Outcome.RELEASED)
        for session in list(self.conn.sessions.values()):
            session.resume()

    def fail(self, declared: DeclaredTxn, condition: str, description: str) -> None:
        """The resource ends the transaction: the control link goes with the error."""
        declared.controller.session.detach_link(declared.controller, condition, description)

    def _finish(self, declared: DeclaredTxn) -> None:
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
        self.table: TransactionTable = session.conn.transactions
        self.target = Coordinator(capabilities=[LOCAL_TRANSACTIONS, MULTI_TXNS_PER_SSN])

    def received(self, first: Transfer, body: bytes) -> None:
        if first.settled:
            raise LinkError("amqp:illegal-state", "declare and discharge must be sent unsettled")
        # An unsettled transfer carries its delivery-id (a peer that leaves it out fails
        # here, with a TypeError, as it always has).
        self._control(int(first.delivery_id), _control_body(body))  # type: ignore[arg-type]

    def _control(self, delivery_id: int, request: Any) -> None:
        if isinstance(request, Declare):
            if request.global_id is not None:
                self._reject(delivery_id, "amqp:not-implemented", "global transactions")
                return
            declared = self.table.declare(self)
            self.session.send_disposition(delivery_id, Declared(txn_id=declared.txn_id), role=True)
        elif isinstance(request, Discharge):
            try:
                declared = self.table.lookup(request.txn_id)
            except LinkError as err:
                self._reject(delivery_id, err.condition, err.description)
                return
            self._discharge(delivery_id, declared, bool(request.fail))
        else:
            self._reject(delivery_id, "amqp:decode-error", "expected a declare or a discharge")

    def _discharge(self, delivery_id: int, declared: DeclaredTxn, fail: bool) -> None:
        if fail:
            self.table.rollback(declared)
            self._accept(delivery_id)
            return
        if self.table.incomplete(declared):
            self.table.rollback(declared)
            raise LinkError(ROLLBACK, "a transfer of the transaction is incomplete")
        try:
            touched = self.table.commit(declared)
        except AMQPError as err:  # a queue refuses the commit: nothing was applied
            self.table.rollback(declared)
            self._reject(delivery_id, ROLLBACK, err.text)
            return
        if touched:
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
        error = Error(condition=Symbol(condition), description=description)
        self.session.send_disposition(delivery_id, Rejected(error=error), role=True)

    def teardown(self) -> None:
        super().teardown()
        self.table.rollback_all(self)


def _control_body(body: bytes) -> Any:
    """The declare or discharge in a control message's amqp-value section."""
    try:
        sections = decode_all(body)
    except DecodeError:
        return None
    value = next((s.value for s in sections if isinstance(s, AmqpValue)), None)
    return value
