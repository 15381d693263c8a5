"""--transaction-timeout on AMQP 1.0 with qpid-proton: a declared transaction whose work stays
idle past the timeout is rolled back; its next use, or its commit discharge, gets
`amqp:transaction:timeout`; a rollback discharge is still accepted. An empty one is never
timed out."""

from __future__ import annotations

import time

import pytest

from rabbitish.testing import running_broker
from tests.support.queues import fill, ready, take_all

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Delivery, Message  # noqa: E402
from proton.utils import LinkDetached  # noqa: E402

from tests.support.proton_tx import TxClient  # noqa: E402

TIMEOUT = 0.3  # seconds


@pytest.fixture(scope="module")
def broker():
    with running_broker(transaction_timeout=TIMEOUT) as made:
        yield made


@pytest.fixture
def client(broker):
    made = TxClient(broker.url)
    yield made
    made.close()


def rolled_back(broker, txn) -> bool:
    """The broker no longer holds the transaction open (read from its registry)."""
    return bytes(txn.id).decode() not in {tx.id for tx in broker.node.transactions}


def pump_until(client, predicate, timeout: float = 5.0) -> None:
    """Run the client's events in short turns until `predicate` (about the broker) holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        try:
            client.conn.wait(predicate, timeout=0.05)
        except proton.Timeout:
            pass


def staged(broker, txn) -> int:
    """Settlements the broker holds staged in the transaction."""
    tx = broker.node.transactions.get(bytes(txn.id).decode())
    return tx.counts()["settlements"] if tx is not None else 0


def test_an_idle_transaction_is_rolled_back_and_its_commit_times_out(client, broker, uid):
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"staged")
    pump_until(client, lambda: rolled_back(broker, txn))
    assert client.discharge(txn, commit=True) == "commit failed"
    assert txn._discharge.remote_state == Delivery.REJECTED
    assert txn._discharge.remote.condition.name == "amqp:transaction:timeout"
    assert ready(broker.url, uid) == 0


def test_the_next_use_of_a_timed_out_transaction_is_refused(client, broker, uid):
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    txn = client.declare()
    client.send(txn, sender, b"staged")
    pump_until(client, lambda: rolled_back(broker, txn))
    txn.send(sender.link, Message(body=b"late", inferred=True))
    with pytest.raises(LinkDetached):
        client.conn.wait(lambda: False, msg="detach")
    assert sender.link.remote_condition.name == "amqp:transaction:timeout"
    assert client.discharge(txn, commit=False) == "aborted"  # a rollback is always possible
    assert ready(broker.url, uid) == 0


def test_accepts_of_a_timed_out_transaction_leave_the_messages(client, broker, uid):
    fill(broker.url, uid, 2)
    receiver = client.conn.create_receiver(f"/amq/queue/{uid}", credit=2)
    txn = client.declare()
    for _ in range(2):
        receiver.receive(timeout=5)
        txn.accept(receiver.fetcher.unsettled.popleft())
    receiver.link.flow(0)
    # The accepts reach the broker (staged), then the transaction idles past the timeout.
    pump_until(client, lambda: rolled_back(broker, txn) or staged(broker, txn) == 2)
    pump_until(client, lambda: rolled_back(broker, txn))
    assert client.discharge(txn, commit=True) == "commit failed"  # proton releases them
    receiver.close()
    assert take_all(broker.url, uid) == [b"m0", b"m1"]


def test_an_empty_transaction_and_one_in_use_are_not_timed_out(client, broker, uid):
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    empty = client.declare()
    witness = client.declare()
    client.send(witness, sender, b"idle")
    pump_until(client, lambda: rolled_back(broker, witness))
    client.send(empty, sender, b"committed")
    assert client.discharge(empty, commit=True) == "committed"
    assert take_all(broker.url, uid) == [b"committed"]
