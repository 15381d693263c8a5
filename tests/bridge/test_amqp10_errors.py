"""AMQP 1.0 errors as RabbitMQ 3.x's plugin sends them, seen in raw frames: the condition, the
level it is sent on and the description. A link that cannot be made, a publish that fails and a
transfer or flow for a handle the session does not know all end the session (RabbitMQ 3.x never
refuses a link alone); a vhost that is missing or not allowed fails the handshake, as RabbitMQ 4
does (RabbitMQ 3.x refused the first begin).
Tests taking `amqp_url` run against both brokers."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from rabbitish.bridge.codec import AMQP_HEADER, UByte, UInt, encode_frame
from rabbitish.bridge.codec.definitions import (
    Attach,
    Begin,
    Close,
    Detach,
    End,
    Flow,
    Open,
    Source,
    Target,
    Transfer,
)

from rabbitish.testing import call_in_loop, running_broker
from tests.support.amqp10 import Raw

BODY = b"\x00\x53\x75\xa0\x01x"  # one data section: b"x"
WINDOWS = {"incoming_window": UInt(100), "outgoing_window": UInt(100)}
DURABLE = UInt(1)  # terminus durability "configuration": RabbitMQ declares a durable queue


@pytest.fixture
def session(amqp_url):
    """A raw client with an open connection and session 0 begun."""
    clients: list[Raw] = []

    def make(url: str = amqp_url) -> Raw:
        client = Raw(url)
        clients.append(client)
        client.sasl_plain()
        client.open()
        begin(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def pika_channel(amqp_url):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    yield conn.channel()
    conn.close()


def begin(client: Raw, channel: int = 0, **windows: Any) -> None:
    client.send(encode_frame(channel, Begin(next_outgoing_id=UInt(0), **(WINDOWS | windows))))
    assert isinstance(client.frame().body, Begin)


def attach(client: Raw, address: str | None, receiver: bool, channel: int = 0, **fields) -> None:
    """Attach handle 0: a receiver from `address` or a sender to it."""
    durable = fields.pop("durable", None)
    if receiver:
        ends = {"source": Source(address=address, durable=durable), "target": Target()}
    else:
        ends = {"source": Source(), "target": Target(address=address, durable=durable)}
        fields.setdefault("initial_delivery_count", UInt(0))
    link = Attach(name="link", handle=UInt(0), role=receiver, **ends, **fields)
    client.send(encode_frame(channel, link))


def attached(client: Raw) -> Attach:
    body = client.frame().body
    assert isinstance(body, Attach), body
    return body


def error(client: Raw) -> tuple[str, str, str]:
    """The first error the broker sends: (performative, condition, description)."""
    while True:
        body = client.frame().body
        if isinstance(body, End | Detach | Close) and body.error is not None:
            return type(body).__name__, str(body.error.condition), body.error.description


def link_flow(credit: int, echo: bool = False, **session_fields: Any) -> bytes:
    fields = {"next_incoming_id": UInt(0), **WINDOWS, **session_fields}
    flow = Flow(
        next_outgoing_id=UInt(0),
        handle=UInt(0),
        delivery_count=UInt(0),
        link_credit=UInt(credit),
        echo=echo,
        **fields,
    )
    return encode_frame(0, flow)


def not_found(kind: str, name: str) -> tuple[str, str, str]:
    return "End", "amqp:not-found", f"NOT_FOUND - no {kind} '{name}' in vhost '/'"


# ---------------------------------------------------------------------- attach
@pytest.mark.rabbitmq
def test_a_missing_amq_queue_ends_the_session_with_not_found(session, uid):
    client = session()
    attach(client, f"/amq/queue/{uid}", receiver=True)
    assert error(client) == not_found("queue", uid)


@pytest.mark.rabbitmq
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
@pytest.mark.parametrize("key", ["", "/k"])
def test_a_missing_exchange_ends_the_session_with_not_found(session, uid, receiver, key):
    client = session()
    attach(client, f"/exchange/{uid}{key}", receiver)
    assert error(client) == not_found("exchange", uid)


@pytest.mark.rabbitmq
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("/foo", '{unknown_destination,"/foo"}'),
        ("/queue/", '{invalid_destination,queue,"/"}'),
        ("/queue/a/b", '{invalid_destination,queue,"/a/b"}'),
        ("/exchange/", '{invalid_destination,exchange,"/"}'),
        ("/topic", "{invalid_destination,topic,[]}"),
        ("/amq/queue/", '{invalid_destination,amqqueue,"/"}'),
    ],
)
def test_an_address_rabbitmq_cannot_parse_ends_the_session(session, receiver, address, reason):
    client = session()
    attach(client, address, receiver)
    assert error(client) == ("End", "amqp:invalid-field", f"Attach rejected: {reason}")


@pytest.mark.rabbitmq
def test_a_source_without_an_address_ends_the_session(session):
    client = session()
    attach(client, None, receiver=True)
    reason = "{address_not_utf8_string,undefined}"
    assert error(client) == ("End", "amqp:invalid-field", f"Attach rejected: {reason}")


@pytest.mark.rabbitmq
def test_rabbitmq_3_10_refuses_a_target_without_an_address(rabbitmq_url):
    """A target without an address is RabbitMQ 4's anonymous terminus, which rabbitish has
    (tests/bridge/test_amqp10_rabbitmq4_addresses.py); RabbitMQ 3.10 ends the session."""
    client = Raw(rabbitmq_url)
    try:
        client.sasl_plain()
        client.open()
        begin(client)
        attach(client, None, receiver=False)
        reason = "{address_not_utf8_string,undefined}"
        assert error(client) == ("End", "amqp:invalid-field", f"Attach rejected: {reason}")
    finally:
        client.close()


@pytest.mark.rabbitmq
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
def test_a_queue_address_declares_the_queue_durable_as_the_terminus(
    session, pika_channel, uid, receiver
):
    """A terminus of durability none declares a transient queue; a durable queue of that name
    then refuses the link, as RabbitMQ 3.x does."""
    client = session()
    attach(client, f"/queue/{uid}", receiver)
    attached(client)
    pika_channel.queue_declare(uid, durable=False)  # equivalent, so the queue is transient
    pika_channel.queue_declare(f"{uid}-d", durable=True)
    other = session()
    attach(other, f"/queue/{uid}-d", receiver)
    text = (
        f"PRECONDITION_FAILED - inequivalent arg 'durable' for queue '{uid}-d' in vhost '/': "
        "received 'false' but current is 'true'"
    )
    assert error(other) == ("End", "amqp:precondition-failed", text)


@pytest.mark.rabbitmq
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
def test_an_existing_queue_of_other_properties_ends_the_session(
    session, pika_channel, uid, receiver
):
    pika_channel.queue_declare(f"{uid}-t", durable=False)
    pika_channel.queue_declare(f"{uid}-x", durable=True, arguments={"x-max-length": 5})
    client = session()
    attach(client, f"/queue/{uid}-t", receiver, durable=DURABLE)
    resource = f"for queue '{uid}-t' in vhost '/'"
    text = f"inequivalent arg 'durable' {resource}: received 'true' but current is 'false'"
    assert error(client) == ("End", "amqp:precondition-failed", f"PRECONDITION_FAILED - {text}")
    client = session()
    attach(client, f"/queue/{uid}-x", receiver, durable=DURABLE)
    resource = f"for queue '{uid}-x' in vhost '/'"
    text = (
        f"inequivalent arg 'x-max-length' {resource}: "
        "received none but current is the value '5' of type 'signedint'"
    )
    assert error(client) == ("End", "amqp:precondition-failed", f"PRECONDITION_FAILED - {text}")


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("address", "receiver"),
    [("/queue/{}", True), ("/queue/{}", False), ("/amq/queue/{}", True)],
    ids=["queue-receiver", "queue-sender", "amq-queue-receiver"],
)
def test_an_exclusive_queue_of_another_connection_is_resource_locked(
    session, pika_channel, uid, address, receiver
):
    pika_channel.queue_declare(uid, exclusive=True)
    client = session()
    attach(client, address.format(uid), receiver)
    text = (
        f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{uid}' in vhost "
        "'/'. It could be originally declared on another connection or the exclusive property "
        "value does not match that of the original declaration."
    )
    if len(text) > 255:  # RabbitMQ passes on the 0-9-1 reply text, a short string
        text = text[:252] + "..."
    assert error(client) == ("End", "amqp:resource-locked", text)


@pytest.mark.rabbitmq
def test_a_reserved_queue_name_is_unauthorized(session):
    client = session()
    attach(client, "/queue/amq.reserved", receiver=True)
    text = "ACCESS_REFUSED - queue name 'amq.reserved' contains reserved prefix 'amq.*'"
    assert error(client) == ("End", "amqp:unauthorized-access", text)


@pytest.mark.rabbitmq
def test_rcv_settle_mode_second_is_not_implemented(session, uid):
    client = session()
    attach(client, f"/queue/{uid}", receiver=False, rcv_settle_mode=UByte(1))
    expected = ("End", "amqp:not-implemented", "rcv-settle-mode second not supported")
    assert error(client) == expected


@pytest.mark.rabbitmq
def test_the_connection_outlives_an_ended_session(session, uid):
    client = session()
    attach(client, "/foo", receiver=True)
    assert error(client)[0] == "End"
    client.send(encode_frame(0, End()))  # the answer to the broker's end
    begin(client, channel=1)
    attach(client, f"/queue/{uid}", receiver=True, channel=1)
    assert attached(client).source.address == f"/queue/{uid}"


# ---------------------------------------------------------------------- vhost access
def _refused_at_open(client: Raw, hostname: str | None = None) -> bool:
    """RabbitMQ 4 fails the handshake: the socket closes with no open in answer."""
    client.send(AMQP_HEADER)
    assert client.header() == AMQP_HEADER
    client.send(encode_frame(0, Open(container_id="raw", hostname=hostname)))
    return client.closed() and not client.pending and not client.buffer


def test_an_unknown_vhost_fails_the_handshake(broker_url, uid):
    client = Raw(broker_url)
    try:
        client.sasl_plain()
        assert _refused_at_open(client, hostname=f"vhost:{uid}")
    finally:
        client.close()


@pytest.mark.rabbitmq
def test_rabbitmq_3_opens_an_unknown_vhost_and_refuses_the_first_begin(rabbitmq_url, uid):
    """The rule rabbitish left for RabbitMQ 4's (docs/amqp10.md, open / close row)."""
    client = Raw(rabbitmq_url)
    try:
        client.sasl_plain()
        client.open(hostname=f"vhost:{uid}")  # the open is answered
        client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
        text = "Access for user 'guest' was refused: insufficient permissions"
        assert error(client) == ("Close", "amqp:unauthorized-access", text)
    finally:
        client.close()


