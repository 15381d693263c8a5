"""The tx class, case by case as RabbitMQ's own client test suite lists them (commitPublish,
rollbackPublish, ... commitAcksAndNacks), run against rabbitish and, when installed, a real
RabbitMQ: the same assertions hold on both."""

from __future__ import annotations

import random

import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.clients import pika_connection as connect
from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame


class TxCase:
    """State of one test: a connection, a channel, a queue, and helpers that read like the
    RabbitMQ test suite (publish, get, ack, close and reopen the channel)."""

    def __init__(self, url: str, queue: str) -> None:
        self.url = url
        self.queue = queue
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self.conn.channel()
        self.ch.queue_declare(queue, auto_delete=False)
        self.ch.queue_purge(queue)

    def publish(self, body: bytes = b"m", **kwargs) -> None:
        self.ch.basic_publish("", self.queue, body, **kwargs)

    def get(self, auto_ack: bool = False):
        method, _props, body = self.ch.basic_get(self.queue, auto_ack=auto_ack)
        return (method.delivery_tag, body) if method is not None else None

    def reopen(self) -> None:
        """Close the channel (requeueing what it held) and open a fresh one."""
        if self.ch.is_open:
            self.ch.close()
        self.ch = self.conn.channel()

    def count(self) -> int:
        with connect(self.url) as other:
            return other.channel().queue_declare(self.queue, passive=True).method.message_count

    def drain(self) -> list[bytes]:
        """Every message left, in queue order (acked)."""
        bodies = []
        while (got := self.get(auto_ack=True)) is not None:
            bodies.append(got[1])
        return bodies

    def finish(self) -> None:
        if self.conn.is_open:
            ch = self.conn.channel()
            ch.queue_delete(self.queue)
            self.conn.close()


@pytest.fixture
def tx(amqp_url, uid):
    case = TxCase(amqp_url, uid)
    yield case
    case.finish()


def test_commit_publish(tx):
    tx.ch.tx_select()
    tx.publish()
    assert tx.count() == 0
    tx.ch.tx_commit()
    assert tx.get() is not None


def test_rollback_publish(tx):
    tx.ch.tx_select()
    tx.publish()
    tx.ch.tx_rollback()
    assert tx.get() is None


def test_rollback_publish_on_close(tx):
    tx.ch.tx_select()
    tx.publish()
    tx.reopen()
    assert tx.get() is None


def test_requeue_on_close(tx):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    tag, _ = tx.get()
    tx.ch.basic_ack(tag)
    tx.get()  # unacked
    tx.reopen()  # the acked-but-uncommitted and the unacked both come back, in place
    assert tx.drain() == [b"1", b"2"]


def test_commit_acks(tx):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    for _ in range(2):
        tag, _ = tx.get()
        tx.ch.basic_ack(tag)
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


def test_commit_acks_out_of_order(tx):
    for i in range(4):
        tx.publish(str(i).encode())
    tx.ch.tx_select()
    tags = [tx.get()[0] for _ in range(4)]
    tx.ch.basic_nack(tags[3], multiple=False, requeue=False)
    tx.ch.basic_nack(tags[2], multiple=False, requeue=False)
    tx.ch.basic_ack(tags[1], multiple=False)
    tx.ch.basic_ack(tags[0], multiple=False)
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


def test_rollback_acks_and_re_ack(tx):
    tx.publish()
    tx.ch.tx_select()
    tag, _ = tx.get()
    tx.ch.basic_ack(tag)
    tx.ch.tx_rollback()
    tx.ch.basic_ack(tag)  # the rolled-back tag is unacked again: acking it is legal
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


def test_unknown_tag_ack(tx):
    tx.publish()
    tx.ch.tx_select()
    tag, _ = tx.get()
    tx.ch.basic_ack(tag + 1)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        tx.ch.tx_commit()
    assert info.value.reply_code == 406
    assert info.value.reply_text == f"PRECONDITION_FAILED - unknown delivery tag {tag + 1}"


def test_double_ack_in_tx_is_unknown_tag(tx):
    tx.publish()
    tx.ch.tx_select()
    tag, _ = tx.get()
    tx.ch.basic_ack(tag)
    tx.ch.basic_ack(tag)  # left the unacked set with the first ack
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        tx.ch.tx_commit()
    assert info.value.reply_code == 406
    assert info.value.reply_text == f"PRECONDITION_FAILED - unknown delivery tag {tag}"


def test_no_requeue_on_rollback(tx):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    tx.get()
    tx.get()
    tx.ch.tx_rollback()
    assert tx.get() is None  # consumed messages are not requeued by rollback


def test_auto_ack(tx):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    assert tx.get(auto_ack=True) is not None
    assert tx.get(auto_ack=True) is not None
    tx.ch.tx_rollback()
    tx.reopen()
    assert tx.get() is None  # no_ack deliveries are outside the transaction


