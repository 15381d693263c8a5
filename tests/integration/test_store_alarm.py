"""While store writes fail, publishing connections are blocked as on a RabbitMQ resource alarm
(connection.blocked with the reason, nothing more read from them) and unblocked once a write
succeeds; connections that only consume go on. Unwritten work is bounded: past the backlog
limit, persistent publishes to durable queues are nacked and not kept."""

from __future__ import annotations

import sqlite3
import time

import pika
import pika.exceptions
import pytest

from rabbitish.testing import running_broker
from tests.support.management import Api
from tests.support.waiting import wait_until

PERSISTENT = pika.BasicProperties(delivery_mode=2)


def disk_full() -> None:
    raise sqlite3.OperationalError("database or disk is full")


def _connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _wait_for(conn: pika.BlockingConnection, events: list[str], name: str) -> None:
    deadline = time.monotonic() + 10
    while name not in [e.split(":")[0] for e in events]:
        assert time.monotonic() < deadline, f"no {name} (got {events})"
        conn.process_data_events(time_limit=0.1)


def test_publishers_are_blocked_while_writes_fail(tmp_path, uid):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        conn = _connect(broker.url)
        events: list[str] = []
        conn.add_on_connection_blocked_callback(
            lambda _c, frame: events.append(f"blocked:{frame.method.reason}")
        )
        conn.add_on_connection_unblocked_callback(lambda _c, _f: events.append("unblocked"))
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(uid, durable=True)
        ch.basic_publish("", uid, b"before", PERSISTENT)

        consumer = _connect(broker.url)
        cch = consumer.channel()

        broker.journal.writer.before_write = disk_full
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("", uid, b"during", PERSISTENT)
        wait_until(lambda: broker.node.alarms.active)
        assert events == []  # blocked on the next publish, as RabbitMQ does

        # The publish after the alarm is read, then the connection is blocked and told why.
        conn.channel().basic_publish("", uid, b"no confirm", PERSISTENT)
        _wait_for(conn, events, "blocked")
        assert events == ["blocked:store write failed (OperationalError: database or disk is full)"]

        # A connection that does not publish still works.
        assert cch.queue_declare(uid, passive=True).method.message_count >= 1

        broker.journal.writer.before_write = None
        _wait_for(conn, events, "unblocked")
        assert not broker.node.alarms.active
        ch.basic_publish("", uid, b"after", PERSISTENT)  # confirmed: reads go on
        conn.close()
        consumer.close()


def test_a_client_without_the_capability_is_blocked_silently(tmp_path, uid):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        params = pika.URLParameters(broker.url)
        params.client_properties = {"capabilities": {"basic.nack": True}}  # no connection.blocked
        conn = pika.BlockingConnection(params)
        events: list[str] = []
        conn.add_on_connection_blocked_callback(lambda _c, _f: events.append("blocked"))
        ch = conn.channel()
        ch.queue_declare(uid, durable=True)
        broker.journal.writer.before_write = disk_full
        ch.basic_publish("", uid, b"one", PERSISTENT)
        wait_until(lambda: broker.node.alarms.active)
        protos = [p for p in list(broker._connections) if getattr(p, "_blocked", None) is not None]
        ch.basic_publish("", uid, b"two", PERSISTENT)
        wait_until(lambda: any(p._blocked for p in protos))
        broker.journal.writer.before_write = None
        wait_until(lambda: not any(p._blocked for p in protos))
        conn.process_data_events(time_limit=0.2)
        assert events == []
        conn.close()


def test_unwritten_work_is_bounded_while_writes_fail(tmp_path, uid):
    body = b"x" * 4096
    with running_broker(data_dir=str(tmp_path / "data"), store_backlog_limit=64 * 1024) as broker:
        setup = _connect(broker.url)
        setup.channel().queue_declare(uid, durable=True)
        setup.close()
        broker.journal.writer.retry_delay = 0.05
        broker.journal.writer.before_write = disk_full
        nacked = 0
        conns = []
        for _ in range(30):  # each connection gets one publish in before it is blocked
            conn = _connect(broker.url)
            conns.append(conn)  # a blocked connection reads no close either: close them later
            ch = conn.channel()
            ch.confirm_delivery()
            try:
                ch.basic_publish("", uid, body, PERSISTENT)
            except pika.exceptions.NackError:
                nacked += 1
        queue = broker.node.vhosts["/"].queues[uid]
        assert nacked == 30
        assert broker.journal.writer.refusing
        # 64 KiB of 4 KiB messages (plus per-record overhead): about 15 kept, the rest refused.
        assert 5 <= queue.message_count <= 17
        broker.journal.writer.before_write = None
        wait_until(lambda: broker.journal.writer.failure is None)
        assert not broker.journal.writer.refusing
        for conn in conns:
            conn.close()
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("", uid, body, PERSISTENT)
        conn.close()


def test_the_alarm_health_checks_fail_while_writes_fail(tmp_path, uid):
    """RabbitMQ's /api/health/checks/(local-)alarms answer 503 with the alarms in effect."""
    with running_broker(data_dir=str(tmp_path / "data"), management=True) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        assert api.ok("GET", "/api/health/checks/alarms") == {"status": "ok"}
        conn = _connect(broker.url)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(uid, durable=True)
        broker.journal.writer.before_write = disk_full
        with pytest.raises(pika.exceptions.NackError):
            ch.basic_publish("", uid, b"during", PERSISTENT)
        wait_until(lambda: broker.node.alarms.active)
        for check, where in (("alarms", "in the cluster"), ("local-alarms", "on the node")):
            reply = api.call("GET", f"/api/health/checks/{check}")
            assert reply.status == 503
            body = reply.json
            assert (body["status"], body["reason"]) == (
                "failed",
                f"resource alarm(s) in effect {where}",
            )
            assert [a["resource"] for a in body["alarms"]] == ["disk"]
            assert "disk is full" in body["alarms"][0]["reason"]
        broker.journal.writer.before_write = None
        wait_until(lambda: not broker.node.alarms.active, timeout=10)
        assert api.ok("GET", "/api/health/checks/local-alarms") == {"status": "ok"}
        conn.close()
