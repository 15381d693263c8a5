"""The coordinator rules of the AMQP 1.0 transactions spec beyond declare and discharge, with
qpid-proton over TCP where it can say them (the capabilities offered, work on several sessions
and several transactions, refused work, promotable transactions) and raw frames where it cannot
(transactional acquisition, a settled discharge, a second control link)."""

from __future__ import annotations

import pytest
from rabbitish.bridge.codec import Symbol, UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import (
    Accepted,
    AmqpValue,
    Attach,
    Coordinator,
    Declare,
    Declared,
    Detach,
    Discharge,
    Disposition,
    Source,
    TransactionalState,
    Transfer,
)

from tests.support.clients import pika_channel
from tests.support.queues import fill, ready, take_all

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Delivery, Endpoint, Message, Terminus, symbol  # noqa: E402
from proton.utils import LinkDetached  # noqa: E402

from tests.bridge.test_amqp10_coordinator import CONTROL, Controller, message  # noqa: E402
from tests.support.proton_tx import TxClient  # noqa: E402

TRANSACTIONAL_STATE = 0x34  # the delivery state proton reports for transactional-state


@pytest.fixture
def client(broker_url):
    made = TxClient(broker_url)
    yield made
    made.close()


@pytest.fixture
def ctl(broker_url):
    made = Controller(broker_url)
    yield made
    made.close()


def symbols(data) -> list[str]:
    """The symbols of a proton Data holding an array (or a single symbol)."""
    data.rewind()
    found = []
    while data.next():
        if data.type() == proton.Data.ARRAY:
            data.enter()
            while data.next():
                found.append(str(data.get_object()))
            data.exit()
        else:
            found.append(str(data.get_object()))
    return found


# ---------------------------------------------------------------------- amqp:multi-ssns-per-txn


def test_the_coordinator_offers_multi_sessions_per_transaction(client):
    txn = client.declare()
    offered = symbols(txn.txn_ctrl.remote_target.capabilities)
    assert "amqp:multi-ssns-per-txn" in offered
    assert {"amqp:local-transactions", "amqp:multi-txns-per-ssn"} <= set(offered)


def test_work_from_other_sessions_commits_with_the_transaction(client, broker_url, uid):
    fill(broker_url, uid, 0)
    near = client.conn.create_sender(f"/amq/queue/{uid}")  # the control link's session
    far = client.sender_on(client.session(), f"/amq/queue/{uid}")
    txn = client.declare()
    for sender, body in ((near, b"near"), (far, b"far")):
        assert client.send(txn, sender, body).remote_state == TRANSACTIONAL_STATE
    assert ready(broker_url, uid) == 0
    assert client.discharge(txn, commit=True) == "committed"
    assert take_all(broker_url, uid) == [b"near", b"far"]


