"""The transaction coordinator with raw frames, for what no client library sends: unknown ids,
settled control messages, a discharge while a transfer is incomplete, bad global ids, a transaction
used from two sessions, transactional acquisition (a flow naming a txn-id) and retirement of
deliveries the client settled."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from rabbitish.bridge.codec import Symbol, UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import (
    Accepted,
    AmqpValue,
    Attach,
    Begin,
    Coordinator,
    Data,
    Declare,
    Declared,
    Detach,
    Discharge,
    Disposition,
    Flow,
    Rejected,
    Source,
    Target,
    TransactionalState,
    Transfer,
)

from tests.support.amqp10 import Raw
from tests.support.queues import fill, take_all

WINDOWS = {"incoming_window": UInt(1000), "outgoing_window": UInt(1000)}
CONTROL = 0  # handle of the coordinator link


class Controller:
    """A raw client with a coordinator link on session 0 (and more sessions on request)."""

    def __init__(self, url: str) -> None:
        self.raw = Raw(url)
        self.raw.sasl_plain()
        self.raw.open()
        self.next_id: dict[int, int] = {}
        self.settled_by_broker: list[Disposition] = []
        self.begin(0)
        self.raw.send(
            encode_frame(
                0,
                Attach(
                    name="txn-ctl",
                    handle=UInt(CONTROL),
                    role=False,
                    source=Source(),
                    target=Coordinator(capabilities=[Symbol("amqp:local-transactions")]),
                ),
            )
        )
        attached = self.expect(Attach)
        assert isinstance(attached.target, Coordinator)
        self.expect(Flow)

    def begin(self, channel: int) -> None:
        self.raw.send(encode_frame(channel, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
        self.expect(Begin)
        self.next_id[channel] = 0

    def expect(self, kind: type) -> Any:
        """The next frame that is not a session or link flow, which must be a `kind`."""
        while True:
            body = self.raw.frame().body
            if isinstance(body, Flow) and kind is not Flow:
                continue
            assert isinstance(body, kind), body
            return body

    def transfer(
        self,
        handle: int,
        payload: bytes,
        channel: int = 0,
        state: Any = None,
        settled: bool | None = None,
        more: bool | None = None,
        new: bool = True,
    ) -> int:
        delivery_id = self.next_id[channel]
        if new:
            self.next_id[channel] += 1
        transfer = Transfer(
            handle=UInt(handle),
            delivery_id=UInt(delivery_id),
            delivery_tag=delivery_id.to_bytes(4, "big"),
            message_format=UInt(0),
            settled=settled,
            more=more,
            state=state,
        )
        self.raw.send(encode_frame(channel, transfer, payload))
        return delivery_id

    def control(self, body: Any, settled: bool | None = None) -> Any:
        """Send a declare or discharge; the outcome the coordinator settles it with."""
        delivery_id = self.transfer(CONTROL, encode(AmqpValue(value=body)), settled=settled)
        answer = self.expect(Disposition)
        while not answer.role:  # rabbitish settling deliveries it sent (a commit's outcomes)
            self.settled_by_broker.append(answer)
            answer = self.expect(Disposition)
        assert int(answer.first) == delivery_id and answer.settled
        return answer.state

    def declare(self) -> bytes:
        state = self.control(Declare())
        assert isinstance(state, Declared)
        return bytes(state.txn_id)

    def sender(self, handle: int, queue: str, channel: int = 0) -> None:
        target = Target(address=f"/amq/queue/{queue}")
        self.raw.send(
            encode_frame(
                channel, Attach(name=f"s{handle}", handle=UInt(handle), role=False, target=target)
            )
        )
        self.expect(Attach)

    def receiver(self, handle: int, queue: str, settle_mode: int | None = None) -> None:
        source = Source(address=f"/amq/queue/{queue}")
        attach = Attach(
            name=f"r{handle}",
            handle=UInt(handle),
            role=True,
            snd_settle_mode=settle_mode,
            source=source,
        )
        self.raw.send(encode_frame(0, attach))
        self.expect(Attach)

    def flow(self, handle: int, credit: int, delivered: int = 0, **fields: Any) -> None:
        """Credit for a receiving link that has had `delivered` transfers so far."""
        flow = Flow(
            next_incoming_id=UInt(0),
            next_outgoing_id=UInt(self.next_id[0]),
            handle=UInt(handle),
            delivery_count=UInt(delivered),
            link_credit=UInt(credit),
            **WINDOWS,
            **fields,
        )
        self.raw.send(encode_frame(0, flow))

    def close(self) -> None:
        self.raw.close()


def message(body: bytes) -> bytes:
    return encode(Data(body))


@pytest.fixture
def ctl(broker_url):
    made = Controller(broker_url)
    yield made
    made.close()


def test_discharging_an_unknown_id_is_rejected(ctl):
    state = ctl.control(Discharge(txn_id=b"nope", fail=False))
    assert isinstance(state, Rejected)
    assert str(state.error.condition) == "amqp:transaction:unknown-id"


def test_rollback_is_never_refused_and_ends_the_transaction(ctl):
    txn_id = ctl.declare()
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=True)), Accepted)
    again = ctl.control(Discharge(txn_id=txn_id, fail=True))
    assert str(again.error.condition) == "amqp:transaction:unknown-id"


def test_a_declare_with_an_unusable_global_id_is_refused(ctl):
    """A global-id names a transaction branch (tests/bridge/test_amqp10_txn_branches.py); one
    that cannot name a half transaction is refused."""
    state = ctl.control(Declare(global_id=b"x" * 256))
    assert isinstance(state, Rejected)
    assert str(state.error.condition) == "amqp:invalid-field"


def test_a_settled_declare_detaches_the_control_link(ctl):
    ctl.transfer(CONTROL, encode(AmqpValue(value=Declare())), settled=True)
    detach = ctl.expect(Detach)
    assert int(detach.handle) == CONTROL and detach.closed
    assert str(detach.error.condition) == "amqp:illegal-state"


def test_posting_is_accepted_in_the_transaction_and_applied_at_discharge(ctl, broker_url, uid):
    fill(broker_url, uid, 0)
    ctl.sender(1, uid)
    txn_id = ctl.declare()
    delivery_id = ctl.transfer(1, message(b"one"), state=TransactionalState(txn_id=txn_id))
    answer = ctl.expect(Disposition)
    assert int(answer.first) == delivery_id and answer.settled
    assert answer.state == TransactionalState(txn_id=txn_id, outcome=Accepted())
    assert take_all(broker_url, uid) == []
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=False)), Accepted)
    assert take_all(broker_url, uid) == [b"one"]


def test_posting_under_an_unknown_id_detaches_the_link(ctl, broker_url, uid):
    fill(broker_url, uid, 0)
    ctl.sender(1, uid)
    ctl.transfer(1, message(b"x"), state=TransactionalState(txn_id=b"nope"))
    detach = ctl.expect(Detach)
    assert int(detach.handle) == 1
    assert str(detach.error.condition) == "amqp:transaction:unknown-id"
    assert take_all(broker_url, uid) == []


def test_a_discharge_with_an_incomplete_transfer_rolls_back(ctl, broker_url, uid):
    fill(broker_url, uid, 0)
    ctl.sender(1, uid)
    txn_id = ctl.declare()
    ctl.transfer(1, message(b"done"), state=TransactionalState(txn_id=txn_id))
    ctl.expect(Disposition)
    ctl.transfer(1, b"\x00Su", state=TransactionalState(txn_id=txn_id), more=True)
    ctl.transfer(CONTROL, encode(AmqpValue(value=Discharge(txn_id=txn_id, fail=False))))
    detach = ctl.expect(Detach)
    assert int(detach.handle) == CONTROL
    assert str(detach.error.condition) == "amqp:transaction:rollback"
    assert take_all(broker_url, uid) == []


def test_a_transaction_spans_the_sessions_of_its_connection(ctl, broker_url, uid):
    fill(broker_url, uid, 0)
    ctl.begin(1)
    ctl.sender(1, uid, channel=1)
    txn_id = ctl.declare()
    ctl.transfer(1, message(b"from session 1"), channel=1, state=TransactionalState(txn_id=txn_id))
    ctl.expect(Disposition)
    assert take_all(broker_url, uid) == []
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=False)), Accepted)
    assert take_all(broker_url, uid) == [b"from session 1"]


def test_detaching_the_control_link_rolls_back(ctl, broker_url, uid, rabbitish_broker):
    fill(broker_url, uid, 0)
    ctl.sender(1, uid)
    txn_id = ctl.declare()
    ctl.transfer(1, message(b"lost"), state=TransactionalState(txn_id=txn_id))
    ctl.expect(Disposition)
    ctl.raw.send(encode_frame(0, Detach(handle=UInt(CONTROL), closed=True)))
    ctl.expect(Detach)
    assert txn_id.decode() not in {tx.id for tx in rabbitish_broker.node.transactions}
    assert take_all(broker_url, uid) == []


@pytest.mark.parametrize("settle_mode", [None, 1], ids=["unsettled", "settled"])
def test_transactional_acquisition(ctl, broker_url, uid, settle_mode):
    fill(broker_url, uid, 2)
    ctl.receiver(1, uid, settle_mode)
    txn_id = ctl.declare()
    ctl.flow(1, 2, properties={Symbol("txn-id"): txn_id})
    transfers = [ctl.expect(Transfer) for _ in range(2)]
    assert all(t.state == TransactionalState(txn_id=txn_id) for t in transfers)
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=True)), Accepted)
    assert take_all(broker_url, uid) == [b"m0", b"m1"]  # back in place

    fill(broker_url, uid, 2)
    txn_id = ctl.declare()
    ctl.flow(1, 2, delivered=2, properties={Symbol("txn-id"): txn_id})
    transfers = [ctl.expect(Transfer) for _ in range(2)]
    if settle_mode is None:
        first, last = int(transfers[0].delivery_id), int(transfers[1].delivery_id)
        retire = Disposition(
            role=True,
            first=UInt(first),
            last=UInt(last),
            state=TransactionalState(txn_id=txn_id, outcome=Accepted()),
        )
        ctl.raw.send(encode_frame(0, retire))
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=False)), Accepted)
    assert take_all(broker_url, uid) == []
    if settle_mode is None:  # the applied outcome settles the deliveries for the client
        settled = [(int(d.first), d.state) for d in ctl.settled_by_broker]
        assert settled == [(first, Accepted()), (last, Accepted())]


def test_deliveries_the_client_settled_in_a_rolled_back_transaction_go_back(ctl, broker_url, uid):
    fill(broker_url, uid, 2)
    ctl.receiver(1, uid)
    ctl.flow(1, 2)
    transfers = [ctl.expect(Transfer) for _ in range(2)]
    txn_id = ctl.declare()
    retire = Disposition(
        role=True,
        first=transfers[0].delivery_id,
        last=transfers[1].delivery_id,
        settled=True,
        state=TransactionalState(txn_id=txn_id, outcome=Accepted()),
    )
    ctl.raw.send(encode_frame(0, retire))
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=True)), Accepted)
    ctl.flow(1, 0, delivered=2)  # no more credit: the released messages stay in the queue
    assert sorted(take_all(broker_url, uid)) == [b"m0", b"m1"]


def test_deliveries_left_unsettled_in_a_rolled_back_transaction_stay_with_the_client(
    ctl, broker_url, uid
):
    fill(broker_url, uid, 1)
    ctl.receiver(1, uid)
    ctl.flow(1, 1)
    (transfer,) = [ctl.expect(Transfer)]
    txn_id = ctl.declare()
    retire = Disposition(
        role=True,
        first=transfer.delivery_id,
        state=TransactionalState(txn_id=txn_id, outcome=Accepted()),
    )
    ctl.raw.send(encode_frame(0, retire))
    assert isinstance(ctl.control(Discharge(txn_id=txn_id, fail=True)), Accepted)
    # Still the client's to settle: a plain accept now takes the message away.
    accept = Disposition(role=True, first=transfer.delivery_id, settled=True, state=Accepted())
    ctl.raw.send(encode_frame(0, accept))
    ctl.raw.send(encode_frame(0, Detach(handle=UInt(1), closed=True)))
    ctl.expect(Detach)
    assert take_all(broker_url, uid) == []


def test_a_commit_a_queue_refuses_is_rejected_and_rolled_back(ctl, broker_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    arguments = {"x-max-length": 1, "x-overflow": "reject-publish"}
    conn.channel().queue_declare(uid, durable=True, arguments=arguments)
    conn.close()
    ctl.raw.send(
        encode_frame(
            0,
            Attach(
                name="s1", handle=UInt(1), role=False, target=Target(address=f"/amq/queue/{uid}")
            ),
        )
    )
    ctl.expect(Attach)
    txn_id = ctl.declare()
    for body in (b"a", b"b"):
        ctl.transfer(1, message(body), state=TransactionalState(txn_id=txn_id))
        ctl.expect(Disposition)
    state = ctl.control(Discharge(txn_id=txn_id, fail=False))
    assert isinstance(state, Rejected)
    assert str(state.error.condition) == "amqp:transaction:rollback"
    assert take_all(broker_url, uid) == []
