"""The connector's 0-9-1 client against the suite's broker over real TCP: the handshake and the
capabilities it reports, URLs read as pika reads them, published frames byte for byte as pamqp
marshals them (bodies split at the negotiated frame size), messages back through basic.get and
basic.consume with their properties, tx commits, mandatory publishes the broker returns, and
the broker's channel and connection closes surfaced with their codes and texts."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pytest

pytest.importorskip("pyspark", reason="rabbitish.spark needs the spark extra")

from pamqp import body as pamqp_body
from pamqp import commands, frame, header

from rabbitish.spark.amqp_client import (
    AmqpError,
    ChannelClosedByBroker,
    Connection,
    ConnectionClosedByBroker,
    decode_properties,
    encode_properties,
    parse_url,
)
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY
from tests.support.clients import bodies, pika_channel


@pytest.fixture
def connection(broker_url):
    conn = Connection(broker_url)
    yield conn
    conn.close()


def test_urls_are_read_as_pika_reads_them():
    address = parse_url("amqp://u%40x:p%2Fw@example.org:5673/v%2Fh?heartbeat=7&frame_max=8192")
    assert (address.user, address.password, address.host, address.port) == (
        "u@x",
        "p/w",
        "example.org",
        5673,
    )
    assert (address.vhost, address.heartbeat, address.frame_max, address.tls) == (
        "v/h",
        7,
        8192,
        None,
    )
    default = parse_url("amqp://")
    assert (default.user, default.password, default.host, default.port, default.vhost) == (
        "guest",
        "guest",
        "localhost",
        5672,
        "/",
    )
    secure = parse_url("amqps://h/%2F")
    assert (secure.port, secure.server_hostname, secure.tls is not None) == (5671, "h", True)
    with pytest.raises(ValueError, match="scheme"):
        parse_url("http://h/")


def test_the_handshake_reports_the_brokers_capabilities(connection):
    assert connection.is_open
    assert connection.server_capabilities.get(HALF_TRANSACTIONS_CAPABILITY) is True
    assert connection.frame_max == 131_072


def test_published_frames_are_pamqps_and_messages_come_back_whole(connection, broker_url, uid):
    """A body larger than a frame is split as the spec says; get-ok and deliver carry the
    routing, the properties and the body back."""
    channel = connection.channel()
    channel.queue_declare(uid, durable=True)
    props = commands.Basic.Properties(
        headers={"a": "1"},
        content_type="text/plain",
        message_id="m1",
        timestamp=dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC),
        delivery_mode=2,
        priority=3,
    )
    encoded = encode_properties(props)
    big = bytes(range(256)) * 1024  # 256 KiB: three body frames
    channel._out.clear()
    channel.publish("", uid, encoded, b"small")
    sent = b"".join(channel._out)
    expected = (
        frame.marshal(commands.Basic.Publish(exchange="", routing_key=uid), channel.number)
        + frame.marshal(header.ContentHeader(0, 5, props), channel.number)
        + frame.marshal(pamqp_body.ContentBody(b"small"), channel.number)
    )
    assert sent == expected
    channel.publish("", uid, encoded, big)
    channel.publish("", uid, encoded, b"")
    channel.flush()

    first = channel.basic_get(uid)
    assert first is not None
    _tag, redelivered, exchange, routing_key, properties, body = first
    assert (redelivered, exchange, routing_key, body) == (False, "", uid, b"small")
    assert decode_properties(properties) == props
    channel.basic_consume(uid)
    while len(channel.deliveries) < 2:
        connection.process(5)
    second, third = channel.take()
    assert (second[5], third[5]) == (big, b"")
    assert decode_properties(second[4]).headers == {"a": "1"}
    channel.basic_ack(third[0], multiple=True)
    channel.close()
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == []


def test_tx_publishes_appear_at_commit(connection, broker_url, uid):
    channel = connection.channel()
    channel.queue_declare(uid, durable=True)
    channel.tx_select()
    channel.publish("", uid, encode_properties(commands.Basic.Properties()), b"one")
    channel.flush()
    assert channel.queue_declare(uid, passive=True).message_count == 0
    channel.tx_commit()
    assert channel.queue_declare(uid, passive=True).message_count == 1


def test_a_commit_sent_unwaited_is_answered_before_the_next_call(connection, uid):
    """tx_commit_send returns at once; anything written on the channel after it waits for its
    commit-ok first (the broker would close the connection with 504 otherwise), and so does
    tx_commits_wait."""
    channel = connection.channel()
    channel.queue_declare(uid, durable=True)
    channel.tx_select()
    empty = encode_properties(commands.Basic.Properties())
    for body in (b"one", b"two"):
        channel.publish("", uid, empty, body)
        channel.tx_commit_send()
    assert channel.queue_declare(uid, passive=True).message_count == 2
    channel.publish("", uid, empty, b"three")
    channel.tx_commit_send()
    channel.tx_commits_wait()
    channel.tx_commits_wait()  # nothing left to wait for
    assert channel.queue_declare(uid, passive=True).message_count == 3


def test_a_commit_sent_unwaited_that_fails_raises_at_the_wait(connection, uid):
    channel = connection.channel()
    channel.tx_select()
    channel.publish(f"{uid}-missing", "k", encode_properties(commands.Basic.Properties()), b"x")
    channel.tx_commit_send()
    with pytest.raises(ChannelClosedByBroker) as info:
        channel.tx_commits_wait()
    assert info.value.reply_code == 404
    assert not channel.is_open


def test_a_mandatory_publish_nobody_takes_is_returned(connection, uid):
    channel = connection.channel()
    channel.confirm_select()
    empty = encode_properties(commands.Basic.Properties())
    channel.publish("", f"{uid}-nowhere", empty, b"x", mandatory=True)
    assert channel.confirmed() is False
    channel.queue_declare(uid)
    channel.publish("", uid, empty, b"x", mandatory=True)
    assert channel.confirmed() is True


def test_a_channel_the_broker_closes_raises_its_code_and_text(connection, uid):
    channel = connection.channel()
    channel.tx_select()
    channel.publish(f"{uid}-missing", "k", encode_properties(commands.Basic.Properties()), b"x")
    with pytest.raises(ChannelClosedByBroker) as info:
        channel.tx_commit()
    assert info.value.reply_code == 404
    assert info.value.reply_text == f"NOT_FOUND - no exchange '{uid}-missing' in vhost '/'"
    assert not channel.is_open
    assert connection.is_open
    other = connection.channel()
    with pytest.raises(ChannelClosedByBroker, match="NOT_FOUND"):
        other.queue_declare(f"{uid}-absent", passive=True)


def test_a_refused_login_raises_the_connection_close(broker_url):
    wrong = broker_url.replace("guest:guest", "guest:wrong")
    with pytest.raises(ConnectionClosedByBroker) as info:
        Connection(wrong)
    assert info.value.reply_code == 403
    assert info.value.reply_text.startswith("ACCESS_REFUSED")


def test_wake_cuts_a_wait_short(connection):
    import threading
    import time

    connection.channel()
    threading.Timer(0.05, connection.wake).start()
    started = time.monotonic()
    connection.process(30)
    assert time.monotonic() - started < 10


def test_deliveries_taken_while_a_large_one_arrives_lose_nothing(connection, uid):
    """`take` between reads, while a 10 MiB message is half in: it still arrives whole."""
    channel = connection.channel()
    channel.queue_declare(uid)
    empty = encode_properties(commands.Basic.Properties())
    big = bytes(range(256)) * (10 * 4096)
    for body in (b"a", big, b"b"):
        channel.publish("", uid, empty, body)
    channel.flush()
    channel.basic_consume(uid)
    taken: list[bytes] = []
    while len(taken) < 3:
        connection.process(5)
        taken += [delivery[5] for delivery in channel.take()]
    assert taken == [b"a", big, b"b"]


def test_amqps_urls_connect_over_tls(tmp_path):
    """amqps:// with the CA named in ssl_options, as pika's URLs name it; the server
    certificate is checked against the host name."""
    from rabbitish.testing import running_broker
    from tests.support.tls import make_ca

    ca = make_ca(tmp_path / "ca")
    with running_broker(
        tls_port=0, certfile=ca.server.cert, keyfile=ca.server.key, cafile=ca.cafile
    ) as broker:
        options = quote(repr({"cafile": ca.cafile}))
        url = f"amqps://guest:guest@localhost:{broker.tls_port}/%2F?ssl_options={options}"
        conn = Connection(url)
        try:
            channel = conn.channel()
            assert channel.queue_declare("", exclusive=True).queue
        finally:
            conn.close()


def test_names_pamqp_would_refuse_are_sent_as_rabbitmq_takes_them(connection, uid):
    """Any UTF-8 name of up to 255 bytes: declared, published to, fetched and consumed."""
    name = f"caf\u00e9 {{{uid}}}!"
    channel = connection.channel()
    ok = channel.queue_declare(name, auto_delete=True)
    assert ok.queue == name
    empty = encode_properties(commands.Basic.Properties())
    channel.publish("", name, empty, b"first")
    channel.publish("", name, empty, b"second")
    channel.flush()
    got = channel.basic_get(name, no_ack=True)
    assert got is not None and (got[3], got[5]) == (name, b"first")
    channel.basic_consume(name)
    while not channel.deliveries:
        connection.process(5)
    (delivery,) = channel.take()
    assert (delivery[3], delivery[5]) == (name, b"second")
    channel.basic_ack(delivery[0])
    with pytest.raises(AmqpError):
        channel.queue_declare("x" * 256)