def test_ack_all(tx):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    tx.get()
    tx.get()
    tx.ch.basic_ack(0, multiple=True)
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


@pytest.mark.parametrize("operation", ["tx_commit", "tx_rollback"])
def test_non_transacted(tx, operation):
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        getattr(tx.ch, operation)()
    assert info.value.reply_code == 406
    assert info.value.reply_text == "PRECONDITION_FAILED - channel is not transactional"


def test_redeliver_acked_uncommitted(tx):
    tx.publish()
    tx.ch.tx_select()
    tag, _ = tx.get()
    tx.ch.basic_ack(tag)
    tx.ch.basic_recover(requeue=True)
    assert tx.get() is None  # the staged ack took it out of the unacked set


def test_commit_with_deleted_queue(tx):
    tx.ch.tx_select()
    tx.publish()
    with connect(tx.url) as other:
        other.channel().queue_delete(tx.queue)
    tx.ch.tx_commit()  # no error: routing was resolved at publish time
    assert tx.ch.is_open


def test_shuffle_acks_before_rollback(tx):
    n = 10
    for i in range(n):
        tx.publish(str(i).encode())
    tx.ch.tx_select()
    tags = [tx.get()[0] for _ in range(n)]
    shuffled = tags[:]
    random.Random(7).shuffle(shuffled)
    for tag in shuffled:
        tx.ch.basic_ack(tag)
    tx.ch.tx_rollback()
    for tag in tags:
        tx.ch.basic_ack(tag)
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


@pytest.mark.parametrize("requeue", [True, False])
@pytest.mark.parametrize("method", ["nack", "reject"])
def test_commit_settle(tx, method, requeue):
    tx.publish(b"1")
    tx.publish(b"2")
    tx.ch.tx_select()
    tag1, _ = tx.get()
    tag2, _ = tx.get()
    settle = tx.ch.basic_nack if method == "nack" else tx.ch.basic_reject
    settle(tag1, requeue=requeue)
    settle(tag2, requeue=requeue)
    assert tx.count() == 0  # nothing happens before commit
    tx.ch.tx_commit()
    if requeue:
        got = tx.ch.basic_get(tx.queue, auto_ack=True)
        assert got[2] == b"1" and got[0].redelivered
        assert tx.get(auto_ack=True) == (got[0].delivery_tag + 1, b"2")
    else:
        assert tx.get() is None


@pytest.mark.parametrize("method", ["nack", "reject"])
def test_rollback_settle(tx, method):
    tx.publish(b"1")
    tx.ch.tx_select()
    tag, _ = tx.get()
    if method == "nack":
        tx.ch.basic_nack(tag, requeue=True)
    else:
        tx.ch.basic_reject(tag, requeue=True)
    tx.ch.tx_rollback()
    assert tx.count() == 0  # neither requeued by the nack nor by the rollback
    tx.ch.basic_ack(tag)  # back in the unacked set
    tx.ch.tx_commit()
    tx.reopen()
    assert tx.get() is None


def test_commit_acks_and_nacks(tx):
    for i in range(3):
        tx.publish(str(i).encode())
    tx.ch.tx_select()
    tags = [tx.get()[0] for _ in range(3)]
    tx.ch.basic_ack(tags[0])
    tx.ch.basic_nack(tags[1], requeue=True)
    tx.ch.basic_nack(tags[2], requeue=False)
    tx.ch.tx_commit()
    assert tx.drain() == [b"1"]


def test_nack_multiple_in_tx_requeues_in_order(tx):
    for i in range(4):
        tx.publish(str(i).encode())
    tx.ch.tx_select()
    tags = [tx.get()[0] for _ in range(4)]
    tx.ch.basic_nack(tags[3], multiple=True, requeue=True)
    tx.ch.tx_commit()
    assert tx.drain() == [b"0", b"1", b"2", b"3"]


def test_select_twice_is_fine(tx):
    tx.ch.tx_select()
    tx.ch.tx_select()
    tx.publish()
    tx.ch.tx_commit()
    assert tx.count() == 1


def test_tx_select_on_confirm_channel(tx):
    tx.ch.confirm_delivery()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        tx.ch.tx_select()
    assert info.value.reply_code == 406
    assert info.value.reply_text == "PRECONDITION_FAILED - cannot switch from confirm to tx mode"


def test_confirm_select_on_tx_channel(tx):
    tx.ch.tx_select()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        tx.ch.confirm_delivery()
    assert info.value.reply_code == 406
    assert info.value.reply_text == "PRECONDITION_FAILED - cannot switch from tx to confirm mode"


def test_publish_to_missing_exchange_fails_at_once(tx):
    tx.ch.tx_select()
    tx.publish(b"staged")
    tx.ch.basic_publish("no-such-exchange", "k", b"x")
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        tx.ch.queue_declare(tx.queue, passive=True)  # any round trip shows the close
    assert info.value.reply_code == 404
    assert info.value.reply_text == "NOT_FOUND - no exchange 'no-such-exchange' in vhost '/'"
    tx.reopen()
    assert tx.get() is None  # the staged publish is gone with the channel


