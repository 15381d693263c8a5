"""AMQP 1.0 links on the engine, with a real client (qpid-proton): sending to and receiving
from queues and exchanges by RabbitMQ's 3.x addresses, outcomes, and messages crossing between
AMQP 1.0 and 0-9-1 clients. Tests taking `amqp_url` also run against RabbitMQ's 1.0 plugin."""

from __future__ import annotations

import pika
import pytest

from tests.support.amqp10 import proton_url

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402


def body_of(receiver, timeout: float = 5) -> bytes:
    """The next message's body, copied while the message is alive (proton hands out a view
    into the message)."""
    message = receiver.receive(timeout=timeout)
    return bytes(message.body)


@pytest.fixture
def amqp10(amqp_url):
    made = []

    def connect():
        made.append(BlockingConnection(proton_url(amqp_url), timeout=5))
        return made[-1]

    yield connect
    for conn in made:
        conn.close()


@pytest.mark.rabbitmq
def test_send_to_a_queue_and_receive_from_it(amqp10, uid):
    conn = amqp10()
    sender = conn.create_sender(f"/queue/{uid}")
    for i in range(3):
        sender.send(Message(body=f"m{i}".encode(), durable=True, inferred=True))
    receiver = conn.create_receiver(f"/queue/{uid}", credit=10)
    got = []
    for _ in range(3):
        message = receiver.receive(timeout=5)
        got.append(bytes(message.body))
        receiver.accept()
    assert got == [b"m0", b"m1", b"m2"]


def test_a_released_message_goes_back_to_the_head(broker_url, uid):
    """rabbitish only: RabbitMQ 3.10's plugin does not redeliver it on this link."""
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    sender = conn.create_sender(f"/queue/{uid}")
    sender.send(Message(body=b"one", inferred=True))
    sender.send(Message(body=b"two", inferred=True))
    receiver = conn.create_receiver(f"/queue/{uid}", credit=1)
    assert body_of(receiver) == b"one"
    receiver.release()  # back at the head; "two" is already on its way (credit was topped up)
    assert body_of(receiver) == b"two"
    receiver.accept()
    assert body_of(receiver) == b"one"
    receiver.accept()
    conn.close()


@pytest.mark.rabbitmq
def test_1_0_and_0_9_1_clients_exchange_messages(amqp10, amqp_url, broker_url, uid):
    on_rabbitish = amqp_url == broker_url
    conn = amqp10()
    pika_conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = pika_conn.channel()
        sender = conn.create_sender(
            f"/queue/{uid}"
        )  # declares the queue (transient: the terminus is not durable)
        sender.send(
            Message(
                body=b"from 1.0",
                durable=True,
                priority=7,
                id="m-1",
                correlation_id="c-1",
                content_type="text/plain",
                properties={"color": "red", "size": 3},
                inferred=True,
            )
        )
        _method, props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"from 1.0"
        assert (props.delivery_mode, props.priority) == (2, 7)
        assert (props.message_id, props.correlation_id) == ("m-1", "c-1")
        assert props.content_type == "text/plain"
        if on_rabbitish:
            # application-properties become plain headers (RabbitMQ 3.10 keeps them encoded in
            # an x-amqp-1.0-app-properties header instead).
            assert props.headers == {"color": "red", "size": 3}
        ch.basic_publish(
            "",
            uid,
            b"from 0-9-1",
            pika.BasicProperties(
                delivery_mode=2,
                message_id="m-2",
                content_type="application/json",
                headers={"k": "v"},
            ),
        )
        receiver = conn.create_receiver(f"/queue/{uid}", credit=1)
        message = receiver.receive(timeout=5)
        receiver.accept()
        assert bytes(message.body) == b"from 0-9-1" and message.durable
        assert (message.id, message.content_type) == ("m-2", "application/json")
        if on_rabbitish:
            assert message.properties == {"k": "v"}
    finally:
        pika_conn.close()


@pytest.mark.rabbitmq
def test_send_to_an_exchange_with_a_key(amqp10, amqp_url, uid):
    pika_conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = pika_conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.queue_bind(uid, "amq.direct", "k1")
        conn = amqp10()
        conn.create_sender("/exchange/amq.direct/k1").send(Message(body=b"routed", inferred=True))
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"routed"
    finally:
        pika_conn.close()


def test_a_body_that_is_not_one_data_section_travels_whole(amqp10, uid):
    conn = amqp10()
    conn.create_sender(f"/queue/{uid}").send(Message(body={"a": 1, "b": [1, 2]}))
    receiver = conn.create_receiver(f"/queue/{uid}", credit=1)
    message = receiver.receive(timeout=5)
    receiver.accept()
    assert message.body == {"a": 1, "b": [1, 2]}


def test_a_5_mib_message_crosses_in_many_frames(amqp10, uid):
    conn = amqp10()
    body = bytes(range(256)) * (5 * 4096)
    conn.create_sender(f"/queue/{uid}").send(Message(body=body, inferred=True))
    receiver = conn.create_receiver(f"/queue/{uid}", credit=1)
    message = receiver.receive(timeout=10)
    receiver.accept()
    assert bytes(message.body) == body


def test_a_backlog_larger_than_the_output_buffer_arrives_whole(amqp10, uid):
    """More than the connection's output limit (4 MiB) in flight: delivery pauses while the
    socket drains and resumes, nothing lost or reordered."""
    conn = amqp10()
    sender = conn.create_sender(f"/queue/{uid}")
    for i in range(600):
        sender.send(Message(body=i.to_bytes(4, "big") * 4096, inferred=True))  # 16 KiB
    receiver = conn.create_receiver(f"/queue/{uid}", credit=600)
    got = []
    for _ in range(600):
        message = receiver.receive(timeout=10)  # keep it: its body is a view into it
        got.append(int.from_bytes(bytes(message.body)[:4], "big"))
        receiver.accept()
    assert got == list(range(600))


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("address", "exchange", "key"),
    [
        ("/exchange/amq.direct/{uid}", "amq.direct", "{uid}"),
        ("/topic/{uid}.*", "amq.topic", "{uid}.x"),
    ],
)
def test_a_receiver_on_an_exchange_address_gets_its_own_bound_queue(
    amqp10, amqp_url, uid, address, exchange, key
):
    conn = amqp10()
    receiver = conn.create_receiver(address.format(uid=uid), credit=5)
    pika_conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        pika_conn.channel().basic_publish(exchange, key.format(uid=uid), b"to the exchange")
        assert body_of(receiver) == b"to the exchange"
        receiver.accept()
    finally:
        pika_conn.close()


def test_rabbitmq_4_address_forms(broker_url, uid):
    """rabbitish only: RabbitMQ 3.10's plugin knows the 3.x forms alone. /queues/NAME names
    a queue that exists (tests/bridge/test_amqp10_rabbitmq4_addresses.py: a missing one)."""
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    conn.create_receiver(f"/queue/{uid}", credit=0).close()  # declares it
    conn.create_sender(f"/queues/{uid}").send(Message(body=b"4.x", inferred=True))
    receiver = conn.create_receiver(f"/amq/queue/{uid}", credit=1)
    assert body_of(receiver) == b"4.x"
    receiver.accept()
    listener = conn.create_receiver(f"/exchange/amq.direct/{uid}-k", credit=1)
    conn.create_sender(f"/exchanges/amq.direct/{uid}-k").send(Message(body=b"via", inferred=True))
    assert body_of(listener) == b"via"
    listener.accept()
    conn.close()
