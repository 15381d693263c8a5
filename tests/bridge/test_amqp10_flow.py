"""Link flow control with raw frames: drain uses up the credit when the queue runs dry and
echoes it, a settled-mode receiver leaves nothing outstanding, unsettled deliveries go back
in place when the connection goes, and unsettled sends are accepted in ranges."""

from __future__ import annotations

import pika
from rabbitish.bridge.codec import UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Begin,
    Data,
    Disposition,
    Flow,
    Source,
    Target,
    Transfer,
)

from tests.support.amqp10 import Raw
from tests.support.queues import fill, ready
from tests.support.waiting import wait_until

WINDOWS = {"incoming_window": UInt(100), "outgoing_window": UInt(100)}


def receiver(broker_url: str, queue: str, settle_mode: int | None = None) -> Raw:
    client = Raw(broker_url)
    client.sasl_plain()
    client.open()
    client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
    assert isinstance(client.frame().body, Begin)
    attach = Attach(
        name="r",
        handle=UInt(0),
        role=True,
        snd_settle_mode=settle_mode,
        source=Source(address=f"/queue/{queue}", durable=UInt(1)),  # as publish() declared it
    )
    client.send(encode_frame(0, attach))
    assert isinstance(client.frame().body, Attach)
    return client


def flow(credit: int, drain: bool = False) -> bytes:
    return encode_frame(
        0,
        Flow(
            next_incoming_id=UInt(0),
            next_outgoing_id=UInt(0),
            handle=UInt(0),
            delivery_count=UInt(0),
            link_credit=UInt(credit),
            drain=drain,
            **WINDOWS,
        ),
    )


def test_drain_uses_up_the_credit_when_the_queue_runs_dry(broker_url, uid):
    fill(broker_url, uid, 2)
    client = receiver(broker_url, uid)
    try:
        client.send(flow(5, drain=True))
        got = [client.frame().body for _ in range(3)]
        assert [type(b).__name__ for b in got] == ["Transfer", "Transfer", "Flow"]
        echoed = got[2]
        assert (int(echoed.delivery_count), int(echoed.link_credit), echoed.drain) == (5, 0, True)
    finally:
        client.close()


def test_unsettled_deliveries_go_back_in_place_when_the_connection_goes(broker_url, uid):
    fill(broker_url, uid, 3)
    client = receiver(broker_url, uid)
    client.send(flow(3))
    transfers = [client.frame().body for _ in range(3)]
    assert all(isinstance(t, Transfer) and not t.settled for t in transfers)
    settle_first = Disposition(role=True, first=UInt(0), settled=True, state=Accepted())
    client.send(encode_frame(0, settle_first))
    client.close()
    wait_until(lambda: ready(broker_url, uid) == 2, message="deliveries back in the queue")
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = conn.channel()
    bodies = []
    for _ in range(2):
        method, _props, body = ch.basic_get(uid, auto_ack=True)
        bodies.append((body, method.redelivered))
    conn.close()
    assert bodies == [(b"m1", True), (b"m2", True)]


def test_a_settled_mode_receiver_gets_settled_transfers(broker_url, uid):
    fill(broker_url, uid, 2)
    client = receiver(broker_url, uid, settle_mode=1)
    try:
        client.send(flow(2))
        transfers = [client.frame().body for _ in range(2)]
        assert all(t.settled for t in transfers)
        assert ready(broker_url, uid) == 0
    finally:
        client.close()


def test_unsettled_sends_arriving_together_are_accepted_in_one_disposition(broker_url, uid):
    client = Raw(broker_url)
    client.sasl_plain()
    client.open()
    client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
    assert isinstance(client.frame().body, Begin)
    attach = Attach(name="s", handle=UInt(0), role=False, target=Target(address=f"/queue/{uid}"))
    client.send(encode_frame(0, attach))
    assert isinstance(client.frame().body, Attach)
    assert int(client.frame().body.link_credit) > 3
    try:
        client.send(
            b"".join(
                encode_frame(
                    0,
                    Transfer(
                        handle=UInt(0),
                        delivery_id=UInt(i),
                        delivery_tag=b"%d" % i,
                        message_format=UInt(0),
                    ),
                    encode(Data(value=b"m%d" % i)),
                )
                for i in range(3)
            )
        )
        accepted = client.frame().body
        assert isinstance(accepted, Disposition)
        assert (int(accepted.first), int(accepted.last), accepted.settled) == (0, 2, True)
        assert isinstance(accepted.state, Accepted)
        assert ready(broker_url, uid) == 3
    finally:
        client.close()
