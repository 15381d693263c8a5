"""Publisher confirms: confirm.select (and nowait), every publish confirmed exactly once and in
order, nacks for x-overflow reject-publish, basic.return before the ack of a mandatory unroutable
publish. Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio

import aio_pika
import aio_pika.exceptions
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame


def _publish_frames(routing_key: str, body: bytes = b"x", *, exchange: str = "", **kw) -> bytes:
    publish = commands.Basic.Publish(exchange=exchange, routing_key=routing_key, **kw)
    return (
        method_frame(1, publish)
        + content_header_frame(1, len(body))
        + (raw_frame(3, 1, body) if body else b"")
    )


def _raw_channel(url: str, queue: str, **queue_args) -> RawClient:
    raw = RawClient(url)
    raw.open()
    raw.open_channel(1)
    raw.send_method(1, commands.Queue.Declare(queue=queue, exclusive=True, arguments=queue_args))
    raw.expect("Queue.DeclareOk")
    return raw


def _confirmed(raw: RawClient, count: int) -> list[tuple[str, int]]:
    """Read confirms until `count` publishes are covered; (kind, seq) for each publish, in the
    order the broker confirmed them (a multiple ack covers every earlier open seq)."""
    seen: list[tuple[str, int]] = []
    covered = 0
    while covered < count:
        _channel, frame = raw.read_frame()
        if frame.name not in ("Basic.Ack", "Basic.Nack"):
            continue
        kind = "ack" if frame.name == "Basic.Ack" else "nack"
        if frame.multiple:
            assert frame.delivery_tag > covered
            seen.extend((kind, seq) for seq in range(covered + 1, frame.delivery_tag + 1))
        else:
            seen.append((kind, frame.delivery_tag))
        covered = max(covered, frame.delivery_tag)
    return seen


def test_a_thousand_publishes_are_each_confirmed_once_in_order(amqp_url, uid):
    with _raw_channel(amqp_url, uid) as raw:
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        raw.send(b"".join(_publish_frames(uid, b"%d" % i) for i in range(1000)))
        assert _confirmed(raw, 1000) == [("ack", seq) for seq in range(1, 1001)]
        raw.send_method(1, commands.Queue.Declare(queue=uid, passive=True))
        assert raw.expect("Queue.DeclareOk").message_count == 1000


async def test_a_thousand_confirmed_publishes_with_aio_pika(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel(publisher_confirms=True)
        queue = await ch.declare_queue(uid, exclusive=True)
        results = await asyncio.gather(
            *(
                ch.default_exchange.publish(aio_pika.Message(b"%d" % i), routing_key=uid)
                for i in range(1000)
            )
        )
        assert all(r.name == "Basic.Ack" for r in results)
        declared = await ch.declare_queue(uid, passive=True)
        assert declared.declaration_result.message_count == 1000
        await queue.purge()


def test_confirm_select_nowait(amqp_url, uid):
    with _raw_channel(amqp_url, uid) as raw:
        raw.send_method(1, commands.Confirm.Select(nowait=True))
        raw.send(_publish_frames(uid))
        _channel, frame = raw.read_frame()
        assert frame.name == "Basic.Ack"  # no select-ok came first
        assert (frame.delivery_tag, frame.multiple) == (1, False)


def test_unroutable_and_routed_publishes_are_acked(amqp_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"routed")
        ch.basic_publish("amq.direct", f"{uid}-nobody", b"dropped")  # not mandatory: acked
        with pytest.raises(pika.exceptions.UnroutableError) as info:
            ch.basic_publish("amq.direct", f"{uid}-nobody", b"returned", mandatory=True)
        (returned,) = info.value.messages
        assert returned.body == b"returned"
        assert returned.method.reply_code == 312
        assert ch.queue_declare(uid, passive=True).method.message_count == 1
    finally:
        conn.close()


def test_return_arrives_before_the_ack(amqp_url, uid):
    with _raw_channel(amqp_url, uid) as raw:
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        raw.send(_publish_frames(f"{uid}-nobody", b"lost", exchange="amq.direct", mandatory=True))
        names = []
        while "Basic.Ack" not in names:
            _channel, frame = raw.read_frame()
            names.append(frame.name)
            if frame.name == "Basic.Return":
                assert (frame.reply_code, frame.reply_text) == (312, "NO_ROUTE")
            if frame.name == "Basic.Ack":
                assert frame.delivery_tag == 1
        assert names == ["Basic.Return", "ContentHeader", "ContentBody", "Basic.Ack"]


@pytest.mark.parametrize("overflow", ["reject-publish", "reject-publish-dlx"])
def test_reject_publish_overflow_is_nacked(amqp_url, uid, overflow):
    with _raw_channel(amqp_url, uid, **{"x-max-length": 2, "x-overflow": overflow}) as raw:
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        raw.send(b"".join(_publish_frames(uid, b"%d" % i) for i in range(4)))
        assert _confirmed(raw, 4) == [("ack", 1), ("ack", 2), ("nack", 3), ("nack", 4)]
        raw.send_method(1, commands.Basic.Get(queue=uid, no_ack=True))
        assert raw.expect("Basic.GetOk").message_count == 1


def test_confirm_nack_carries_the_requeue_bit_like_rabbitmq(amqp_url, uid):
    with _raw_channel(amqp_url, uid, **{"x-max-length": 0, "x-overflow": "reject-publish"}) as raw:
        raw.send_method(1, commands.Confirm.Select())
        raw.expect("Confirm.SelectOk")
        raw.send(_publish_frames(uid))
        frame = raw.expect("Basic.Nack")
        # (RabbitMQ may set `multiple` on a lone nack: coalescing is its choice)
        assert (frame.delivery_tag, frame.requeue) == (1, True)


async def test_aio_pika_sees_a_nack_as_delivery_error(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel(publisher_confirms=True)
        await ch.declare_queue(
            uid, exclusive=True, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
        )
        await ch.default_exchange.publish(aio_pika.Message(b"fits"), routing_key=uid)
        with pytest.raises(aio_pika.exceptions.DeliveryError) as info:
            await ch.default_exchange.publish(aio_pika.Message(b"overflows"), routing_key=uid)
        assert info.value.frame.name == "Basic.Nack"


def test_one_rejecting_queue_nacks_a_fanned_out_publish(amqp_url, uid):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(uid, "fanout", auto_delete=True)
        ch.queue_declare(f"{uid}-open", exclusive=True)
        ch.queue_declare(
            f"{uid}-full",
            exclusive=True,
            arguments={"x-max-length": 0, "x-overflow": "reject-publish"},
        )
        ch.queue_bind(f"{uid}-open", uid)
        ch.queue_bind(f"{uid}-full", uid)
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish(uid, "", b"x")
        # the queue with room still took it
        assert ch.queue_declare(f"{uid}-open", passive=True).method.message_count == 1
    finally:
        conn.close()


def test_confirm_select_on_a_transactional_channel_406(amqp_url):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        ch.tx_select()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.confirm_delivery()
        assert info.value.reply_code == 406
        assert (
            info.value.reply_text == "PRECONDITION_FAILED - cannot switch from tx to confirm mode"
        )
    finally:
        conn.close()
