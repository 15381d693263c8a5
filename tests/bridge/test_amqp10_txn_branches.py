"""Transaction branches over AMQP 1.0 with qpid-proton: a declare with a `global-id` starts a
branch whose commit discharge is refused until a discharge carrying `rabbitish:prepare` (in its
message annotations or application properties) prepares it; the prepared branch is then the
half transaction named by the global-id, listed and decided through the management API. Plain
local transactions are unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rabbitish.app import Broker
from rabbitish.testing import running_broker
from tests.support.management import Api
from tests.support.queues import fill, ready, take_all

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Delivery, Described, Message, symbol  # noqa: E402
from proton.reactor import Transaction  # noqa: E402

from tests.support.proton_tx import Controller as TxEvents  # noqa: E402
from tests.support.proton_tx import TxClient  # noqa: E402


class Branch(Transaction):
    """proton's transaction with a global-id in its declare, and a prepare discharge."""

    def __init__(self, txn_ctrl, handler, global_id) -> None:
        self.global_id = global_id
        super().__init__(txn_ctrl, handler)

    def declare(self) -> None:
        self._declare = self._send_ctrl(symbol("amqp:declare:list"), [self.global_id])

    def prepare(self, section: str = "annotations") -> None:
        self.failed = False
        body = Described(symbol("amqp:discharge:list"), [self.id, False])
        if section == "annotations":
            message = Message(body=body, annotations={symbol("rabbitish:prepare"): True})
        else:
            message = Message(body=body, properties={"rabbitish:prepare": True})
        self._discharge = self.txn_ctrl.send(message)
        self._discharge.transaction = self


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    data = tmp_path_factory.mktemp("branches")
    with running_broker(management=True, data_dir=str(data)) as running:
        yield running


@pytest.fixture(scope="module")
def api(broker: Broker) -> Api:
    return Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")


@pytest.fixture
def client(broker):
    made = TxClient(broker.url)
    yield made
    made.close()


def branch(client: TxClient, global_id) -> Branch:
    """A branch declared on the connection's control link."""
    client.declare()  # proton makes the control link with its first transaction
    events = TxEvents()
    made = Branch(client.conn.conn._txn_ctrl, events, global_id)
    client.conn.wait(lambda: events.events, msg="declare")
    made.events = events
    return made


def prepare(client: TxClient, txn: Branch, section: str = "annotations") -> str:
    txn.events.events.clear()
    txn.prepare(section)
    client.conn.wait(lambda: txn.events.events, msg="prepare")
    return txn.events.events[0]


def listed(api: Api, global_id: str) -> dict | None:
    return next((t for t in api.ok("GET", "/api/half-transactions") if t["id"] == global_id), None)


@pytest.mark.parametrize("section", ["annotations", "properties"])
def test_a_branch_is_prepared_then_committed_through_the_management_api(
    client, api, broker, uid, section
):
    fill(broker.url, f"{uid}-in", 2)
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    receiver = client.conn.create_receiver(f"/amq/queue/{uid}-in", credit=1)
    txn = branch(client, uid.encode())
    assert txn.events.events == ["declared"]
    client.send(txn, sender, b"posted")
    # A commit discharge is refused: a branch must be prepared; it stays open. (proton then
    # releases what it accepted in the transaction, so the accept comes after.)
    assert client.discharge(txn, commit=True) == "commit failed"
    assert txn._discharge.remote.condition.name == "amqp:precondition-failed"
    receiver.receive(timeout=5)
    txn.accept(receiver.fetcher.unsettled.popleft())
    assert prepare(client, txn, section) == "committed"  # accepted: prepared, on disk
    receiver.close()
    held = listed(api, uid)
    assert held is not None and held["prepared"] and held["acks"] == 1
    assert ready(broker.url, uid) == 0 and ready(broker.url, f"{uid}-in") == 1  # m0 locked
    api.ok("POST", f"/api/half-transactions/%2F/{uid}/commit")
    assert take_all(broker.url, uid) == [b"posted"]
    assert take_all(broker.url, f"{uid}-in") == [b"m1"]  # the accepted m0 is gone
    assert listed(api, uid) is None


def test_a_prepared_branch_rolled_back_through_the_api_undoes_its_work(client, api, broker, uid):
    fill(broker.url, f"{uid}-in", 1)
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    receiver = client.conn.create_receiver(f"/amq/queue/{uid}-in", credit=1)
    txn = branch(client, uid)  # a string global-id works too
    client.send(txn, sender, b"never")
    receiver.receive(timeout=5)
    txn.accept(receiver.fetcher.unsettled.popleft())
    assert prepare(client, txn) == "committed"
    receiver.close()
    client.close()  # the prepared branch outlives the connection
    assert listed(api, uid) is not None
    api.ok("POST", f"/api/half-transactions/%2F/{uid}/rollback")
    assert ready(broker.url, uid) == 0
    assert take_all(broker.url, f"{uid}-in") == [b"m0"]  # back in place


def test_a_branch_can_be_rolled_back_before_it_is_prepared(client, api, broker, uid):
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    txn = branch(client, uid)
    client.send(txn, sender, b"dropped")
    assert client.discharge(txn, commit=False) == "aborted"
    assert listed(api, uid) is None and ready(broker.url, uid) == 0


def test_a_global_id_in_use_is_refused(client, api, broker, uid):
    txn = branch(client, uid)
    second = Branch(client.conn.conn._txn_ctrl, TxEvents(), uid)
    client.conn.wait(lambda: second.handler.events, msg="declare")
    assert second.handler.events == ["declare failed"]
    assert second._declare.remote.condition.name == "amqp:precondition-failed"
    assert client.discharge(txn, commit=False) == "aborted"
    bad = Branch(client.conn.conn._txn_ctrl, TxEvents(), b"x" * 256)
    client.conn.wait(lambda: bad.handler.events, msg="declare")
    assert bad._declare.remote.condition.name == "amqp:invalid-field"


def test_a_local_transaction_cannot_be_prepared_and_still_commits(client, api, broker, uid):
    fill(broker.url, uid, 0)
    sender = client.conn.create_sender(f"/amq/queue/{uid}")
    local = client.declare()
    client.send(local, sender, b"local")
    as_branch = Branch.__new__(Branch)  # proton's transaction, with the prepare discharge
    as_branch.__dict__.update(local.__dict__)
    local.events.events.clear()
    as_branch.prepare()
    client.conn.wait(lambda: local.events.events, msg="prepare")
    assert as_branch._discharge.remote_state == Delivery.REJECTED
    assert as_branch._discharge.remote.condition.name == "amqp:precondition-failed"
    assert client.discharge(local, commit=True) == "committed"
    assert take_all(broker.url, uid) == [b"local"]