def test_a_user_without_access_to_the_vhost_fails_the_handshake():
    with running_broker(users={"guest": "guest", "fenced": "pw"}, vhosts=("/", "v2")) as broker:

        def fence() -> None:
            broker.node.users.clear_permissions("fenced", "/")

        call_in_loop(broker, fence)
        client = Raw(broker.url)
        try:
            client.sasl_plain("fenced", "pw")
            assert _refused_at_open(client)
        finally:
            client.close()


# ---------------------------------------------------------------------- open links
@pytest.mark.rabbitmq
@pytest.mark.parametrize("settled", [True, None], ids=["settled", "unsettled"])
def test_a_publish_to_an_exchange_deleted_since_the_attach_ends_the_session(
    session, pika_channel, uid, settled
):
    pika_channel.exchange_declare(uid, "fanout")
    client = session()
    attach(client, f"/exchange/{uid}/k", receiver=False)
    attached(client)
    pika_channel.exchange_delete(uid)
    transfer = Transfer(handle=UInt(0), delivery_id=UInt(0), delivery_tag=b"1", settled=settled)
    client.send(encode_frame(0, transfer, BODY))
    assert error(client) == not_found("exchange", uid)


@pytest.mark.rabbitmq
@pytest.mark.parametrize("handle", [7, 0], ids=["unknown", "a-receiver"])
def test_a_transfer_on_a_handle_that_takes_none_ends_the_session(session, uid, handle):
    client = session()
    attach(client, f"/queue/{uid}", receiver=True)
    attached(client)
    transfer = Transfer(handle=UInt(handle), delivery_id=UInt(0), delivery_tag=b"1", settled=True)
    client.send(encode_frame(0, transfer, BODY))
    text = f"Unknown link handle {{uint,{handle}}}"
    assert error(client) == ("End", "amqp:illegal-state", text)


