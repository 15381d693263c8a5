"""Dynamic nodes and request/reply over AMQP 1.0, with qpid-proton over TCP: a dynamic source
or target gets a server-named temporary queue whose address works as a reply-to from 1.0 and
0-9-1; proton's SyncRequestResponse against a 1.0 server, a 0-9-1 server, and a server that
receives and replies in one coordinator transaction. RabbitMQ 3.10's plugin refuses dynamic
sources: it ends the session with amqp:not-implemented (the last test records it)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pika
import pytest

from tests.support.amqp10 import proton_url
from tests.support.proton_tx import TxClient
from tests.support.waiting import wait_until

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Described, Message, symbol  # noqa: E402
from proton.reactor import DynamicNodeProperties, LinkOption  # noqa: E402
from proton.utils import (  # noqa: E402
    BlockingConnection,
    SyncRequestResponse,
)

LIFETIME = symbol("lifetime-policy")
CODES = {  # a described value's numeric descriptor -> its name
    0x2B: "amqp:delete-on-close:list",
    0x2C: "amqp:delete-on-no-links:list",
    0x2D: "amqp:delete-on-no-messages:list",
    0x2E: "amqp:delete-on-no-links-or-messages:list",
}


class DynamicTarget(LinkOption):
    """A sender whose target is dynamic (proton's blocking API has no flag for it)."""

    def apply(self, link) -> None:
        link.target.dynamic = True
        link.target.address = None


class Expiry(LinkOption):
    def __init__(self, policy: str, timeout: int = 0) -> None:
        self.policy, self.timeout = policy, timeout

    def apply(self, link) -> None:
        terminus = link.source if link.is_receiver else link.target
        terminus.expiry_policy = {
            "link-detach": proton.Terminus.EXPIRE_WITH_LINK,
            "session-end": proton.Terminus.EXPIRE_WITH_SESSION,
            "connection-close": proton.Terminus.EXPIRE_WITH_CONNECTION,
            "never": proton.Terminus.EXPIRE_NEVER,
        }[self.policy]
        terminus.timeout = self.timeout


def queue_exists(broker_url: str, name: str) -> bool:
    """Whether a queue `name` takes a message: a mandatory publish through the default exchange
    that comes back unroutable says it is gone."""
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        try:
            ch.basic_publish("", name, b"probe", mandatory=True)
        except pika.exceptions.UnroutableError:
            return False
        return True
    finally:
        conn.close()


def serve_1_0(url: str, request_queue: str, count: int, reply: Callable[[bytes], bytes]):
    """A 1.0 server on its own thread: receives `count` requests and answers each on a sender
    to its reply-to address, with the correlation id. Returns the thread (join it)."""
    ready = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            conn = BlockingConnection(url, timeout=10)
            receiver = conn.create_receiver(request_queue, credit=count)
            ready.set()
            senders = {}
            for _ in range(count):
                request = receiver.receive(timeout=10)
                body = bytes(request.body)
                to = request.reply_to
                if to not in senders:
                    senders[to] = conn.create_sender(to)
                senders[to].send(
                    Message(body=reply(body), correlation_id=request.correlation_id, inferred=True)
                )
                receiver.accept()
            conn.close()
        except BaseException as err:  # reported by join()
            errors.append(err)
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    thread.errors = errors  # type: ignore[attr-defined]
    return thread


def join(thread) -> None:
    thread.join(15)
    assert not thread.is_alive()
    assert not thread.errors, thread.errors


@pytest.fixture
def url(broker_url) -> str:
    return proton_url(broker_url)


def test_a_dynamic_receiver_gets_a_server_named_queue_gone_when_the_link_closes(url, broker_url):
    conn = BlockingConnection(url, timeout=5)
    receiver = conn.create_receiver(None, dynamic=True, credit=10)
    address = receiver.link.remote_source.address
    assert address.startswith("/queue/amq.gen-")
    assert receiver.link.remote_source.dynamic
    name = address.removeprefix("/queue/")
    # 0-9-1's reply_to "amq.gen-..." reaches it through the default exchange.
    assert queue_exists(broker_url, name)
    assert bytes(receiver.receive(timeout=5).body) == b"probe"
    receiver.accept()
    receiver.close()  # delete-on-close, the default
    assert not queue_exists(broker_url, name)
    conn.close()


def test_the_dynamic_address_works_as_a_1_0_target_and_other_connections_cannot_consume(
    url, broker_url
):
    owner = BlockingConnection(url, timeout=5)
    receiver = owner.create_receiver(None, dynamic=True, credit=10)
    address = receiver.link.remote_source.address
    other = BlockingConnection(url, timeout=5)
    other.create_sender(address).send(Message(body=b"to the reply queue", inferred=True))
    assert bytes(receiver.receive(timeout=5).body) == b"to the reply queue"
    receiver.accept()
    name = address.removeprefix("/queue/")
    pika_conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        pika_conn.channel().basic_consume(name, lambda *_: None)  # exclusive to its connection
    assert refused.value.reply_code == 405
    pika_conn.close()
    owner.close()
    other.close()
    assert not queue_exists(broker_url, name)  # and gone with its connection


def test_a_dynamic_target_is_a_queue_the_sender_fills(url, broker_url):
    conn = BlockingConnection(url, timeout=5)
    sender = conn.create_sender(None, options=DynamicTarget())
    address = sender.link.remote_target.address
    assert address.startswith("/queue/amq.gen-")
    sender.send(Message(body=b"kept", inferred=True))
    receiver = conn.create_receiver(address, credit=1)
    assert bytes(receiver.receive(timeout=5).body) == b"kept"
    receiver.accept()
    receiver.close()
    assert queue_exists(broker_url, address.removeprefix("/queue/"))
    sender.close()  # the creating link
    assert not queue_exists(broker_url, address.removeprefix("/queue/"))
    conn.close()


def test_lifetime_policies_the_node_has_are_answered(url, broker_url):
    conn = BlockingConnection(url, timeout=5)
    asked = {
        "amqp:delete-on-no-links:list": "amqp:delete-on-no-links:list",
        "amqp:delete-on-no-messages:list": "amqp:delete-on-close:list",  # not expressible
        "amqp:delete-on-no-links-or-messages:list": "amqp:delete-on-close:list",
    }
    for policy, answered in asked.items():
        props = DynamicNodeProperties({LIFETIME: Described(symbol(policy), [])})
        receiver = conn.create_receiver(None, dynamic=True, options=props)
        data = receiver.link.remote_source.properties
        data.rewind()
        data.next()
        got = data.get_dict()[LIFETIME]
        assert CODES.get(got.descriptor, got.descriptor) == answered
        receiver.close()
    conn.close()


def test_delete_on_no_links_outlives_its_creator_while_another_link_consumes(url, broker_url):
    conn = BlockingConnection(url, timeout=5)
    props = DynamicNodeProperties({LIFETIME: Described(symbol("amqp:delete-on-no-links:list"), [])})
    creator = conn.create_receiver(None, dynamic=True, options=props)
    address = creator.link.remote_source.address
    name = address.removeprefix("/queue/")
    second = conn.create_receiver(address, credit=5)
    creator.close()
    assert queue_exists(broker_url, name)
    assert bytes(second.receive(timeout=5).body) == b"probe"
    second.accept()
    second.close()
    assert not queue_exists(broker_url, name)
    conn.close()


@pytest.mark.parametrize(
    ("policy", "kept"),
    [("link-detach", False), ("session-end", True), ("connection-close", True)],
)
def test_a_detached_link_keeps_its_node_until_the_terminus_expires(url, broker_url, policy, kept):
    conn = BlockingConnection(url, timeout=5)
    receiver = conn.create_receiver(None, dynamic=True, options=Expiry(policy))
    name = receiver.link.remote_source.address.removeprefix("/queue/")
    receiver.link.detach()  # not closed: the terminus lives on until it expires
    conn.create_sender("/exchange/amq.direct/x")  # answered after the detach was taken
    assert queue_exists(broker_url, name) is kept
    conn.close()
    assert not queue_exists(broker_url, name)  # exclusive: never past its connection


def test_sync_request_response_with_a_1_0_server(url, uid):
    server = serve_1_0(url, f"/queue/{uid}", 3, lambda body: body.upper())
    conn = BlockingConnection(url, timeout=10)
    client = SyncRequestResponse(conn, f"/queue/{uid}")
    assert client.reply_to.startswith("/queue/amq.gen-")
    for word in (b"one", b"two", b"three"):
        assert bytes(client.call(Message(body=word, inferred=True)).body) == word.upper()
    join(server)
    conn.close()


def test_sync_request_response_with_a_0_9_1_server(url, broker_url, uid):
    pika_conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = pika_conn.channel()
    ch.queue_declare(uid)
    conn = BlockingConnection(url, timeout=10)
    client = SyncRequestResponse(conn, f"/queue/{uid}")
    replied = threading.Event()

    def call() -> None:
        response = client.call(Message(body=b"ping", inferred=True))
        assert bytes(response.body) == b"pong"
        replied.set()

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    got: list = []

    def request_arrived() -> bool:
        method, props, _body = ch.basic_get(uid, auto_ack=True)
        if method is not None:
            got.append(props)
        return bool(got)

    wait_until(request_arrived, timeout=10)
    props = got[0]
    assert props.reply_to.startswith("amq.gen-")  # the 1.0 /queue/NAME as 0-9-1 names it
    ch.basic_publish(
        "", props.reply_to, b"pong", pika.BasicProperties(correlation_id=props.correlation_id)
    )
    caller.join(10)
    assert replied.is_set()
    pika_conn.close()
    conn.close()


def test_a_0_9_1_exclusive_server_named_queue_is_a_1_0_target(url, broker_url, uid):
    pika_conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = pika_conn.channel()
    reply_queue = ch.queue_declare("", exclusive=True).method.queue
    ch.queue_declare(uid)
    ch.basic_publish("", uid, b"question", pika.BasicProperties(reply_to=reply_queue))
    conn = BlockingConnection(url, timeout=5)
    receiver = conn.create_receiver(f"/queue/{uid}", credit=1)
    request = receiver.receive(timeout=5)
    assert request.reply_to == f"/queue/{reply_queue}"
    conn.create_sender(request.reply_to).send(Message(body=b"answer", inferred=True))
    receiver.accept()
    conn.create_sender(reply_queue).send(Message(body=b"bare name too", inferred=True))
    got: list[bytes] = []

    def take() -> bool:
        method, _props, body = ch.basic_get(reply_queue, auto_ack=True)
        if method is not None:
            got.append(body)
        return len(got) == 2

    wait_until(take, timeout=10)
    assert got == [b"answer", b"bare name too"]
    conn.close()
    pika_conn.close()


def test_a_server_receives_and_replies_in_one_transaction(url, broker_url, uid):
    """The request's accept and the reply are one unit: rolled back, the reply is not sent
    and the request is back; committed, the reply arrives and the request is gone."""
    client = BlockingConnection(url, timeout=5)
    replies = client.create_receiver(None, dynamic=True, credit=5)
    reply_to = replies.link.remote_source.address
    client.create_sender(f"/queue/{uid}").send(
        Message(body=b"order 1", reply_to=reply_to, correlation_id="c1", inferred=True)
    )
    server = TxClient(broker_url)
    try:
        requests = server.conn.create_receiver(f"/queue/{uid}", credit=1)
        reply_sender = None
        for commit in (False, True):
            request = requests.receive(timeout=5)
            assert bytes(request.body) == b"order 1"
            reply_sender = reply_sender or server.conn.create_sender(request.reply_to)
            txn = server.declare()
            txn.accept(requests.fetcher.unsettled.popleft())
            server.send(txn, reply_sender, b"confirmed 1")
            assert server.discharge(txn, commit) == ("committed" if commit else "aborted")
    finally:
        server.close()
    reply = replies.receive(timeout=5)
    assert bytes(reply.body) == b"confirmed 1"
    replies.accept()
    client.close()
    pika_conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    declared = pika_conn.channel().queue_declare(uid, passive=True)
    assert declared.method.message_count == 0  # the commit consumed the request
    pika_conn.close()


@pytest.mark.rabbitmq
def test_rabbitmq_3_10_refuses_a_dynamic_receiver(rabbitmq_url):
    """The difference docs/amqp10.md records: RabbitMQ 3.10's plugin ends the session."""
    conn = BlockingConnection(proton_url(rabbitmq_url), timeout=5)
    with pytest.raises(proton.Timeout):  # the link never opens: its session ended
        conn.create_receiver(None, dynamic=True)
    ended = conn.conn.session_head(0).remote_condition
    assert ended.name == "amqp:not-implemented"
    assert ended.description == "Dynamic sources not supported"
    conn.close()
