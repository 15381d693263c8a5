"""Prepared transactions across restarts of a real broker process (SIGTERM and SIGKILL): their
held publishes and their locks on persistent messages of durable queues come back, the locked
messages neither ready nor redelivered, and a decision after the restart applies or releases
them; a prepared transaction whose work was all transient survives, empty; check-back rolls a
prepared transaction back with its locks; a data dir of schema 3 is migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pika
import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.clients import pika_channel, pika_connection
from tests.support.half import bodies, decide, half_transactions, prepare, ready
from tests.support.ports import ReservedPort
from tests.support.waiting import wait_until

PERSISTENT = pika.BasicProperties(delivery_mode=2)


@pytest.fixture
def broker(tmp_path: Path):
    with ReservedPort() as management:
        process = BrokerProcess(
            "--half-check-interval",
            "0.1",
            "--half-check-max",
            "2",
            "--management-port",
            str(management.port),
            data_dir=tmp_path / "data",
            keep_port=True,
        )
        process.management_port = management.port
        try:
            yield process
        finally:
            process.close()


def _listed(broker: BrokerProcess) -> dict:
    """The half transactions the broker lists (its management API may start a moment after
    the AMQP port)."""
    url = f"http://guest:guest@127.0.0.1:{broker.management_port}"
    found: list[dict] = []

    def listed() -> bool:
        try:
            found.append(half_transactions(url))
        except OSError:
            return False
        return True

    wait_until(listed, timeout=10)
    return found[-1]


def _prepare_work(url: str, txn: str, acks: int, **headers) -> None:
    """From `in`: take `acks` messages and ack them, publish one to `out`; prepare as `txn`."""
    with pika_connection(url) as conn:
        ch = conn.channel()
        ch.tx_select()
        tags = [ch.basic_get("in")[0].delivery_tag for _ in range(acks)]
        ch.basic_publish("", "out", f"{txn}-out".encode(), PERSISTENT)
        for tag in tags:
            ch.basic_ack(tag)
        prepare(ch, txn, **headers)


def _setup(url: str) -> None:
    with pika_channel(url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("in", durable=True)
        ch.queue_declare("out", durable=True)
        for n in range(6):
            ch.basic_publish("", "in", f"m{n}".encode(), PERSISTENT)


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_prepared_work_survives_and_decides_after_restart(broker, crash):
    broker.start()
    _setup(broker.url)
    _prepare_work(broker.url, "C", acks=2)  # m0, m1
    _prepare_work(broker.url, "R", acks=2)  # m2, m3
    broker.kill() if crash else broker.stop()
    broker.start()
    listed = _listed(broker)
    assert {k: (v["messages"], v["acks"], v["prepared"]) for k, v in listed.items()} == {
        "C": (1, 2, True),
        "R": (1, 2, True),
    }
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        assert ready(ch, "in") == 2 and ready(ch, "out") == 0
        decide(ch, "C", "commit", mandatory=True)
        decide(ch, "R", "rollback", mandatory=True)
        assert bodies(ch, "out") == [b"C-out"]
    broker.restart()
    with pika_channel(broker.url) as ch:
        got = []
        while (message := ch.basic_get("in", auto_ack=True))[0] is not None:
            got.append((message[2], message[0].redelivered))
        assert got[:2] == [(b"m2", True), (b"m3", True)]
        assert [body for body, _ in got[2:]] == [b"m4", b"m5"]
        assert ready(ch, "out") == 0
    assert _listed(broker) == {}


def test_a_prepared_transaction_with_only_transient_work_survives_empty(broker):
    broker.start()
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("tq", durable=False)
        ch.basic_publish("", "tq", b"transient")
    with pika_connection(broker.url) as conn:
        ch = conn.channel()
        ch.tx_select()
        ch.basic_ack(ch.basic_get("tq")[0].delivery_tag)
        ch.basic_publish("", "tq", b"out")
        prepare(ch, "T")
    broker.kill()
    broker.start()
    assert _listed(broker)["T"]["acks"] == 0
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        decide(ch, "T", "commit", mandatory=True)  # known: a transaction manager can end it
    assert _listed(broker) == {}


def test_check_back_rolls_a_prepared_transaction_back_across_a_restart(broker):
    broker.start()
    _setup(broker.url)
    with pika_channel(broker.url) as ch:
        ch.queue_declare("checks", durable=True)
    _prepare_work(broker.url, "K", acks=1, **{"x-check-queue": "checks", "x-check-immunity": 2})
    broker.kill()  # before or after its checks began: either way they run to the end
    broker.start()
    wait_until(lambda: "rolled back: undecided after 2 status checks" in broker.output())
    wait_until(lambda: _listed(broker) == {})
    with pika_channel(broker.url) as ch:
        assert ready(ch, "in") == 6 and ready(ch, "out") == 0
        method, _props, body = ch.basic_get("in", auto_ack=True)
        assert (body, method.redelivered) == (b"m0", True)


def test_a_schema_3_data_dir_is_migrated(broker, tmp_path):
    broker.start()
    _setup(broker.url)
    broker.stop()
    db = sqlite3.connect(tmp_path / "data" / "rabbitish.db", isolation_level=None)
    db.executescript(
        "DROP TABLE half_settlements; ALTER TABLE half_txns DROP COLUMN prepared; "
        "UPDATE meta SET value = '3' WHERE key = 'schema_version';"
    )
    db.close()
    broker.start()
    _prepare_work(broker.url, "M", acks=1)
    broker.restart()
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        assert ready(ch, "in") == 5
        decide(ch, "M", "commit", mandatory=True)
        assert bodies(ch, "out") == [b"M-out"]
        assert ready(ch, "in") == 5
