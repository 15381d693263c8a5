"""The connection level: handshake, authentication, vhosts, tuning, heartbeats, channels."""

from __future__ import annotations

import struct
import time
from concurrent.futures import ThreadPoolExecutor

import aio_pika
import aiormq
import amqp
import kombu
import pika
import pika.exceptions
import pytest
from pamqp import commands

import rabbitish
from tests.support.raw_amqp import PROTOCOL_HEADER, RawClient, host_port

CAPABILITIES = [
    ("publisher_confirms", True),
    ("exchange_exchange_bindings", True),
    ("basic.nack", True),
    ("consumer_cancel_notify", True),
    ("connection.blocked", True),
    ("consumer_priorities", True),
    ("authentication_failure_close", True),
    ("per_consumer_qos", True),
    ("direct_reply_to", True),
]
# rabbitish announces RabbitMQ's table and then its own keys, which RabbitMQ does not have.
RABBITISH_ONLY = [("rabbitish.half_transactions", True)]
LOGIN_REFUSED = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism {}. "
    "For details see the broker logfile."
)


def _bad_password(url: str) -> str:
    return url.replace("guest:guest@", "guest:wrong@")


def _vhost(url: str, vhost: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + vhost


def _host(url: str) -> str:
    host, port = host_port(url)
    return f"{host}:{port}"


# ---------------------------------------------------------------------- connection.start
def _capabilities(request: pytest.FixtureRequest) -> list[tuple[str, bool]]:
    """The capability table expected of the broker `amqp_url` names in this test."""
    on_rabbitish = request.node.callspec.params["amqp_url"] == "rabbitish"
    return CAPABILITIES + RABBITISH_ONLY if on_rabbitish else CAPABILITIES


def _start(url: str) -> tuple[commands.Connection.Start, bytes]:
    """connection.start decoded, and the raw bytes of its capabilities table."""
    with RawClient(url) as c:
        c.send(PROTOCOL_HEADER)
        raw = c.read_raw_frame()
    assert raw is not None and raw[0] == 1
    from pamqp import frame

    payload = raw[2]
    _, _, start = frame.unmarshal(struct.pack(">BHI", 1, 0, len(payload)) + payload + b"\xce")
    return start, _table_entry(payload[6:], "capabilities")


def _table_entry(table: bytes, wanted: str) -> bytes:
    """The encoded value of key `wanted` in a field table (with its length prefix)."""
    end = 4 + struct.unpack_from(">I", table)[0]
    pos = 4
    while pos < end:
        key = table[pos + 1 : pos + 1 + table[pos]].decode()
        pos += 1 + table[pos]
        kind = table[pos : pos + 1]
        size = {b"t": 1}.get(kind)
        length = 1 + (size if size is not None else 4 + struct.unpack_from(">I", table, pos + 1)[0])
        if key == wanted:
            return table[pos : pos + length]
        pos += length
    raise KeyError(wanted)


def test_connection_start_announces_what_rabbitmq_announces(amqp_url, request):
    start, _ = _start(amqp_url)
    assert (start.version_major, start.version_minor) == (0, 9)
    assert start.mechanisms == "PLAIN AMQPLAIN"
    assert start.locales == "en_US"
    props = start.server_properties
    assert list(props) == [
        "capabilities",
        "cluster_name",
        "copyright",
        "information",
        "platform",
        "product",
        "version",
    ]
    assert props["product"] == "RabbitMQ"
    assert list(props["capabilities"].items()) == _capabilities(request)


@pytest.mark.rabbitmq
def test_capability_table_is_rabbitmqs_byte_for_byte_then_rabbitish_keys(broker_url, rabbitmq_url):
    ours, theirs = _start(broker_url)[1], _start(rabbitmq_url)[1]
    key = b"rabbitish.half_transactions"
    extra = bytes([len(key)]) + key + b"t\x01"
    assert ours[0:1] == theirs[0:1] == b"F"
    assert ours[5:] == theirs[5:] + extra
    (ours_size,), (theirs_size,) = (
        struct.unpack_from(">I", ours, 1),
        struct.unpack_from(">I", theirs, 1),
    )
    assert ours_size == theirs_size + len(extra)


async def test_aiormq_sees_the_capabilities(amqp_url, request):
    connection = await aiormq.connect(amqp_url)
    try:
        assert list(connection.server_properties["capabilities"].items()) == _capabilities(request)
    finally:
        await connection.close()


def test_pika_sees_the_half_transactions_capability(amqp_url, request):
    """rabbitish.spark decides between job-atomic and per-task writes on this key."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        announced = connection._impl.server_capabilities.get("rabbitish.half_transactions")
    finally:
        connection.close()
    on_rabbitish = request.node.callspec.params["amqp_url"] == "rabbitish"
    assert announced is (True if on_rabbitish else None)


# ---------------------------------------------------------------------- authentication
def test_pika_logs_in_with_plain(amqp_url):
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        assert connection.is_open
        assert connection.channel().is_open
    finally:
        connection.close()


@pytest.mark.parametrize("mechanism", ["AMQPLAIN", "PLAIN"])
def test_py_amqp_logs_in(amqp_url, mechanism):
    connection = amqp.Connection(
        host=_host(amqp_url), userid="guest", password="guest", login_method=mechanism
    )
    connection.connect()
    try:
        channel = connection.channel()
        name, _, _ = channel.queue_declare(exclusive=True)
        assert name.startswith("amq.gen-")
    finally:
        connection.close()


def test_kombu_round_trip(amqp_url, uid):
    with kombu.Connection(amqp_url) as connection:
        queue = connection.SimpleQueue(uid, queue_opts={"auto_delete": True})
        try:
            queue.put({"hello": "kombu"})
            message = queue.get(timeout=5)
            message.ack()
            assert message.payload == {"hello": "kombu"}
        finally:
            queue.close()


def test_wrong_password_is_refused_with_403_pika(amqp_url):
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as info:
        pika.BlockingConnection(pika.URLParameters(_bad_password(amqp_url)))
    assert LOGIN_REFUSED.format("PLAIN") in str(info.value)


def test_wrong_password_is_refused_with_403_amqplain(amqp_url):
    connection = amqp.Connection(
        host=_host(amqp_url), userid="guest", password="wrong", login_method="AMQPLAIN"
    )
    with pytest.raises(amqp.exceptions.AccessRefused) as info:
        connection.connect()
    assert info.value.reply_text == LOGIN_REFUSED.format("AMQPLAIN")
    assert (info.value.method_sig or (0, 0)) == (0, 0)


async def test_wrong_password_is_refused_aiormq(amqp_url):
    with pytest.raises(aiormq.exceptions.ProbableAuthenticationError) as info:
        await aiormq.connect(_bad_password(amqp_url))
    assert info.value.args == (LOGIN_REFUSED.format("PLAIN"),)


def _refused(url: str, mechanism: str, response: bytes) -> tuple[object, bool]:
    """The close method the broker sent (if any) and whether the socket then closed."""
    with RawClient(url, timeout=10) as c:
        c.handshake(mechanism=mechanism, response=response)
        closed = c.wait_closed(answer=False, timeout=8)
        summary = closed and (
            closed.reply_code,
            closed.reply_text,
            closed.class_id,
            closed.method_id,
        )
        return summary, c.socket_closed(timeout=8)


_WRONG_AMQPLAIN = b"\x05LOGINS\x00\x00\x00\x05guest\x08PASSWORDS\x00\x00\x00\x05wrong"
REFUSED_LOGINS = {
    # Wrong credentials: 403 for clients announcing authentication_failure_close.
    ("PLAIN", b"\0guest\0wrong"): ((403, LOGIN_REFUSED.format("PLAIN"), 0, 0), True),
    ("AMQPLAIN", _WRONG_AMQPLAIN): ((403, LOGIN_REFUSED.format("AMQPLAIN"), 0, 0), True),
    # Malformed responses: the socket just closes.
    ("PLAIN", b"guest\0guest\0guest"): (None, True),  # no authorization identity allowed
    ("PLAIN", b"\0guest"): (None, True),
    ("AMQPLAIN", b"\x05LOGINS\x00\x00\x00\x05guest"): (None, True),  # no PASSWORD
}


def test_refused_logins(amqp_url):
    """Run concurrently: RabbitMQ keeps each refused socket open for 3 s."""
    with ThreadPoolExecutor(len(REFUSED_LOGINS)) as pool:
        futures = {case: pool.submit(_refused, amqp_url, *case) for case in REFUSED_LOGINS}
        assert {case: f.result() for case, f in futures.items()} == REFUSED_LOGINS


def test_amqplain_raw_login(amqp_url):
    response = b"\x05LOGINS\x00\x00\x00\x05guest\x08PASSWORDS\x00\x00\x00\x05guest"
    with RawClient(amqp_url) as c:
        c.handshake(mechanism="AMQPLAIN", response=response)
        assert c.expect("Connection.OpenOk") is not None


# ---------------------------------------------------------------------- vhosts
def test_unknown_vhost_is_refused_with_530(amqp_url):
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as info:
        pika.BlockingConnection(pika.URLParameters(_vhost(amqp_url, "no-such-vhost")))
    assert "(530) 'NOT_ALLOWED - vhost no-such-vhost not found'" in str(info.value)
    with RawClient(amqp_url) as c:
        c.handshake(vhost="no-such-vhost")
        closed = c.wait_closed()
        assert closed is not None
        assert (closed.scope, closed.class_id, closed.method_id) == ("connection", 10, 40)


async def test_more_vhosts_by_config():
    async with rabbitish.Broker(port=0, data_dir=":memory:", vhosts=("/", "other")) as broker:
        other = await aio_pika.connect(_vhost(broker.url, "other"))
        default = await aio_pika.connect(broker.url)
        try:
            ch_other, ch_default = await other.channel(), await default.channel()
            await ch_other.declare_queue("shared-name", auto_delete=True)
            await ch_other.default_exchange.publish(aio_pika.Message(b"in other"), "shared-name")
            # The same name in "/" is a different queue, which does not exist yet.
            with pytest.raises(aiormq.exceptions.ChannelNotFoundEntity):
                await ch_default.declare_queue("shared-name", passive=True)
            queue = await ch_other.get_queue("shared-name")
            message = await queue.get(timeout=5)
            assert message.body == b"in other"
            await message.ack()
        finally:
            await other.close()
            await default.close()
        with pytest.raises(aiormq.exceptions.AMQPError):
            await aio_pika.connect(_vhost(broker.url, "third"))


# ---------------------------------------------------------------------- tuning
def test_tune_offers_rabbitmq_defaults(amqp_url):
    with RawClient(amqp_url) as c:
        c.open()
        assert c.tune is not None
        assert (c.tune.channel_max, c.tune.frame_max, c.tune.heartbeat) == (2047, 131072, 60)


def test_pika_negotiates_the_servers_values_by_default(amqp_url):
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        params = connection._impl.params
        assert (params.channel_max, params.frame_max, params.heartbeat) == (2047, 131072, 60)
    finally:
        connection.close()


def test_pika_smaller_values_are_honoured(amqp_url, uid):
    url = f"{amqp_url}?heartbeat=5&channel_max=100&frame_max=8192"
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        params = connection._impl.params
        assert (params.channel_max, params.frame_max, params.heartbeat) == (100, 8192, 5)
        channel = connection.channel()
        channel.queue_declare(uid, auto_delete=True)
        body = bytes(range(256)) * 100  # several frames at frame_max 8192
        channel.basic_publish("", uid, body)
        _, _, got = channel.basic_get(uid, auto_ack=True)
        assert got == body
    finally:
        connection.close()


def test_server_splits_bodies_at_the_negotiated_frame_max(amqp_url, uid):
    """Deliveries to a client that tuned frame_max down come in body frames that fit it."""
    body = bytes(i % 253 for i in range(10_000))
    with RawClient(amqp_url).open(frame_max=4096) as c:
        c.open_channel(1)
        c.send_method(1, commands.Queue.Declare(queue=uid, auto_delete=True))
        c.expect("Queue.DeclareOk")
        c.send_method(1, commands.Basic.Publish(exchange="", routing_key=uid))
        from tests.support.raw_amqp import content_header_frame, raw_frame

        c.send(content_header_frame(1, len(body)))
        for start in range(0, len(body), 4088):
            c.send(raw_frame(3, 1, body[start : start + 4088]))
        c.send_method(1, commands.Basic.Get(queue=uid, no_ack=True))
        c.expect("Basic.GetOk")
        header = c.read_raw_frame()
        assert header is not None and header[0] == 2
        sizes, got = [], b""
        while len(got) < len(body):
            frame = c.read_raw_frame()
            assert frame is not None and frame[0] == 3
            sizes.append(len(frame[2]))
            got += frame[2]
        assert got == body
        assert sizes == [4088, 4088, 10_000 - 2 * 4088]


# ---------------------------------------------------------------------- heartbeats
def test_server_sends_heartbeats(amqp_url):
    """A client that negotiated heartbeat=1 gets heartbeat frames (and, sending its own,
    stays connected)."""
    with RawClient(amqp_url).open(heartbeat=1) as c:
        seen, deadline = 0, time.monotonic() + 2.5
        while seen < 2 and time.monotonic() < deadline:
            c.send(b"\x08\x00\x00\x00\x00\x00\x00\xce")
            try:
                frame = c.read_raw_frame(timeout=0.3)
            except TimeoutError:
                continue
            assert frame is not None, "closed while the client sent heartbeats"
            seen += frame[0] == 8
        assert seen >= 2
        c.open_channel(1)  # still usable


def test_silent_client_is_dropped_after_missed_heartbeats(amqp_url):
    with RawClient(amqp_url, timeout=5).open(heartbeat=1) as c:
        started = time.monotonic()
        assert c.socket_closed(timeout=4.5)
        assert 1.5 < time.monotonic() - started < 4.0


def test_heartbeat_zero_means_none(amqp_url):
    with RawClient(amqp_url).open(heartbeat=0) as c, pytest.raises(TimeoutError):
        c.read_raw_frame(timeout=1.2)


# ---------------------------------------------------------------------- channels
async def test_channels_open_and_close_aiormq(amqp_url):
    connection = await aiormq.connect(amqp_url)
    try:
        channels = [await connection.channel() for _ in range(3)]
        assert len({ch.number for ch in channels}) == 3
        await channels[1].close()
        reopened = await connection.channel(channel_number=channels[1].number)
        declared = await reopened.queue_declare(exclusive=True)
        assert declared.queue.startswith("amq.gen-")
        for ch in (channels[0], channels[2], reopened):
            await ch.close()
    finally:
        await connection.close()


async def test_channel_close_and_reopen_aio_pika(amqp_url):
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        await channel.close()
        assert channel.is_closed
        channel = await connection.channel()
        queue = await channel.declare_queue(exclusive=True)
        assert queue.name.startswith("amq.gen-")
    finally:
        await connection.close()


def test_channel_number_can_be_reused_after_close(amqp_url):
    with RawClient(amqp_url).open() as c:
        c.open_channel(5)
        c.send_method(
            5, commands.Channel.Close(reply_code=200, reply_text="", class_id=0, method_id=0)
        )
        c.expect("Channel.CloseOk")
        c.open_channel(5)


def test_channel_flow(amqp_url):
    """flow(active=true) is acknowledged; RabbitMQ refuses active=false on the connection."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    assert channel.flow(True) is True
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        channel.flow(False)
    assert (info.value.reply_code, info.value.reply_text) == (540, "NOT_IMPLEMENTED - active=false")


def test_connection_close_is_answered(amqp_url):
    with RawClient(amqp_url).open() as c:
        c.open_channel(1)
        c.send_method(
            0, commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
        )
        assert c.expect("Connection.CloseOk") is not None


def test_update_secret_is_acknowledged(amqp_url):
    with RawClient(amqp_url).open() as c:
        c.send_method(0, commands.Connection.UpdateSecret(new_secret="guest", reason="rotate"))
        assert c.expect("Connection.UpdateSecretOk") is not None
