"""Half transactions across restarts of a real broker process: persistent half messages on
durable queues and decisions survive (SIGTERM and SIGKILL); transient ones and those on
non-durable queues do not; check-back timers resume with their counts; a data dir of schema 1
is migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pika
import pika.exceptions
import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.clients import pika_channel
from tests.support.half import bodies, decide, half, ready
from tests.support.waiting import wait_until

MAX_CHECKS = 10


@pytest.fixture
def broker(tmp_path: Path):
    process = BrokerProcess(
        "--half-check-interval",
        "0.1",
        "--half-check-max",
        str(MAX_CHECKS),
        data_dir=tmp_path / "data",
        keep_port=True,
    )
    try:
        yield process
    finally:
        process.close()


def _setup(url: str) -> None:
    with pika_channel(url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("dq-a", durable=True)
        ch.queue_declare("dq-b", durable=True)
        ch.queue_declare("tq", durable=False)
        ch.basic_publish("", "dq-a", b"A1", half("A"))
        ch.basic_publish("", "dq-b", b"A2", half("A"))
        ch.basic_publish("", "dq-a", b"A-transient", half("A", persistent=False))
        ch.basic_publish("", "tq", b"A-on-transient-queue", half("A"))
        ch.basic_publish("", "dq-a", b"B-transient", half("B", persistent=False))
        ch.basic_publish("", "dq-a", b"C1", half("C"))
        ch.basic_publish("", "dq-b", b"C2", half("C"))
        ch.basic_publish("", "dq-a", b"D1", half("D"))
        decide(ch, "C", "commit")
        decide(ch, "D", "rollback")


def _check_after_restart(url: str) -> None:
    with pika_channel(url) as ch:
        ch.confirm_delivery()
        assert ready(ch, "dq-a") == 1 and ready(ch, "dq-b") == 1  # C only
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, "B", mandatory=True)  # only transient messages: gone
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, "D", "commit", mandatory=True)  # rolled back: never resurrected
        decide(ch, "C", "commit", mandatory=True)  # the same decision again: a no-op
        decide(ch, "A", "commit", mandatory=True)  # its durable part survived
        assert bodies(ch, "dq-a") == [b"C1", b"A1"]
        assert bodies(ch, "dq-b") == [b"C2", b"A2"]


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_durable_half_messages_and_decisions_survive(broker, crash):
    broker.start()
    _setup(broker.url)
    broker.kill() if crash else broker.stop()
    broker.start()
    _check_after_restart(broker.url)
    broker.restart()
    with pika_channel(broker.url) as ch:
        assert ready(ch, "dq-a") == 0 and ready(ch, "dq-b") == 0  # taken: stays taken


def _counts(ch) -> list[int]:
    """x-check-count of every check waiting on the check queue, taken."""
    got = []
    while (message := ch.basic_get("checks", auto_ack=True))[0] is not None:
        got.append(message[1].headers["x-check-count"])
    return got


def test_check_timers_resume_with_their_counts(broker):
    broker.start()
    before: list[int] = []
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("work", durable=True)
        ch.queue_declare("checks", durable=True)
        headers = {"x-check-queue": "checks", "x-check-immunity": 0}
        ch.basic_publish("", "work", b"job", half("T", **headers))
        wait_until(lambda: before.extend(_counts(ch)) or len(before) >= 2, timeout=10)
    broker.stop()
    broker.start()
    after: list[int] = []
    with pika_channel(broker.url) as ch:
        wait_until(lambda: after.extend(_counts(ch)) or after, timeout=10)
        assert before == list(range(1, len(before) + 1))
        assert after[0] > before[-1], (before, after)  # counted on, not from 1 again
        wait_until(lambda: "rolled back: undecided after 10 status checks" in broker.output())
        after.extend(_counts(ch))
        assert after == list(range(after[0], MAX_CHECKS + 1))
        ch.confirm_delivery()
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, "T", "commit", mandatory=True)
        assert ready(ch, "work") == 0


def test_a_schema_1_data_dir_is_migrated(broker, tmp_path):
    broker.start()
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.queue_declare("old", durable=True)
        ch.basic_publish("", "old", b"kept", pika.BasicProperties(delivery_mode=2))
    broker.stop()
    db = sqlite3.connect(tmp_path / "data" / "rabbitish.db", isolation_level=None)
    db.executescript(
        "DROP TABLE half_txns; DROP TABLE half_messages; DROP TABLE half_decisions; "
        "DROP TABLE vhosts; DROP TABLE users; DROP TABLE permissions; DROP TABLE policies; "
        "UPDATE meta SET value = '1' WHERE key = 'schema_version';"
    )
    db.close()
    broker.start()
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", "old", b"half", half("M"))
    broker.restart()
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        decide(ch, "M", mandatory=True)
        assert bodies(ch, "old") == [b"kept", b"half"]
