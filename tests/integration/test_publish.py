"""basic.publish: mandatory returns, immediate, missing and internal exchanges, user-id and
expiration checks. Each test runs against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

import asyncio

import aiormq
import pika
import pika.exceptions
import pytest
from pamqp import commands

from tests.support.clients import blocking_connection as _pika
from tests.support.clients import pika_wait as _wait
from tests.support.raw_amqp import RawClient, content_header_frame, method_frame, raw_frame


def test_mandatory_unroutable_is_returned_with_content_intact(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        returned = []
        ch.add_on_return_callback(
            lambda _ch, method, props, body: returned.append((method, props, body))
        )
        props = pika.BasicProperties(
            content_type="application/json",
            headers={"a": 1, "nested": {"b": [1, "two"]}},
            correlation_id="c-1",
            delivery_mode=2,
        )
        ch.basic_publish("amq.direct", f"{uid}-nobody", b'{"x": 1}', props, mandatory=True)
        _wait(lambda: returned, conn)
        method, got_props, body = returned[0]
        assert (method.reply_code, method.reply_text) == (312, "NO_ROUTE")
        assert (method.exchange, method.routing_key) == ("amq.direct", f"{uid}-nobody")
        assert body == b'{"x": 1}'
        assert got_props.content_type == "application/json"
        assert got_props.headers == {"a": 1, "nested": {"b": [1, "two"]}}
        assert (got_props.correlation_id, got_props.delivery_mode) == ("c-1", 2)
        # the channel is still usable
        ch.queue_declare(uid, exclusive=True)
    finally:
        conn.close()


def test_mandatory_routable_and_non_mandatory_unroutable_are_not_returned(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        returned = []
        ch.add_on_return_callback(lambda *args: returned.append(args))
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"routed", mandatory=True)
        ch.basic_publish("amq.direct", f"{uid}-nobody", b"dropped")
        # a later mandatory unroutable publish is the barrier: returns come in order
        ch.basic_publish("", f"{uid}-nobody", b"marker", mandatory=True)
        _wait(lambda: returned, conn)
        assert [r[3] for r in returned] == [b"marker"]
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"routed"
    finally:
        conn.close()


def test_mandatory_return_on_empty_body(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        returned = []
        ch.add_on_return_callback(lambda _ch, m, p, b: returned.append(b))
        ch.basic_publish("", f"{uid}-nobody", b"", mandatory=True)
        _wait(lambda: returned, conn)
        assert returned == [b""]
    finally:
        conn.close()


async def test_immediate_closes_the_connection_540(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    ch = await conn.channel()
    await ch.queue_declare(uid, exclusive=True)
    # aiormq fails the pending call with the broker's close text (540 -> not implemented)
    expected = (asyncio.CancelledError, aiormq.exceptions.ConnectionNotImplemented)
    with pytest.raises(expected) as info:
        await ch.basic_publish(b"x", routing_key=uid, immediate=True)
        await ch.basic_qos(prefetch_count=1)
    assert str(info.value) == "NOT_IMPLEMENTED - immediate=true"
    assert conn.is_closed


@pytest.mark.parametrize("exchange", ["", "missing"])
def test_immediate_is_refused_before_the_exchange_is_looked_up(amqp_url, uid, exchange):
    with RawClient(amqp_url) as raw:
        raw.open()
        raw.open_channel(1)
        publish = commands.Basic.Publish(
            exchange=exchange and f"{uid}-{exchange}", routing_key=uid, immediate=True
        )
        raw.send(method_frame(1, publish) + content_header_frame(1, 1) + raw_frame(3, 1, b"x"))
        closed = raw.wait_closed()
        assert closed is not None
        assert (closed.scope, closed.reply_code) == ("connection", 540)
        assert closed.reply_text == "NOT_IMPLEMENTED - immediate=true"
        assert (closed.class_id, closed.method_id) == (60, 40)


def test_publish_to_missing_exchange_closes_the_channel_404(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.basic_publish(f"{uid}-nope", "rk", b"x")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(uid, exclusive=True)  # the next round trip sees the close
        assert info.value.reply_code == 404
        assert info.value.reply_text == f"NOT_FOUND - no exchange '{uid}-nope' in vhost '/'"
        assert conn.is_open
        conn.channel().queue_declare(uid, exclusive=True)
    finally:
        conn.close()


def test_publish_to_internal_exchange_is_refused_403(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.exchange_declare(uid, "fanout", internal=True, auto_delete=True)
        ch.basic_publish(uid, "", b"x")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_qos(prefetch_count=1)
        assert info.value.reply_code == 403
        assert info.value.reply_text == (
            f"ACCESS_REFUSED - cannot publish to internal exchange '{uid}' in vhost '/'"
        )
    finally:
        conn.close()


def test_user_id_must_match_the_authenticated_user(amqp_url, uid):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"ok", pika.BasicProperties(user_id="guest"))
        _method, props, body = ch.basic_get(uid, auto_ack=True)
        assert (props.user_id, body) == ("guest", b"ok")
        ch.basic_publish("", uid, b"no", pika.BasicProperties(user_id="mallory"))
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_get(uid)
        assert info.value.reply_code == 406
        assert info.value.reply_text == (
            "PRECONDITION_FAILED - user_id property set to 'mallory' but authenticated user "
            "was 'guest'"
        )
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("expiration", "detail"),
    [("soon", "no_integer"), ("-5", "{value_negative,-5}")],
)
def test_invalid_expiration_is_refused_406(amqp_url, uid, expiration, detail):
    conn = _pika(amqp_url)
    try:
        ch = conn.channel()
        ch.queue_declare(uid, exclusive=True)
        ch.basic_publish("", uid, b"x", pika.BasicProperties(expiration=expiration))
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_get(uid)
        assert info.value.reply_code == 406
        assert info.value.reply_text == (
            f"PRECONDITION_FAILED - invalid expiration '{expiration}': {detail}"
        )
    finally:
        conn.close()