@pytest.mark.rabbitmq
def test_a_flow_for_an_unattached_handle_ends_the_session(session):
    client = session()
    client.send(link_flow(5))
    assert error(client) == ("End", "amqp:invalid-field", "Unattached handle: {uint,0}")


# ---------------------------------------------------------------------- session window
@pytest.mark.rabbitmq
def test_transfers_stop_at_the_peers_incoming_window(amqp_url, pika_channel, uid):
    pika_channel.queue_declare(uid)
    for i in range(5):
        pika_channel.basic_publish("", uid, b"m%d" % i)
    client = Raw(amqp_url)
    try:
        client.sasl_plain()
        client.open()
        begin(client, incoming_window=UInt(2))
        attach(client, f"/amq/queue/{uid}", receiver=True)
        attached(client)
        client.send(link_flow(10, incoming_window=UInt(2)))
        assert transfer_ids(client, 2) == [0, 1]
        # The window is closed: the answer to an echoed flow comes before any transfer.
        client.send(link_flow(10, echo=True, incoming_window=UInt(2)))
        assert transfer_ids(client, 0) == []
        window = {"incoming_window": UInt(2), "outgoing_window": UInt(100)}
        reopen = Flow(next_incoming_id=UInt(2), next_outgoing_id=UInt(0), **window)
        client.send(encode_frame(0, reopen))
        assert transfer_ids(client, 2) == [2, 3]
    finally:
        client.close()


