"""basic.consume and basic.cancel: no-ack consumers, exclusive consumers, generated and duplicate
consumer tags, cancel, the broker's basic.cancel when a consumed queue goes away, round-robin.
Run against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio
import re
import time

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.clients import blocking_connection as _pika
from tests.support.clients import pika_wait as _wait
from tests.support.raw_amqp import RawClient


async def _until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_no_ack_consumer_gets_everything_in_order(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        await ch.set_qos(prefetch_count=1)  # does not limit a no-ack consumer
        queue = await ch.declare_queue(uid, exclusive=True)
        for i in range(20):
            await ch.default_exchange.publish(aio_pika.Message(b"%d" % i), routing_key=uid)
        got: list[bytes] = []

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            got.append(message.body)

        await queue.consume(on_message, no_ack=True)
        await _until(lambda: len(got) == 20)
        assert got == [b"%d" % i for i in range(20)]
        declared = await ch.declare_queue(uid, passive=True)
        assert declared.declaration_result.message_count == 0


def test_exclusive_consumer_refused_when_queue_has_consumers(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_consume(uid, lambda *a: None, consumer_tag="first")
        other = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            other.basic_consume(uid, lambda *a: None, exclusive=True)
        assert info.value.reply_code == 403
        assert info.value.reply_text == (
            f"ACCESS_REFUSED - queue '{uid}' in vhost '/' in exclusive use"
        )
        assert ch.is_open
    finally:
        conn.close()


def test_consumer_refused_when_queue_has_an_exclusive_consumer(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_consume(uid, lambda *a: None, exclusive=True)
        for exclusive in (False, True):
            other = conn.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                other.basic_consume(uid, lambda *a: None, exclusive=exclusive)
            assert info.value.reply_code == 403
            assert info.value.reply_text == (
                f"ACCESS_REFUSED - queue '{uid}' in vhost '/' in exclusive use"
            )
        # once the exclusive consumer is gone, others may consume
        ch.close()
        conn.channel().basic_consume(uid, lambda *a: None)
    finally:
        conn.close()


def test_server_generated_consumer_tags(amqp_url, uid):
    # client libraries pick their own tags, so ask with an empty tag on a raw connection
    with RawClient(amqp_url) as raw:
        raw.open()
        raw.open_channel(1)
        raw.send_method(1, commands.Queue.Declare(queue=uid, exclusive=True))
        raw.expect("Queue.DeclareOk")
        tags = set()
        for _ in range(3):
            raw.send_method(1, commands.Basic.Consume(queue=uid, consumer_tag=""))
            tag = raw.expect("Basic.ConsumeOk").consumer_tag
            assert re.fullmatch(r"amq\.ctag-[A-Za-z0-9_-]{22}", tag), tag
            tags.add(tag)
        assert len(tags) == 3
        raw.send_method(1, commands.Basic.Cancel(consumer_tag=tags.pop()))
        assert raw.expect("Basic.CancelOk")


def test_duplicate_consumer_tag_on_a_channel_closes_the_connection_530(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_consume(uid, lambda *a: None, consumer_tag="dup")
        # the same tag on another channel is fine
        conn.channel().basic_consume(uid, lambda *a: None, consumer_tag="dup")
        with RawClient(amqp_url) as raw:
            raw.open()
            raw.open_channel(1)
            raw.send_method(1, commands.Queue.Declare(queue=f"{uid}-raw", exclusive=True))
            raw.expect("Queue.DeclareOk")
            for _ in range(2):
                raw.send_method(1, commands.Basic.Consume(queue=f"{uid}-raw", consumer_tag="dup"))
            closed = raw.wait_closed()
            assert closed is not None
            assert (closed.scope, closed.reply_code) == ("connection", 530)
            assert closed.reply_text == "NOT_ALLOWED - attempt to reuse consumer tag 'dup'"
            assert (closed.class_id, closed.method_id) == (60, 20)
        assert conn.is_open  # only the raw connection was closed
    finally:
        conn.close()


def test_duplicate_consumer_tag_seen_by_pika(amqp_url, uid):
    conn = _pika(amqp_url)
    ch = conn.channel()
    ch.queue_declare(uid, exclusive=True)
    ch.basic_consume(uid, lambda *a: None, consumer_tag="dup")
    # pika refuses a duplicate tag itself, so send the second consume underneath it
    ch._impl._send_method(pika.spec.Basic.Consume(queue=uid, consumer_tag="dup"))
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        _wait(lambda: False, conn)
    assert info.value.reply_code == 530
    assert info.value.reply_text == "NOT_ALLOWED - attempt to reuse consumer tag 'dup'"


async def test_cancel_stops_deliveries_and_unknown_tag_is_fine(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    try:
        ch = await conn.channel()
        await ch.queue_declare(uid, exclusive=True)
        got: list[bytes] = []

        async def on_message(message: aiormq.abc.DeliveredMessage) -> None:
            got.append(message.body)

        ok = await ch.basic_consume(uid, on_message, no_ack=True, consumer_tag="c1")
        await ch.basic_publish(b"before", routing_key=uid)
        await _until(lambda: got == [b"before"])
        cancel_ok = await ch.basic_cancel(ok.consumer_tag)
        assert cancel_ok.consumer_tag == "c1"
        await ch.basic_publish(b"after", routing_key=uid)
        assert (await ch.queue_declare(uid, passive=True)).message_count == 1
        assert got == [b"before"]
        # cancelling a tag that is not (or no longer) consuming is answered with cancel-ok
        for tag in ("c1", "never-used"):
            assert (await ch.basic_cancel(tag)).consumer_tag == tag
        await ch.basic_qos(prefetch_count=1)  # the channel is still open
    finally:
        await conn.close()


def test_cancel_with_unacked_messages_keeps_them_unacked(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        for i in range(3):
            ch.basic_publish("", uid, b"%d" % i)
        got = []
        tag = ch.basic_consume(uid, lambda c, m, p, b: got.append(m.delivery_tag))
        _wait(lambda: len(got) == 3, conn)
        ch.basic_cancel(tag)
        assert ch.queue_declare(uid, passive=True).method.message_count == 0
        ch.basic_ack(delivery_tag=0, multiple=True)  # still acknowledgeable after cancel
        ch.basic_recover(requeue=True)
        assert ch.queue_declare(uid, passive=True).method.message_count == 0
    finally:
        conn.close()


def test_queue_deleted_consumer_is_cancelled_by_the_broker_pika(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid)
        cancelled = []
        ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
        ch.basic_consume(uid, lambda *a: None, consumer_tag="watched")
        other = conn.channel()
        other.queue_delete(uid)
        _wait(lambda: cancelled, conn)
        assert cancelled == ["watched"]
        assert ch.is_open
        assert not ch.consumer_tags
    finally:
        conn.close()


async def test_queue_deleted_consumer_is_cancelled_by_the_broker_aio_pika(amqp_url, uid):
    async with await aio_pika.connect(amqp_url) as conn:
        ch = await conn.channel()
        queue = await ch.declare_queue(uid)
        cancelled: list[str] = []
        underlay = await ch.get_underlay_channel()

        async def on_cancel(frame: aiormq.spec.Basic.Cancel) -> None:
            cancelled.append(frame.consumer_tag)

        underlay.on_consumer_cancel_callbacks.add(on_cancel)

        async def ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            return None

        tag = await queue.consume(ignore, consumer_tag="aio-watched")
        async with await aio_pika.connect(amqp_url) as deleter:
            await (await deleter.channel()).queue_delete(uid)
        await _until(lambda: cancelled)
        assert cancelled == [tag] == ["aio-watched"]
        assert not ch.is_closed


def test_cancel_notification_follows_the_delete_ok_on_the_same_channel(amqp_url, uid):
    with RawClient(amqp_url) as raw:
        raw.open(capabilities={"consumer_cancel_notify": True})
        raw.open_channel(1)
        raw.send_method(1, commands.Queue.Declare(queue=uid))
        raw.expect("Queue.DeclareOk")
        raw.send_method(1, commands.Basic.Consume(queue=uid, consumer_tag="c"))
        raw.expect("Basic.ConsumeOk")
        raw.send_method(1, commands.Queue.Delete(queue=uid))
        names = []
        while "Basic.Cancel" not in names:
            _channel, frame = raw.read_frame()
            names.append(frame.name)
            if frame.name == "Basic.Cancel":
                assert frame.consumer_tag == "c"
                assert frame.nowait
        assert names == ["Queue.DeleteOk", "Basic.Cancel"]


def test_no_cancel_notification_without_the_capability(amqp_url, uid):
    with RawClient(amqp_url) as raw:
        raw.open(capabilities={})
        raw.open_channel(1)
        raw.send_method(1, commands.Queue.Declare(queue=uid))
        raw.expect("Queue.DeclareOk")
        raw.send_method(1, commands.Basic.Consume(queue=uid, consumer_tag="c"))
        raw.expect("Basic.ConsumeOk")
        raw.send_method(1, commands.Queue.Delete(queue=uid))
        raw.send_method(1, commands.Basic.Qos(prefetch_count=1))
        names = [raw.read_frame()[1].name, raw.read_frame()[1].name]
        assert names == ["Queue.DeleteOk", "Basic.QosOk"]
        # the consumer is gone all the same: its tag can be cancelled (cancel-ok) and reused
        raw.send_method(1, commands.Queue.Declare(queue=uid, exclusive=True))
        raw.expect("Queue.DeclareOk")
        raw.send_method(1, commands.Basic.Consume(queue=uid, consumer_tag="c"))
        assert raw.read_frame()[1].name == "Basic.ConsumeOk"


def test_consume_from_missing_queue_404(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume(f"{uid}-missing", lambda *a: None)
        assert info.value.reply_code == 404
        assert info.value.reply_text == f"NOT_FOUND - no queue '{uid}-missing' in vhost '/'"
    finally:
        conn.close()


def test_round_robin_between_consumers(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        got: dict[str, list[bytes]] = {"a": [], "b": [], "c": []}
        for tag in got:
            consumer_ch = conn.channel()
            consumer_ch.basic_consume(
                uid,
                lambda c, m, p, b: got[m.consumer_tag].append(b),
                auto_ack=True,
                consumer_tag=tag,
            )
        for i in range(9):
            ch.basic_publish("", uid, b"%d" % i)
        _wait(lambda: sum(len(v) for v in got.values()) == 9, conn)
        assert got == {
            "a": [b"0", b"3", b"6"],
            "b": [b"1", b"4", b"7"],
            "c": [b"2", b"5", b"8"],
        }
    finally:
        conn.close()


def test_consumer_priority_is_served_first(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_qos(prefetch_count=2)
        got: dict[str, list[bytes]] = {"low": [], "high": []}
        for tag, args in (("low", {}), ("high", {"x-priority": 5})):
            ch.basic_consume(
                uid,
                lambda c, m, p, b: got[m.consumer_tag].append(b),
                consumer_tag=tag,
                arguments=args,
            )
        for i in range(3):
            ch.basic_publish("", uid, b"%d" % i)
        _wait(lambda: len(got["low"]) + len(got["high"]) == 3, conn)
        # the high-priority consumer takes what its prefetch allows, the rest spills over
        assert got == {"high": [b"0", b"1"], "low": [b"2"]}
    finally:
        conn.close()
