"""AMQP 1.0 transactions with a real client (qpid-proton's transaction controller): declare,
transactional sends and accepts, commit and abort, seen by 0-9-1 clients on the same engine."""

from __future__ import annotations

import pytest

from tests.support.queues import fill, ready, take_all

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402

from tests.support.proton_tx import TxClient  # noqa: E402


@pytest.fixture
def client(broker_url):
    made = TxClient(broker_url)
    yield made
    made.close()


def test_the_coordinator_offers_local_transactions(client):
    txn = client.declare()
    capabilities = txn.txn_ctrl.remote_target.capabilities
    capabilities.rewind()
    capabilities.next()
    capabilities.enter()
    offered = []
    while capabilities.next():
        offered.append(str(capabilities.get_object()))
    assert "amqp:local-transactions" in offered
    assert "amqp:multi-txns-per-ssn" in offered
    assert txn.id  # a binary txn-id


def test_a_commit_makes_sends_to_two_queues_visible_at_once(client, broker_url, uid):
    first = client.conn.create_sender(f"/queue/{uid}-a")
    second = client.conn.create_sender(f"/queue/{uid}-b")
    txn = client.declare()
    for sender, body in ((first, b"a1"), (second, b"b1"), (first, b"a2")):
        delivery = client.send(txn, sender, body)
        assert delivery.remote_state == 0x34  # transactional-state, outcome accepted
    assert ready(broker_url, f"{uid}-a") == 0
    assert ready(broker_url, f"{uid}-b") == 0
    assert client.discharge(txn, commit=True) == "committed"
    assert take_all(broker_url, f"{uid}-a") == [b"a1", b"a2"]
    assert take_all(broker_url, f"{uid}-b") == [b"b1"]


def test_an_abort_drops_the_sends(client, broker_url, uid):
    sender = client.conn.create_sender(f"/queue/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"never")
    assert client.discharge(txn, commit=False) == "aborted"
    assert ready(broker_url, uid) == 0
    sender.send(Message(body=b"after", inferred=True))  # the link still works outside it
    assert take_all(broker_url, uid) == [b"after"]


def accept_three_in_a_transaction(client, broker_url: str, uid: str):
    """Three messages received and accepted in a new transaction: (receiver, transaction)."""
    fill(broker_url, uid, 3)
    receiver = client.conn.create_receiver(f"/amq/queue/{uid}", credit=3)
    txn = client.declare()
    for _ in range(3):
        receiver.receive(timeout=5)
        txn.accept(receiver.fetcher.unsettled.popleft())
    return receiver, txn


def test_accepts_in_a_transaction_apply_at_commit(client, broker_url, uid, rabbitish_broker):
    receiver, txn = accept_three_in_a_transaction(client, broker_url, uid)
    receiver.close()  # the receiver goes: accepts staged in the txn still hold the messages
    queue = rabbitish_broker.node.vhosts["/"].queues[uid]
    assert ready(broker_url, uid) == 0
    assert queue.unacked == 3  # staged: held unsettled by the transaction, not yet removed
    assert client.discharge(txn, commit=True) == "committed"
    assert ready(broker_url, uid) == 0
    assert queue.unacked == 0  # applied: removed for good


def test_accepts_in_an_aborted_transaction_leave_the_messages(client, broker_url, uid):
    receiver, txn = accept_three_in_a_transaction(client, broker_url, uid)
    receiver.link.flow(0)
    assert client.discharge(txn, commit=False) == "aborted"  # proton releases them
    receiver.close()
    assert take_all(broker_url, uid) == [b"m0", b"m1", b"m2"]


def test_a_transaction_names_one_engine_transaction(client, rabbitish_broker):
    txn = client.declare()
    open_ids = {tx.id.encode() for tx in rabbitish_broker.node.transactions}
    assert bytes(txn.id) in open_ids
    assert client.discharge(txn, commit=True) == "committed"
    assert bytes(txn.id) not in {tx.id.encode() for tx in rabbitish_broker.node.transactions}


def test_closing_the_connection_rolls_back(broker_url, uid, rabbitish_broker):
    client = TxClient(broker_url)
    sender = client.conn.create_sender(f"/queue/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"lost")
    client.close()
    open_ids = {tx.id.encode() for tx in rabbitish_broker.node.transactions}
    assert bytes(txn.id) not in open_ids
    assert ready(broker_url, uid) == 0
