"""ack / nack / reject (single, multiple, requeue), unknown delivery tags, the redelivered flag,
basic.recover and basic.recover-async. Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import time

import aiormq
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame


class Consuming:
    """A pika channel consuming one queue with manual acks, recording (tag, body, redelivered)."""

    def __init__(self, url: str, queue: str, count: int = 0) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self.conn.channel()
        self.queue = queue
        self.ch.queue_declare(queue, exclusive=True)
        for i in range(count):
            self.ch.basic_publish("", queue, b"%d" % i)
        self.got: list[tuple[int, bytes, bool]] = []

    def consume(self) -> None:
        self.ch.basic_consume(self.queue, self._on_message)

    def _on_message(self, _ch, method, _props, body: bytes) -> None:
        self.got.append((method.delivery_tag, body, method.redelivered))

    def wait_for(self, count: int, timeout: float = 5.0) -> list[tuple[int, bytes, bool]]:
        deadline = time.monotonic() + timeout
        while len(self.got) < count:
            assert time.monotonic() < deadline, f"got {len(self.got)} of {count} deliveries"
            self.conn.process_data_events(time_limit=0.05)
        return self.got

    def ready(self) -> int:
        return self.ch.queue_declare(self.queue, passive=True).method.message_count

    def close(self) -> None:
        if self.conn.is_open:
            self.conn.close()


@pytest.fixture
def consuming(amqp_url, uid):
    cases: list[Consuming] = []

    def make(count: int = 0) -> Consuming:
        case = Consuming(amqp_url, uid, count)
        cases.append(case)
        return case

    yield make
    for case in cases:
        case.close()


def test_ack_single_and_multiple(consuming):
    c = consuming(5)
    c.consume()
    c.wait_for(5)
    c.ch.basic_ack(delivery_tag=2)
    c.ch.basic_ack(delivery_tag=4, multiple=True)  # 1, 3, 4
    c.ch.basic_recover(requeue=True)  # only 5 is still unacked
    assert c.wait_for(6)[5] == (6, b"4", True)
    c.ch.basic_ack(delivery_tag=6)
    assert c.ready() == 0


def test_ack_multiple_with_tag_zero_acks_everything(consuming):
    c = consuming(4)
    c.consume()
    c.wait_for(4)
    c.ch.basic_ack(delivery_tag=0, multiple=True)
    c.ch.basic_recover(requeue=True)
    c.ch.basic_ack(delivery_tag=0, multiple=True)  # nothing outstanding: still fine
    assert c.ready() == 0
    assert len(c.got) == 4


def test_nack_multiple_requeues_in_order_with_redelivered(consuming):
    c = consuming(4)
    c.consume()
    c.wait_for(4)
    c.ch.basic_nack(delivery_tag=3, multiple=True, requeue=True)
    redelivered = c.wait_for(7)[4:]
    assert redelivered == [(5, b"0", True), (6, b"1", True), (7, b"2", True)]
    c.ch.basic_nack(delivery_tag=0, multiple=True, requeue=False)  # drops 4 and 5..7
    assert c.ready() == 0


def test_reject_requeue_and_discard(consuming):
    c = consuming(2)
    c.consume()
    c.wait_for(2)
    c.ch.basic_reject(delivery_tag=1, requeue=True)
    assert c.wait_for(3)[2] == (3, b"0", True)
    c.ch.basic_reject(delivery_tag=2, requeue=False)
    c.ch.basic_reject(delivery_tag=3, requeue=False)
    c.ch.basic_recover(requeue=True)
    assert c.ready() == 0
    assert len(c.got) == 3


@pytest.mark.parametrize(
    ("method", "ids"),
    [
        (commands.Basic.Ack(delivery_tag=7), (60, 80)),
        (commands.Basic.Ack(delivery_tag=7, multiple=True), (60, 80)),
        (commands.Basic.Reject(delivery_tag=7), (60, 90)),
        (commands.Basic.Nack(delivery_tag=7, multiple=True), (60, 120)),
    ],
    ids=["ack", "ack-multiple", "reject", "nack-multiple"],
)
def test_unknown_delivery_tag_closes_the_channel_406(amqp_url, uid, method, ids):
    with RawClient(amqp_url) as raw:
        raw.open()
        raw.open_channel(1)
        raw.send_method(1, commands.Queue.Declare(queue=uid, exclusive=True))
        raw.expect("Queue.DeclareOk")
        publish = commands.Basic.Publish(routing_key=uid)
        raw.send(method_frame(1, publish) + content_header_frame(1, 1) + raw_frame(3, 1, b"x"))
        raw.send_method(1, commands.Basic.Get(queue=uid))
        raw.expect("Basic.GetOk")
        raw.send_method(1, method)
        closed = raw.wait_closed()
        assert closed is not None
        assert (closed.scope, closed.reply_code) == ("channel", 406)
        assert closed.reply_text == "PRECONDITION_FAILED - unknown delivery tag 7"
        assert (closed.class_id, closed.method_id) == ids
        # the connection stays usable and the unacked message went back to the queue
        raw.open_channel(2)
        raw.send_method(2, commands.Basic.Get(queue=uid, no_ack=True))
        assert raw.expect("Basic.GetOk").redelivered is True


def test_double_ack_closes_the_channel(consuming):
    c = consuming(1)
    c.consume()
    c.wait_for(1)
    c.ch.basic_ack(delivery_tag=1)
    c.ch.basic_ack(delivery_tag=1)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        c.ready()
    assert info.value.reply_code == 406
    assert info.value.reply_text == "PRECONDITION_FAILED - unknown delivery tag 1"
    assert c.conn.is_open


def test_ack_of_a_no_ack_delivery_is_unknown(consuming):
    c = consuming(1)
    c.ch.basic_consume(c.queue, c._on_message, auto_ack=True)
    c.wait_for(1)
    c.ch.basic_ack(delivery_tag=1)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        c.ready()
    assert (info.value.reply_code, info.value.reply_text) == (
        406,
        "PRECONDITION_FAILED - unknown delivery tag 1",
    )


def test_delivery_tags_are_per_channel(consuming):
    c = consuming(1)
    c.consume()
    c.wait_for(1)
    other = c.conn.channel()
    other.basic_ack(delivery_tag=1)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        other.basic_qos(prefetch_count=1)
    assert info.value.reply_text == "PRECONDITION_FAILED - unknown delivery tag 1"
    c.ch.basic_ack(delivery_tag=1)  # the delivering channel can still ack it
    assert c.ready() == 0


def test_recover_requeue_redelivers_everything_unacked(consuming):
    c = consuming(3)
    c.consume()
    c.wait_for(3)
    c.ch.basic_ack(delivery_tag=2)
    c.ch.basic_recover(requeue=True)
    assert c.wait_for(5)[3:] == [(4, b"0", True), (5, b"2", True)]


def test_recover_ok_comes_before_the_redeliveries(amqp_url, uid):
    with RawClient(amqp_url) as raw:
        raw.open()
        raw.open_channel(1)
        raw.send_method(1, commands.Queue.Declare(queue=uid, exclusive=True))
        raw.expect("Queue.DeclareOk")
        publish = commands.Basic.Publish(routing_key=uid)
        raw.send(method_frame(1, publish) + content_header_frame(1, 1) + raw_frame(3, 1, b"x"))
        raw.send_method(1, commands.Basic.Consume(queue=uid, consumer_tag="c"))
        assert raw.expect("Basic.Deliver").delivery_tag == 1
        raw.send_method(1, commands.Basic.Recover(requeue=True))
        methods = []
        while "Basic.Deliver" not in methods:
            _channel, frame = raw.read_frame()
            if frame.name.startswith("Basic."):  # skip the first delivery's content frames
                methods.append(frame.name)
        assert methods == ["Basic.RecoverOk", "Basic.Deliver"]


def test_recover_without_requeue_is_not_implemented_540(consuming):
    c = consuming(1)
    c.consume()
    c.wait_for(1)
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        c.ch.basic_recover(requeue=False)
    assert info.value.reply_code == 540
    assert info.value.reply_text == "NOT_IMPLEMENTED - requeue=false"


@pytest.mark.filterwarnings("ignore:This command is deprecated:DeprecationWarning")
async def test_recover_async_redelivers(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, exclusive=True)
        got: list[tuple[int, bool]] = []

        async def on_message(message: aiormq.abc.DeliveredMessage) -> None:
            got.append((message.delivery.delivery_tag, message.delivery.redelivered))

        await ch.basic_consume(uid, on_message)
        await ch.basic_publish(b"x", routing_key=uid)
        deadline = time.monotonic() + 5
        while len(got) < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert await ch.basic_recover(nowait=True, requeue=True) is None  # recover-async
        while len(got) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert got == [(1, False), (2, True)]
        await ch.basic_ack(2)
        assert (await ch.queue_declare(uid, passive=True)).message_count == 0
    finally:
        await conn.close()


@pytest.mark.filterwarnings("ignore:This command is deprecated:DeprecationWarning")
def test_recover_async_without_requeue_closes_the_connection(amqp_url):
    with RawClient(amqp_url) as raw:
        raw.open()
        raw.open_channel(1)
        raw.send_method(1, commands.Basic.RecoverAsync(requeue=False))
        closed = raw.wait_closed()
        assert closed is not None
        assert (closed.scope, closed.reply_code) == ("connection", 540)
        assert closed.reply_text == "NOT_IMPLEMENTED - requeue=false"
        assert (closed.class_id, closed.method_id) == (60, 100)