def transfer_ids(client: Raw, count: int) -> list[int]:
    """The delivery ids of the next `count` transfers (flows between them skipped); with
    `count` 0, the frames up to the next flow, which must hold no transfer."""
    ids: list[int] = []
    while len(ids) < count or not count:
        body = client.frame().body
        if isinstance(body, Transfer):
            ids.append(int(body.delivery_id))
        elif not count and isinstance(body, Flow):
            return ids
    return ids


# ---------------------------------------------------------------------- resume
@pytest.mark.parametrize("receiver", [True, False], ids=["receiver", "sender"])
@pytest.mark.parametrize(
    "resume",
    [{"unsettled": {b"tag-1": None}}, {"incomplete_unsettled": True}],
    ids=["unsettled", "incomplete-unsettled"],
)
def test_resume_is_not_offered(session, broker_url, uid, receiver, resume):
    """rabbitish only: RabbitMQ 3.10 ends the session instead (amqp:not-implemented, "Link
    recovery not supported"). rabbitish makes the link and answers with no unsettled map, so
    the client knows nothing will be resumed."""
    client = session(broker_url)
    attach(client, f"/queue/{uid}", receiver, **resume)
    answer = attached(client)
    assert answer.unsettled is None and not answer.incomplete_unsettled


# ---------------------------------------------------------------------- rabbitish only
def test_a_sender_to_a_missing_amq_queue_ends_the_session(session, broker_url, uid):
    """As RabbitMQ 3.13 (a passive declare); 3.10 accepts the link and drops what it sends."""
    client = session(broker_url)
    attach(client, f"/amq/queue/{uid}", receiver=False)
    assert error(client) == not_found("queue", uid)


def test_a_queue_deleted_under_a_receiver_detaches_it(session, broker_url, uid):
    """The link alone goes, with amqp:resource-deleted (RabbitMQ 3.10 sends nothing)."""
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        conn.channel().queue_declare(uid)
        client = session(broker_url)
        attach(client, f"/amq/queue/{uid}", receiver=True)
        attached(client)
        client.send(link_flow(5, echo=True))
        assert isinstance(client.frame().body, Flow)  # the link is consuming
        conn.channel().queue_delete(uid)
        assert error(client) == ("Detach", "amqp:resource-deleted", "the queue was deleted")
    finally:
        conn.close()
