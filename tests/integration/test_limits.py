"""Resource limits over real connections: a body above max_message_size closes the channel with
RabbitMQ's 406; a delivery left unacknowledged past consumer_timeout closes its channel with
RabbitMQ's 406 and goes back to its queue; the disk and memory alarms block 0-9-1 publishers
(connection.blocked with RabbitMQ's reason) and AMQP 1.0 senders (their transfers go unread)
and release them when they clear; under memory pressure transient bodies wait on disk and come
back intact. The max-size refusal and the reason given for both alarms at once are compared
with a real RabbitMQ."""

from __future__ import annotations

import subprocess
import time

import pika
import pika.exceptions
import pytest
from pamqp import commands
from rabbitish.bridge.codec import UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import Attach, Begin, Data, Target, Transfer

from rabbitish.server.amqp10 import Amqp10ServerProtocol
from rabbitish.testing import running_broker
from tests.support.amqp10 import Raw
from tests.support.queues import ready
from tests.support.raw_amqp import Closed, RawClient, content_header_frame, method_frame, raw_frame
from tests.support.real_rabbitmq import (
    RABBITMQ_SERVER,
    RealRabbit,
    rabbitmq_available,
    real_rabbitmq,
)
from tests.support.waiting import wait_until

HUGE = "1000000GB"  # more free disk than any machine here has
RABBITMQCTL = RABBITMQ_SERVER.parent / "rabbitmqctl"


def _connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _on_broker(broker, fn):
    """Run `fn` on the broker's loop thread (the monitor's state belongs to it)."""
    broker.loop.call_soon_threadsafe(fn)


def _watch_blocking(conn: pika.BlockingConnection) -> list[str]:
    events: list[str] = []
    conn.add_on_connection_blocked_callback(
        lambda _c, frame: events.append(f"blocked:{frame.method.reason}")
    )
    conn.add_on_connection_unblocked_callback(lambda _c, _f: events.append("unblocked"))
    return events


