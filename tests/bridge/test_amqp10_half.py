"""Half messages from an AMQP 1.0 client: application-properties carry x-half-txn, and a
message to /exchange/amq.rabbitish.txn/commit decides, as with 0-9-1."""

from __future__ import annotations

import pytest

from rabbitish.testing import call_in_loop, running_broker
from tests.support.amqp10 import proton_url
from tests.support.clients import pika_channel
from tests.support.half import bodies, ready

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

from tests.support.proton_tx import Controller  # noqa: E402


def decide(conn: BlockingConnection, txn: str, outcome: str) -> None:
    """The decision, sent by a 1.0 client to /exchange/amq.rabbitish.txn/OUTCOME."""
    decision = conn.create_sender(f"/exchange/amq.rabbitish.txn/{outcome}")
    decision.send(Message(body=b"", properties={"x-half-txn": txn}, inferred=True))


def commit_when_still_held(conn: BlockingConnection, url: str, txn: str) -> None:
    """Nothing of `txn` is visible yet; then the commit decision."""
    with pika_channel(url) as ch:
        assert ready(ch, txn) == 0
    decide(conn, txn, "commit")


@pytest.fixture
def held(rabbitish_broker):
    """The undecided half transactions of the default vhost, read on the broker's loop."""

    def read(_url: str) -> list:
        return call_in_loop(rabbitish_broker, lambda: rabbitish_broker.node.vhosts["/"].half.list())

    return read


def test_a_1_0_client_publishes_half_messages_and_commits_them(broker_url, uid):
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    try:
        sender = conn.create_sender(f"/queue/{uid}")
        for n in range(2):
            props = {"x-half-txn": uid}
            sender.send(Message(body=str(n).encode(), properties=props, inferred=True))
        commit_when_still_held(conn, broker_url, uid)
    finally:
        conn.close()
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == [b"0", b"1"]


def test_a_1_0_rollback_discards_the_half_messages(broker_url, uid):
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    try:
        sender = conn.create_sender(f"/queue/{uid}")
        sender.send(Message(body=b"never", properties={"x-half-txn": uid}, inferred=True))
        decide(conn, uid, "rollback")
        sender.send(Message(body=b"plain", inferred=True))
    finally:
        conn.close()
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == [b"plain"]


def test_half_publishes_in_a_1_0_transaction_are_held_from_its_discharge(broker_url, uid, held):
    """Posted in a coordinator transaction: nothing is held until the discharge commits, then
    the messages are half (still invisible) until the decision."""
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    try:
        sender = conn.create_sender(f"/queue/{uid}")
        controller = Controller()
        txn = conn.container.declare_transaction(conn.conn, handler=controller)
        conn.wait(lambda: controller.events, msg="declare")
        message = Message(body=b"in txn", properties={"x-half-txn": uid}, inferred=True)
        delivery = txn.send(sender.link, message)
        conn.wait(lambda: delivery.remote_state, msg="transactional send")
        # Only this test's id: the broker is shared, other tests may hold ids of their own.
        assert [v.id for v in held(broker_url) if v.id == uid] == []  # staged, not yet half
        controller.events.clear()
        txn.commit()
        conn.wait(lambda: controller.events, msg="discharge")
        assert controller.events == ["committed"]
        assert [v.id for v in held(broker_url) if v.id == uid] == [uid]
        commit_when_still_held(conn, broker_url, uid)
    finally:
        conn.close()
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == [b"in txn"]


def test_a_1_0_receiver_reads_check_messages(uid):
    with running_broker(half_check_interval=0.05, half_check_max=100) as broker:
        conn = BlockingConnection(proton_url(broker.url), timeout=5)
        try:
            checks = f"{uid}-checks"
            receiver = conn.create_receiver(f"/queue/{checks}", credit=1)
            sender = conn.create_sender(f"/queue/{uid}")
            props = {"x-half-txn": uid, "x-check-queue": checks, "x-check-immunity": 0}
            sender.send(Message(body=b"job", properties=props, inferred=True))
            check = receiver.receive(timeout=5)
            receiver.accept()
            assert check.properties["x-half-txn"] == uid
            assert check.properties["x-check-count"] == 1
            assert check.correlation_id == uid
            decision = conn.create_sender("/exchange/amq.rabbitish.txn/commit")
            decision.send(Message(body=b"", properties={"x-half-txn": uid}, inferred=True))
        finally:
            conn.close()
        with pika_channel(broker.url) as ch:
            assert bodies(ch, uid) == [b"job"]
