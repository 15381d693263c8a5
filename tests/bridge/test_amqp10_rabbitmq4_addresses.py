"""RabbitMQ 4's address rules (docs/amqp10.md "RabbitMQ 4 clients"), in raw frames where the
condition and text matter and with RabbitMQ's own client where a program would meet them: the
anonymous terminus (a sender without a target address; each message's `to` says where it goes),
/queues/NAME naming a queue that must exist, /exchanges/NAME as a target only, RabbitMQ 4's
link-level refusals (the session goes on), the `released` outcome of an unsettled message no
queue takes, and direct reply-to over 1.0 (a volatile dynamic source). rabbitish only: RabbitMQ
3.10's plugin knows none of these (tests/bridge/test_amqp10_errors.py pins what it does)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote, urlparse

import pika
import pytest
from rabbitish.bridge.codec import Symbol, UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import (
    Accepted,
    Attach,
    Begin,
    Data,
    Detach,
    Disposition,
    End,
    Flow,
    Properties,
    Rejected,
    Released,
    Source,
    Target,
    Transfer,
)

from tests.support.amqp10 import Raw, proton_url

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

WINDOWS = {"incoming_window": UInt(100), "outgoing_window": UInt(100)}
SETTLED, UNSETTLED = 1, 0
VOLATILE = Symbol("rabbitmq:volatile-queue")


@pytest.fixture
def session(broker_url):
    """A raw client with an open connection and session 0 begun."""
    clients: list[Raw] = []

    def make() -> Raw:
        client = Raw(broker_url)
        clients.append(client)
        client.sasl_plain()
        client.open()
        client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
        assert isinstance(client.frame().body, Begin)
        return client

    yield make
    for client in clients:
        client.close()


def attach(client: Raw, address: str | None, receiver: bool, handle: int = 0, **fields) -> None:
    if receiver:
        ends = {"source": Source(address=address), "target": Target()}
    else:
        ends = {"source": Source(), "target": Target(address=address)}
        fields.setdefault("initial_delivery_count", UInt(0))
    link = Attach(name=f"link-{handle}", handle=UInt(handle), role=receiver, **ends, **fields)
    client.send(encode_frame(0, link))


def next_frame(client: Raw, kind: type) -> Any:
    """The next frame whose performative is a `kind`, skipping others (flows); an End fails
    the test (the session must go on)."""
    while True:
        frame = client.frame()
        if isinstance(frame.body, kind):
            return frame
        assert not isinstance(frame.body, End), frame.body


def next_of(client: Raw, kind: type) -> Any:
    return next_frame(client, kind).body


def send(client: Raw, delivery_id: int, to: str | None, settled: bool, handle: int = 0) -> None:
    payload = (encode(Properties(to=to)) if to is not None else b"") + encode(Data(b"x"))
    transfer = Transfer(
        handle=UInt(handle),
        delivery_id=UInt(delivery_id),
        delivery_tag=f"tag-{delivery_id}".encode(),
        message_format=UInt(0),
        settled=settled,
    )
    client.send(encode_frame(0, transfer, payload))


def outcome(client: Raw) -> Any:
    disposition = next_of(client, Disposition)
    assert disposition.settled
    return disposition.state


def refused(client: Raw) -> tuple[str, str]:
    """A link refused alone: its attach answered without a terminus on our side, then a
    detach with the error."""
    reply = next_of(client, Attach)
    assert reply.source is None or reply.target is None
    detach = next_of(client, Detach)
    assert detach.closed
    return str(detach.error.condition), detach.error.description


@pytest.fixture
def pika_channel(broker_url):
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    yield conn.channel()
    conn.close()


# ---------------------------------------------------------------------- anonymous terminus
def test_an_anonymous_sender_routes_each_message_by_its_to(session, pika_channel, uid):
    pika_channel.queue_declare(uid)
    pika_channel.queue_declare(f"{uid}-2")
    pika_channel.queue_bind(f"{uid}-2", "amq.direct", "k/1")
    client = session()
    attach(client, None, receiver=False)
    reply = next_of(client, Attach)
    assert reply.target is not None and reply.target.address is None
    send(client, 0, f"/queues/{uid}", settled=False)
    assert isinstance(outcome(client), Accepted)
    send(client, 1, "/exchanges/amq.direct/k%2F1", settled=False)  # percent-encoded key
    assert isinstance(outcome(client), Accepted)
    assert pika_channel.queue_declare(uid, passive=True).method.message_count == 1
    assert pika_channel.queue_declare(f"{uid}-2", passive=True).method.message_count == 1


@pytest.mark.parametrize(
    ("to", "condition", "text"),
    [
        (None, "amqp:precondition-failed", "anonymous terminus requires 'to' address to be set"),
        ("/foo", "amqp:precondition-failed", "bad 'to' address string: /foo"),
        ("/queue/q", "amqp:precondition-failed", "bad 'to' address string: /queue/q"),
        ("/queues/", "amqp:precondition-failed", "bad 'to' address string: /queues/"),
        ("/exchanges/amq.default/k", "amqp:precondition-failed", None),
        ("/exchanges/x/k/more", "amqp:precondition-failed", None),
        ("/exchanges/missing-x", "amqp:not-found", "no exchange 'missing-x' in vhost '/'"),
    ],
)
def test_an_unsettled_message_the_anonymous_terminus_cannot_route_is_rejected(
    session, uid, to, condition, text
):
    """The link goes on: the next message is accepted."""
    client = session()
    attach(client, None, receiver=False)
    next_of(client, Attach)
    send(client, 0, to, settled=False)
    state = outcome(client)
    assert isinstance(state, Rejected)
    assert str(state.error.condition) == condition
    assert state.error.description == (text or f"bad 'to' address string: {to}")
    send(client, 1, "/exchanges/amq.fanout", settled=False)
    assert isinstance(outcome(client), Released)  # routed nowhere (see below)


def test_a_settled_message_without_to_detaches_the_anonymous_link(session):
    client = session()
    attach(client, None, receiver=False)
    next_of(client, Attach)
    send(client, 0, None, settled=True)
    detach = next_of(client, Detach)
    assert str(detach.error.condition) == "amqp:precondition-failed"
    assert detach.error.description == "anonymous terminus requires 'to' address to be set"
    assert detach.error.info == {Symbol("delivery-tag"): b"tag-0"}


# ---------------------------------------------------------------------- released
def test_an_unsettled_message_no_queue_takes_is_released_on_rabbitmq_4_addresses(session, uid):
    """RabbitMQ 4 releases it (a settled one is dropped); on a 3.x address rabbitish accepts
    it, as RabbitMQ 3.10 does."""
    client = session()
    attach(client, None, receiver=False)
    attach(client, f"/exchanges/amq.direct/{uid}", receiver=False, handle=1)
    attach(client, f"/exchange/amq.direct/{uid}", receiver=False, handle=2)
    for _ in range(3):
        next_of(client, Attach)
    send(client, 0, f"/queues/{uid}-none", settled=True)  # dropped: nothing comes back
    send(client, 1, f"/queues/{uid}-none", settled=False)
    assert isinstance(outcome(client), Released)
    send(client, 2, None, settled=False, handle=1)
    assert isinstance(outcome(client), Released)
    send(client, 3, None, settled=False, handle=2)
    assert isinstance(outcome(client), Accepted)


# ---------------------------------------------------------------------- attach
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
def test_a_missing_queue_refuses_the_link_alone(session, uid, receiver):
    """RabbitMQ 4 declares nothing for /queues/NAME; the session goes on."""
    client = session()
    attach(client, f"/queues/{uid}", receiver)
    assert refused(client) == ("amqp:not-found", f"no queue '{uid}' in vhost '/'")
    attach(client, f"/queues/{uid}", receiver, handle=1)  # still missing, same session
    assert refused(client) == ("amqp:not-found", f"no queue '{uid}' in vhost '/'")


def test_a_missing_exchange_refuses_a_sender_alone(session, uid):
    client = session()
    attach(client, f"/exchanges/{uid}/k", receiver=False)
    assert refused(client) == ("amqp:not-found", f"no exchange '{uid}' in vhost '/'")


def test_a_percent_encoded_queue_name_is_decoded(session, pika_channel, uid):
    name = f"{uid} q/é"
    pika_channel.queue_declare(name)
    client = session()
    attach(client, f"/queues/{quote(name, safe='')}", receiver=False)
    assert next_of(client, Attach).target is not None
    send(client, 0, None, settled=False)
    assert isinstance(outcome(client), Accepted)
    assert pika_channel.queue_declare(name, passive=True).method.message_count == 1


def test_a_receiver_on_an_exchange_address_is_refused(session):
    """/exchanges/... is a target form: RabbitMQ 4 reads a source with its 3.x parser."""
    client = session()
    attach(client, "/exchanges/amq.direct/k", receiver=True)
    reason = '{unknown_destination,"/exchanges/amq.direct/k"}'
    assert refused(client) == ("amqp:invalid-field", f"Attach refused: {reason}")


@pytest.mark.parametrize(
    "address",
    ["/queues/", "/exchanges/", "/exchanges/amq.default", "/exchanges/a/b/c", "/queues/%zz"],
)
def test_a_target_address_rabbitmq_4_cannot_parse_is_refused(session, address):
    client = session()
    attach(client, address, receiver=False)
    reason = f'{{bad_address_string,<<"{address}">>}}'
    assert refused(client) == ("amqp:invalid-field", f"Attach refused: {reason}")


# ---------------------------------------------------------------------- direct reply-to
def volatile_receiver(client: Raw, settled: bool = True) -> None:
    source = Source(dynamic=True, expiry_policy=Symbol("link-detach"), capabilities=[VOLATILE])
    link = Attach(
        name="replies",
        handle=UInt(0),
        role=True,
        source=source,
        target=Target(),
        snd_settle_mode=UInt(SETTLED if settled else UNSETTLED),
    )
    client.send(encode_frame(0, link))


def test_a_volatile_dynamic_source_gets_a_direct_reply_to_address(session, broker_url):
    """Replies from 0-9-1 (its reply_to names the address's queue name) and from 1.0 reach the
    receiver straight, settled."""
    client = session()
    volatile_receiver(client)
    reply = next_of(client, Attach)
    address = reply.source.address
    assert address.startswith("/queues/amq.rabbitmq.reply-to.")
    assert reply.source.dynamic and reply.source.capabilities == [VOLATILE]
    name = unquote(address.removeprefix("/queues/"))
    flow = Flow(
        next_incoming_id=UInt(0),
        next_outgoing_id=UInt(0),
        handle=UInt(0),
        delivery_count=UInt(0),
        link_credit=UInt(5),
        **WINDOWS,
    )
    client.send(encode_frame(0, flow))
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    conn.channel().basic_publish("", name, b"from 0-9-1")
    conn.close()
    sender = BlockingConnection(proton_url(broker_url), timeout=5)
    delivery = sender.create_sender(address).send(Message(body=b"from 1.0", inferred=True))
    assert delivery.remote_state == delivery.ACCEPTED
    sender.close()
    for body in (b"from 0-9-1", b"from 1.0"):
        frame = next_frame(client, Transfer)
        assert frame.body.settled
        assert frame.payload.endswith(encode(Data(body)))


def test_a_volatile_source_needs_a_settled_link(session):
    client = session()
    volatile_receiver(client, settled=False)
    condition, _text = refused(client)
    assert condition == "amqp:not-implemented"


# ---------------------------------------------------------------------- RabbitMQ's client
client_lib = pytest.importorskip(
    "rabbitmq_amqp_python_client",
    reason="rabbitmq-amqp-python-client is not installed (pip install -e '.[test]')",
)


class Stop(BaseException):
    """Ends the client's consumer loop (a BaseException: the client catches Exception)."""


class TakeThree(client_lib.AMQPMessagingHandler):  # type: ignore[misc]
    """Keeps three direct replies (they come settled: nothing to accept), then stops."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytes] = []

    def on_amqp_message(self, event) -> None:
        self.bodies.append(bytes(event.message.body))
        if len(self.bodies) == 3:
            raise Stop


@pytest.fixture
def connection(broker_url):
    parsed = urlparse(broker_url)
    environment = client_lib.Environment(uri=f"amqp://guest:guest@{parsed.hostname}:{parsed.port}/")
    conn = environment.connection()
    conn.dial()
    try:
        yield environment, conn
    finally:
        environment.close()


def test_rabbitmq_client_publishes_per_message_and_uses_direct_reply_to(connection, uid):
    environment, conn = connection
    from rabbitmq_amqp_python_client import (
        AddressHelper,
        ClassicQueueSpecification,
        ConsumerOptions,
        ConsumerSettleStrategy,
        OutcomeState,
    )
    from rabbitmq_amqp_python_client import Message as ClientMessage
    from rabbitmq_amqp_python_client.qpid.proton import Delivery
    from rabbitmq_amqp_python_client.qpid.proton._utils import SendException

    management = conn.management()
    management.declare_queue(ClassicQueueSpecification(name=uid, is_durable=False))
    publisher = conn.publisher()  # the anonymous terminus
    message = AddressHelper.message_to_address_helper(
        ClientMessage(body=b"per message"), AddressHelper.queue_address(uid)
    )
    assert publisher.publish(message).remote_state == OutcomeState.ACCEPTED
    missing = AddressHelper.message_to_address_helper(
        ClientMessage(body=b"nowhere"), AddressHelper.queue_address(f"{uid}-none")
    )
    with pytest.raises(SendException) as released:  # how the client reports `released`
        publisher.publish(missing)
    assert released.value.state == Delivery.RELEASED
    publisher.close()

    options = ConsumerOptions(settle_strategy=ConsumerSettleStrategy.DirectReplyTo)
    handler = TakeThree()
    consumer = conn.consumer(credit=10, consumer_options=options, message_handler=handler)
    assert consumer.address.startswith("/queues/amq.rabbitmq.reply-to.")
    # The client queues the receiver's credit without sending it; a round trip on the same
    # connection sends it first (a reply arriving without credit is dropped, as in RabbitMQ).
    assert management.purge_queue(uid) == 1
    management.delete_queue(uid)
    management.close()
    other = environment.connection()
    other.dial()
    replier = other.publisher(consumer.address)
    for n in range(3):
        status = replier.publish(ClientMessage(body=f"reply {n}".encode()))
        assert status.remote_state == OutcomeState.ACCEPTED
    with pytest.raises(Stop):
        consumer.run()
    assert handler.bodies == [b"reply 0", b"reply 1", b"reply 2"]
    replier.close()
    consumer.close()