def _pump_until(conn: pika.BlockingConnection, predicate, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        conn.process_data_events(time_limit=0.05)


def test_a_message_above_the_max_size_closes_the_channel(uid):
    with running_broker(max_message_size=1000) as broker:
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.queue_declare(uid)
        ch.basic_publish("", uid, b"x" * 1000)  # at the limit: taken
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as caught:
            ch.basic_publish("", uid, b"x" * 1001)
            ch.queue_declare(uid, passive=True)
        assert caught.value.reply_code == 406
        assert caught.value.reply_text == (
            "PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000"
        )
        # The body frames after the refused header were dropped, the connection goes on.
        assert conn.channel().queue_declare(uid, passive=True).method.message_count == 1
        conn.close()


def _closes(ch) -> list[tuple[int, str]]:
    closed: list[tuple[int, str]] = []
    ch._impl.add_on_close_callback(
        lambda _ch, reason: closed.append((reason.reply_code, reason.reply_text))
    )
    return closed


def _timed_out(channel_number: int, ms: int) -> tuple[int, str]:
    return (
        406,
        f"PRECONDITION_FAILED - delivery acknowledgement on channel {channel_number} timed out."
        f" Timeout value used: {ms} ms. This timeout value can be configured, see consumers "
        "doc guide to learn more",
    )


def test_an_unacknowledged_delivery_times_out(uid):
    with running_broker(consumer_timeout=300) as broker:
        conn = _connect(broker.url)
        setup = conn.channel()
        setup.queue_declare(uid)
        setup.basic_publish("", uid, b"slow")
        consumer = conn.channel()
        closed = _closes(consumer)
        consumer.basic_consume(uid, lambda *_: None)  # never acks
        _pump_until(conn, lambda: closed)
        assert closed == [_timed_out(consumer.channel_number, 300)]
        # The message went back, and a basic.get delivery is timed too.
        getter = conn.channel()
        got_closed = _closes(getter)
        method, _props, body = getter.basic_get(uid)
        assert (body, method.redelivered) == (b"slow", True)
        _pump_until(conn, lambda: got_closed)
        assert got_closed == [_timed_out(getter.channel_number, 300)]
        assert setup.queue_declare(uid, passive=True).method.message_count == 1
        conn.close()


def test_acked_deliveries_never_time_out(uid):
    with running_broker(consumer_timeout=200) as broker:
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.queue_declare(uid)
        for i in range(3):
            ch.basic_publish("", uid, b"%d" % i)
            method, _props, _body = ch.basic_get(uid)
            ch.basic_ack(method.delivery_tag)
        # Wait past the timeout with a get left unacked on another channel as the witness.
        witness = conn.channel()
        ch.basic_publish("", uid, b"w")
        witness.basic_get(uid)
        _pump_until(conn, lambda: not witness.is_open)
        assert ch.is_open
        conn.close()


def test_the_disk_alarm_blocks_publishers_until_space_returns(uid):
    with running_broker(disk_free_limit=HUGE, management=True) as broker:
        wait_until(lambda: "disk" in broker.node.alarms.active)
        conn = _connect(broker.url)
        events = _watch_blocking(conn)
        ch = conn.channel()
        ch.queue_declare(uid)
        ch.basic_publish("", uid, b"read, then blocked")
        _pump_until(conn, lambda: events)
        assert events == ["blocked:low on disk"]
        ch.basic_publish("", uid, b"waits")
        _on_broker(broker, lambda: setattr(broker.resources, "disk_limit", 0))
        _pump_until(conn, lambda: "unblocked" in events)
        _pump_until(conn, lambda: ready(broker.url, uid) == 2)
        conn.close()


def test_the_memory_alarm_blocks_publishers_until_memory_falls(uid):
    with running_broker(memory_high_watermark="1MiB") as broker:  # below any RSS
        wait_until(lambda: "memory" in broker.node.alarms.active)
        conn = _connect(broker.url)
        events = _watch_blocking(conn)
        ch = conn.channel()
        ch.queue_declare(uid)
        ch.basic_publish("", uid, b"m")
        _pump_until(conn, lambda: events)
        assert events == ["blocked:low on memory"]
        # A connection that only consumes still works.
        other = _connect(broker.url)
        assert other.channel().queue_declare(uid, passive=True).method.message_count == 1
        other.close()
        _on_broker(broker, lambda: setattr(broker.resources, "memory_limit", 1 << 50))
        _pump_until(conn, lambda: "unblocked" in events)
        ch.basic_publish("", uid, b"after")
        _pump_until(conn, lambda: ready(broker.url, uid) == 2)
        conn.close()


def _sender(url: str, queue: str) -> Raw:
    client = Raw(url)
    client.sasl_plain()
    client.open()
    client.send(
        encode_frame(
            0, Begin(next_outgoing_id=UInt(0), incoming_window=UInt(100), outgoing_window=UInt(100))
        )
    )
    assert isinstance(client.frame().body, Begin)
    client.send(
        encode_frame(
            0,
            Attach(name="s", handle=UInt(0), role=False, target=Target(address=f"/queue/{queue}")),
        )
    )
    assert isinstance(client.frame().body, Attach)
    client.frame()  # the flow granting credit
    return client


def _transfer(i: int) -> bytes:
    return encode_frame(
        0,
        Transfer(
            handle=UInt(0),
            delivery_id=UInt(i),
            delivery_tag=b"%d" % i,
            message_format=UInt(0),
            settled=True,
        ),
        encode(Data(value=b"m%d" % i)),
    )


def test_amqp10_senders_are_blocked_by_an_alarm(uid):
    with running_broker(disk_free_limit=HUGE) as broker:
        wait_until(lambda: "disk" in broker.node.alarms.active)
        conn = _connect(broker.url)
        conn.channel().queue_declare(uid)
        client = _sender(broker.url, uid)
        try:
            client.send(_transfer(0))
            wait_until(
                lambda: any(
                    isinstance(p, Amqp10ServerProtocol) and p._blocked
                    for p in list(broker._connections)
                )
            )
            client.send(_transfer(1))  # not read while the alarm lasts
            assert ready(broker.url, uid) == 1
            _on_broker(broker, lambda: setattr(broker.resources, "disk_limit", 0))
            wait_until(lambda: ready(broker.url, uid) == 2, timeout=15)
        finally:
            client.close()
            conn.close()


def test_transient_bodies_wait_on_disk_under_memory_pressure(uid):
    # Paging from the first byte, no alarm: every body behind a queue's head goes to disk.
    with running_broker(memory_high_watermark="1024GiB", memory_paging_ratio=1e-9) as broker:
        wait_until(lambda: broker.resources.paging)
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(uid)
        bodies = [bytes([i % 256]) * (10_000 + i) for i in range(300)]
        for body in bodies:
            ch.basic_publish("", uid, body)
        assert broker.spill.paged_out >= 300 - 64
        got = []
        for _ in bodies:
            _method, _props, body = ch.basic_get(uid, auto_ack=True)
            got.append(body)
        assert got == bodies
        for body in bodies:
            ch.basic_publish("", uid, body)
        ch.queue_purge(uid)
        wait_until(lambda: broker.spill.disk_bytes == 0, timeout=10)  # the files went too
        conn.close()


class _SmallMessagesRabbit(RealRabbit):
    """A real RabbitMQ node with max_message_size = 1000."""

    def _write_config(self) -> None:
        super()._write_config()
        conf = self.data_dir / "rabbitmq.conf"
        conf.write_text(conf.read_text() + "max_message_size = 1000\n")


def _refusal(url: str) -> Closed | None:
    """Publish 1001 bytes raw (to an exchange that does not exist, to see which check comes
    first); how the broker closes the channel, and whether the connection still works."""
    with RawClient(url).open() as c:
        c.open_channel(1)
        c.send(
            method_frame(1, commands.Basic.Publish(exchange="missing", routing_key="k"))
            + content_header_frame(1, 1001)
            + raw_frame(3, 1, b"x" * 1001)
        )
        closed = c.wait_closed()
        c.open_channel(2)
        return closed


@pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ is not installed")
def test_the_max_size_refusal_is_rabbitmqs_frame_for_frame():
    with running_broker(max_message_size=1000) as broker:
        ours = _refusal(broker.url)
    with real_rabbitmq(node_class=_SmallMessagesRabbit) as rabbit:
        theirs = _refusal(rabbit.url)
    assert (
        ours
        == theirs
        == Closed(
            1,
            406,
            "PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000",
            60,
            40,
        )
    )


def _blocked_reason(url: str) -> str:
    """Publish once under the alarms and return the connection.blocked reason. The connection
    is left as it is: a blocked broker would not read its close."""
    conn = _connect(url)
    events = _watch_blocking(conn)
    conn.channel().basic_publish("", "nowhere", b"a")
    _pump_until(conn, lambda: events)
    return events[0]


@pytest.mark.skipif(not rabbitmq_available(), reason="RabbitMQ is not installed")
def test_both_alarms_give_rabbitmqs_reason():
    with running_broker(disk_free_limit=HUGE, memory_high_watermark="1MiB") as broker:
        wait_until(lambda: len(broker.node.alarms.active) == 2)
        ours = _blocked_reason(broker.url)
    with real_rabbitmq() as rabbit:
        for args in (("set_disk_free_limit", HUGE), ("set_vm_memory_high_watermark", "0.00001")):
            subprocess.run(
                [str(RABBITMQCTL), "-n", rabbit.nodename, *args],
                env=rabbit._env(),
                check=True,
                capture_output=True,
            )
        theirs = _blocked_reason(rabbit.url)
    assert ours == theirs == "blocked:low on disk & memory"


def test_persistent_bodies_on_short_durable_queues_leave_memory_under_pressure(tmp_path, uid):
    """The journal's pager drops bodies only past its per-queue limits (1000 messages,
    page_out_bytes); under memory pressure the bodies behind a short queue's head go too."""
    with running_broker(
        data_dir=str(tmp_path / "data"),
        memory_high_watermark="1024GiB",
        memory_paging_ratio=1e-9,
    ) as broker:
        wait_until(lambda: broker.resources.paging)
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(uid, durable=True)
        bodies = [bytes([i]) * 20_000 for i in range(200)]
        for body in bodies:
            ch.basic_publish("", uid, body, pika.BasicProperties(delivery_mode=2))
        queue = broker.node.vhosts["/"].queues[uid]
        in_memory = sum(entry.message.in_memory for entry in queue.ready)
        assert in_memory <= 64
        got = [ch.basic_get(uid, auto_ack=True)[2] for _ in bodies]
        assert got == bodies
        conn.close()


def test_a_body_routed_to_many_queues_is_spilled_once(uid):
    with running_broker(memory_high_watermark="1024GiB", memory_paging_ratio=1e-9) as broker:
        wait_until(lambda: broker.resources.paging)
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(uid, "fanout")
        for n in range(3):
            ch.queue_declare(f"{uid}-{n}")
            ch.queue_bind(f"{uid}-{n}", uid)
        for i in range(100):
            ch.basic_publish(uid, "", bytes([i]) * 1000)
        assert broker.spill.paged_out == 100 - 64
        assert broker.spill.disk_bytes == (100 - 64) * 1000
        for n in range(3):
            got = [ch.basic_get(f"{uid}-{n}", auto_ack=True)[2] for _ in range(100)]
            assert got == [bytes([i]) * 1000 for i in range(100)]
        conn.close()