def test_consume_and_get_are_not_transactional(tx):
    tx.publish(b"1")
    tx.ch.tx_select()
    assert tx.get() is not None  # delivered at once, inside the transaction
    assert tx.count() == 0


def test_routing_resolved_at_publish_time(tx, uid):
    """A binding added after the publish but before commit does not receive the message."""
    exchange = f"{uid}-x"
    other = f"{uid}-late"
    tx.ch.exchange_declare(exchange, "fanout", auto_delete=True)
    tx.ch.queue_bind(tx.queue, exchange)
    tx.ch.tx_select()
    tx.ch.basic_publish(exchange, "", b"m")
    tx.ch.queue_declare(other, exclusive=True)
    tx.ch.queue_bind(other, exchange)
    tx.ch.tx_commit()
    assert tx.ch.queue_declare(other, passive=True).method.message_count == 0
    assert tx.count() == 1


def test_exclusive_durable_queue_is_transient(amqp_url, uid):
    with connect(amqp_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, durable=True, exclusive=True)
        ch.queue_declare(uid, durable=False, exclusive=True)  # no inequivalence error
        ch.queue_declare(uid, durable=True, exclusive=True)
        assert ch.is_open


# ---------------------------------------------------------------------- frame order, raw
def _open_channel(client: RawClient) -> None:
    client.send_method(1, commands.Channel.Open())
    client.expect("Channel.OpenOk")


def test_return_sent_before_commit_ok(amqp_url):
    with RawClient(amqp_url).handshake() as client:
        _open_channel(client)
        client.send_method(1, commands.Tx.Select())
        client.expect("Tx.SelectOk")
        for _ in range(2):
            client.send(
                method_frame(
                    1,
                    commands.Basic.Publish(
                        exchange="amq.direct", routing_key="nowhere", mandatory=True
                    ),
                )
            )
            client.send(content_header_frame(1, 3))
            client.send(raw_frame(3, 1, b"abc"))
        client.send_method(1, commands.Tx.Commit())
        names = []
        while not names or names[-1] != "Tx.CommitOk":
            got = client.read_frame()
            assert got is not None
            name = getattr(got[1], "name", type(got[1]).__name__)
            if name in ("Basic.Return", "Tx.CommitOk"):
                names.append(name)
        assert names == ["Basic.Return", "Basic.Return", "Tx.CommitOk"]


def test_return_not_sent_before_commit(amqp_url):
    with RawClient(amqp_url).handshake() as client:
        _open_channel(client)
        client.send_method(1, commands.Tx.Select())
        client.expect("Tx.SelectOk")
        client.send(
            method_frame(
                1,
                commands.Basic.Publish(
                    exchange="amq.direct", routing_key="nowhere", mandatory=True
                ),
            )
        )
        client.send(content_header_frame(1, 0))
        client.send_method(1, commands.Basic.Qos(prefetch_count=1))  # a round trip
        got = client.read_frame()
        assert getattr(got[1], "name", "") == "Basic.QosOk"
        client.send_method(1, commands.Tx.Rollback())
        got = client.read_frame()
        assert getattr(got[1], "name", "") == "Tx.RollbackOk"  # rollback: never returned


def _pipeline_after_commit(url: str, routing_key: str) -> RawClient:
    client = RawClient(url).handshake()
    _open_channel(client)
    client.send_method(1, commands.Tx.Select())
    client.expect("Tx.SelectOk")
    publish = (
        method_frame(1, commands.Basic.Publish(exchange="", routing_key=routing_key))
        + content_header_frame(1, 1)
        + raw_frame(3, 1, b"x")
    )
    client.send(publish + method_frame(1, commands.Tx.Commit()) + publish)
    return client


def test_pipelined_method_during_commit_closes_connection(amqp_url, uid):
    """A client that sends more work on the channel before commit-ok arrives fails as it fails
    on RabbitMQ, whose commit waits for the queues involved: 504, connection closed."""
    with connect(amqp_url) as conn:
        conn.channel().queue_declare(uid, auto_delete=False)
    try:
        with _pipeline_after_commit(amqp_url, uid) as client:
            closed = client.wait_closed()
            assert closed is not None
            assert closed.channel == 0
            assert closed.reply_code == 504
            assert (
                closed.reply_text
                == "CHANNEL_ERROR - unexpected command while processing 'tx.commit'"
            )
    finally:
        with connect(amqp_url) as conn:
            conn.channel().queue_delete(uid)


def test_pipelined_after_commit_touching_no_queue_is_fine(amqp_url, uid):
    """A commit that involved no queue completes at once, so pipelining after it works."""
    with _pipeline_after_commit(amqp_url, f"{uid}-nowhere") as client:
        client.expect("Tx.CommitOk")
        client.send_method(1, commands.Tx.Commit())
        client.expect("Tx.CommitOk")