def test_a_transaction_declared_on_another_session_takes_work_from_this_one(
    client, broker_url, uid
):
    fill(broker_url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    txn = client.declare(client.session())  # its control link lives on a session of its own
    client.send(txn, sender, b"m")
    assert client.discharge(txn, commit=True) == "committed"
    assert take_all(broker_url, uid) == [b"m"]


# ---------------------------------------------------------------------- refused work fails it


def test_a_transfer_refused_on_another_session_fails_the_transaction(client, broker_url, uid):
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
        ch.exchange_declare(uid, "fanout")
        ch.queue_bind(uid, uid)
    session = client.session()
    sender = client.sender_on(session, f"/exchange/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"staged")
    with pika_channel(broker_url) as ch:
        ch.exchange_delete(uid)
    txn.send(sender.link, Message(body=b"refused", inferred=True))
    client.conn.wait(lambda: session.state & Endpoint.REMOTE_CLOSED, msg="session end")
    assert session.remote_condition.name == "amqp:not-found"
    assert client.discharge(txn, commit=True) == "commit failed"
    discharge = txn._discharge
    assert discharge.remote_state == Delivery.REJECTED
    assert discharge.remote.condition.name == "amqp:transaction:rollback"
    assert take_all(broker_url, uid) == []  # not even the message staged before the refusal


def test_a_transfer_refused_on_another_session_still_allows_a_rollback(client, broker_url, uid):
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
    session = client.session()
    sender = client.sender_on(session, f"/amq/queue/{uid}")
    txn = client.declare()
    bad = Message(body=b"x", inferred=True, properties={"x-half-txn": "h" * 300})
    txn.send(sender.link, bad)  # an invalid half-message header: 406, the session ends
    client.conn.wait(lambda: session.state & Endpoint.REMOTE_CLOSED, msg="session end")
    assert session.remote_condition.name == "amqp:precondition-failed"
    assert client.discharge(txn, commit=False) == "aborted"
    assert ready(broker_url, uid) == 0


# ---------------------------------------------------------------------- the control link


def test_transactional_work_on_the_control_link_is_rejected(client, broker_url, uid):
    fill(broker_url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"staged")
    posted = txn.send(txn.txn_ctrl, Message(body=b"on the control link", inferred=True))
    client.conn.wait(lambda: posted.remote_state, msg="control link outcome")
    assert posted.remote_state == Delivery.REJECTED
    assert posted.remote.condition.name == "amqp:illegal-state"
    # Work the resource refused: the transaction can no longer commit.
    assert client.discharge(txn, commit=True) == "commit failed"
    assert txn._discharge.remote.condition.name == "amqp:transaction:rollback"
    assert ready(broker_url, uid) == 0


def test_transactional_work_on_a_control_link_without_rejected_detaches_it(ctl, broker_url, uid):
    ctl.raw.send(
        encode_frame(
            0,
            Attach(
                name="txn-ctl-2",
                handle=UInt(5),
                role=False,
                source=Source(outcomes=[Symbol("amqp:accepted:list")]),
                target=Coordinator(capabilities=[Symbol("amqp:local-transactions")]),
            ),
        )
    )
    ctl.expect(Attach)
    txn_id = ctl.declare()
    ctl.transfer(5, message(b"work"), state=TransactionalState(txn_id=txn_id))
    detach = ctl.expect(Detach)
    assert int(detach.handle) == 5 and detach.closed
    assert str(detach.error.condition) == "amqp:illegal-state"
    # The transaction it named (declared on control link 0) can no longer commit.
    state = ctl.control(Discharge(txn_id=txn_id, fail=False))
    assert str(state.error.condition) == "amqp:transaction:rollback"


def test_a_settled_discharge_detaches_the_control_link_and_rolls_back(
    ctl, broker_url, uid, rabbitish_broker
):
    fill(broker_url, uid, 0)
    ctl.sender(1, uid)
    txn_id = ctl.declare()
    ctl.transfer(1, message(b"never"), state=TransactionalState(txn_id=txn_id))
    ctl.expect(Disposition)
    discharge = AmqpValue(value=Discharge(txn_id=txn_id, fail=False))
    ctl.transfer(CONTROL, encode(discharge), settled=True)
    detach = ctl.expect(Detach)
    assert int(detach.handle) == CONTROL and detach.closed
    assert str(detach.error.condition) == "amqp:illegal-state"
    assert txn_id.decode() not in {tx.id for tx in rabbitish_broker.node.transactions}
    assert take_all(broker_url, uid) == []


# ---------------------------------------------------------------------- several transactions


def test_two_open_transactions_on_one_session(client, broker_url, uid):
    fill(broker_url, uid, 2)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    receiver = client.conn.create_receiver(f"/amq/queue/{uid}", credit=2)
    first, second = client.declare(), client.declare()
    assert bytes(first.id) != bytes(second.id)
    client.send(first, sender, b"from first")
    client.send(second, sender, b"from second")
    for txn in (first, second):
        receiver.receive(timeout=5)
        txn.accept(receiver.fetcher.unsettled.popleft())
    receiver.link.flow(0)
    assert client.discharge(second, commit=True) == "committed"  # takes m1, adds its send
    assert client.discharge(first, commit=False) == "aborted"  # m0 released, its send dropped
    receiver.close()
    assert take_all(broker_url, uid) == [b"m0", b"from second"]


def test_a_delivery_acquired_in_one_transaction_and_retired_in_another_rolls_the_second_back(
    ctl, broker_url, uid, rabbitish_broker
):
    fill(broker_url, uid, 1)
    ctl.receiver(1, uid)
    acquiring = ctl.declare()
    ctl.raw.send(
        encode_frame(
            0,
            Attach(
                name="txn-ctl-2",
                handle=UInt(5),
                role=False,
                source=Source(),
                target=Coordinator(capabilities=[Symbol("amqp:local-transactions")]),
            ),
        )
    )
    ctl.expect(Attach)
    retiring = control_on(ctl, 5, Declare())
    assert isinstance(retiring, Declared)
    retiring_id = bytes(retiring.txn_id)
    ctl.flow(1, 1, properties={Symbol("txn-id"): acquiring})
    transfer = ctl.expect(Transfer)
    assert transfer.state == TransactionalState(txn_id=acquiring)
    retire = Disposition(
        role=True,
        first=transfer.delivery_id,
        state=TransactionalState(txn_id=retiring_id, outcome=Accepted()),
    )
    ctl.raw.send(encode_frame(0, retire))
    detach = ctl.expect(Detach)
    assert int(detach.handle) == 5  # the retiring transaction's control link
    assert str(detach.error.condition) == "amqp:transaction:rollback"
    open_ids = {tx.id.encode() for tx in rabbitish_broker.node.transactions}
    assert retiring_id not in open_ids and acquiring in open_ids
    # The acquiring transaction lives on; rolled back, its acquisition goes back in place.
    assert isinstance(ctl.control(Discharge(txn_id=acquiring, fail=True)), Accepted)
    ctl.flow(1, 0, delivered=1)
    assert take_all(broker_url, uid) == [b"m0"]


def control_on(ctl: Controller, handle: int, body) -> object:
    """A declare or discharge on another control link of the raw controller."""
    delivery_id = ctl.transfer(handle, encode(AmqpValue(value=body)))
    answer = ctl.expect(Disposition)
    assert int(answer.first) == delivery_id and answer.settled
    return answer.state


# ---------------------------------------------------------------------- promotable transactions


def test_promotable_transactions_are_refused(client):
    link = client.conn.container.create_sender(client.conn.conn, None, name="txn-promotable")
    link.target.type = Terminus.COORDINATOR
    link.target.capabilities.put_array(False, proton.Data.SYMBOL)
    link.target.capabilities.enter()
    link.target.capabilities.put_symbol(symbol("amqp:local-transactions"))
    link.target.capabilities.put_symbol(symbol("amqp:promotable-transactions"))
    link.target.capabilities.exit()
    with pytest.raises(LinkDetached):
        client.conn.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, msg="refusal")
    assert link.remote_condition.name == "amqp:not-implemented"
    # The session goes on: a plain control link on it still works.
    txn = client.declare()
    assert client.discharge(txn, commit=True) == "committed"


def test_promotable_transactions_in_the_attach_desired_capabilities_are_refused(ctl):
    ctl.raw.send(
        encode_frame(
            0,
            Attach(
                name="txn-ctl-2",
                handle=UInt(5),
                role=False,
                source=Source(),
                target=Coordinator(capabilities=[Symbol("amqp:local-transactions")]),
                desired_capabilities=[Symbol("amqp:promotable-transactions")],
            ),
        )
    )
    attached = ctl.expect(Attach)
    assert attached.target is None  # refused, as the spec refuses a link
    detach = ctl.expect(Detach)
    assert int(detach.handle) == 5 and detach.closed
    assert str(detach.error.condition) == "amqp:not-implemented"
    assert isinstance(ctl.control(Discharge(txn_id=ctl.declare(), fail=False)), Accepted)


def test_a_transfer_left_incomplete_by_a_detach_fails_the_transaction(ctl, broker_url, uid):
    fill(broker_url, uid, 0)
    ctl.begin(1)
    ctl.sender(1, uid, channel=1)
    ctl.sender(2, uid)
    txn_id = ctl.declare()
    ctl.transfer(2, message(b"whole"), state=TransactionalState(txn_id=txn_id))
    ctl.expect(Disposition)
    ctl.transfer(1, b"\x00Su", channel=1, state=TransactionalState(txn_id=txn_id), more=True)
    ctl.raw.send(encode_frame(1, Detach(handle=UInt(1), closed=True)))
    ctl.expect(Detach)
    # Further work in it is refused with the reason ...
    ctl.transfer(2, message(b"late"), state=TransactionalState(txn_id=txn_id))
    detach = ctl.expect(Detach)
    assert int(detach.handle) == 2
    assert str(detach.error.condition) == "amqp:transaction:rollback"
    # ... and so is its commit; nothing it held is applied.
    state = ctl.control(Discharge(txn_id=txn_id, fail=False))
    assert str(state.error.condition) == "amqp:transaction:rollback"
    assert take_all(broker_url, uid) == []
    again = ctl.control(Discharge(txn_id=txn_id, fail=True))  # discharged: the id is gone
    assert str(again.error.condition) == "amqp:transaction:unknown-id"
