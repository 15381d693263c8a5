"""`rabbitish backup` under load: publishers with confirms and transactions keep going while the
backup runs; a broker started on the copy has every message confirmed or committed before the
backup began, each queue holds a prefix of what was published to it (no gap: nothing half
applied), and every transaction is wholly in the copy or wholly out."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pika

from rabbitish.testing import running_broker
from tests.support.broker_process import BrokerProcess
from tests.support.waiting import wait_until

PUBLISHERS = 2
PERSISTENT = pika.BasicProperties(delivery_mode=2)
PREFILL = 3000  # messages of PREFILL_BYTES already in the database: the copy takes a while
PREFILL_BYTES = 2048


class Publisher(threading.Thread):
    """Publishes numbered persistent messages until stopped; `done` lists what the broker
    confirmed (or committed), in order, as soon as it said so."""

    def __init__(self, url: str, name: str, send: Callable[[object, int], list[str]]) -> None:
        super().__init__(name=name, daemon=True)
        self.url, self.send = url, send
        self.done: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = pika.BlockingConnection(pika.URLParameters(self.url))
            ch = conn.channel()
            i = 0
            while not self.stopping.is_set():
                acknowledged = self.send(ch, i)  # returns once confirmed / committed
                with self.lock:
                    self.done.extend(acknowledged)
                i += 1
            conn.close()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.done)


def confirmed_publisher(url: str, queue: str) -> Publisher:
    def setup_and_send(ch: object, i: int) -> list[str]:
        if i == 0:
            ch.confirm_delivery()  # type: ignore[attr-defined]
        body = f"{queue}-{i}"
        ch.basic_publish("", queue, body.encode(), PERSISTENT)  # type: ignore[attr-defined]
        return [body]

    return Publisher(url, queue, setup_and_send)


def tx_publisher(url: str) -> Publisher:
    """Each transaction: two messages on bk.tx1 and one on bk.tx2, committed together."""

    def send(ch: object, i: int) -> list[str]:
        if i == 0:
            ch.tx_select()  # type: ignore[attr-defined]
        bodies = [("bk.tx1", f"tx-{i}-a"), ("bk.tx2", f"tx-{i}-b"), ("bk.tx1", f"tx-{i}-c")]
        for queue, body in bodies:
            ch.basic_publish("", queue, body.encode(), PERSISTENT)  # type: ignore[attr-defined]
        ch.tx_commit()  # type: ignore[attr-defined]
        return [body for _, body in bodies]

    return Publisher(url, "tx", send)


def _contents(url: str, queue: str) -> list[str]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        got = []
        while (reply := ch.basic_get(queue, auto_ack=True))[0] is not None:
            got.append(reply[2].decode(errors="replace"))
        return got
    finally:
        conn.close()


def _prefill(url: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare("bk.prefill", durable=True)
    ch.tx_select()
    for i in range(PREFILL):
        ch.basic_publish("", "bk.prefill", bytes([i % 251]) * PREFILL_BYTES, PERSISTENT)
    ch.tx_commit()
    for name in [f"bk.q{n}" for n in range(PUBLISHERS)] + ["bk.tx1", "bk.tx2"]:
        ch.queue_declare(name, durable=True)
    conn.close()


def test_backup_under_load_has_everything_confirmed_before_it_began(tmp_path: Path):
    data, dest = tmp_path / "data", tmp_path / "backup"
    with BrokerProcess(data_dir=data) as broker:
        _prefill(broker.url)
        publishers = [confirmed_publisher(broker.url, f"bk.q{n}") for n in range(PUBLISHERS)]
        publishers.append(tx_publisher(broker.url))
        for p in publishers:
            p.start()
        try:
            wait_until(lambda: all(len(p.snapshot()) >= 30 for p in publishers), timeout=30)
            before = {p.name: p.snapshot() for p in publishers}
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "rabbitish", "backup", "--data-dir", str(data), str(dest)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            took = time.monotonic() - started
            during = {p.name: len(p.snapshot()) - len(before[p.name]) for p in publishers}
            wait_until(lambda: all(len(p.snapshot()) > len(before[p.name]) + 5 for p in publishers))
        finally:
            for p in publishers:
                p.stopping.set()
            for p in publishers:
                p.join(30)
        assert [p.error for p in publishers] == [None] * len(publishers)
    assert result.returncode == 0, result.stderr
    assert "live broker" in result.stdout and "recovers as after an unclean stop" in result.stdout
    assert sum(during.values()) > 0, f"no publish was confirmed during the {took:.2f} s backup"

    with running_broker(data_dir=str(dest)) as restored:
        for n in range(PUBLISHERS):
            name = f"bk.q{n}"
            got = _contents(restored.url, name)
            # Everything confirmed before the backup, in order, and then only a prefix of what
            # followed (one publisher per queue: a gap would be a lost confirmed message).
            assert got[: len(before[name])] == before[name]
            assert got == _all_sent(name, len(got))
        tx1, tx2 = _contents(restored.url, "bk.tx1"), _contents(restored.url, "bk.tx2")
        rounds = len(tx2)
        assert tx1 == [f"tx-{i}-{s}" for i in range(rounds) for s in "ac"]  # whole or absent
        assert tx2 == [f"tx-{i}-b" for i in range(rounds)]
        assert rounds >= len(before["tx"]) // 3
        assert len(_contents(restored.url, "bk.prefill")) == PREFILL


def _all_sent(queue: str, count: int) -> list[str]:
    """The first `count` bodies the publisher of `queue` sent (the last may have been written
    but not yet confirmed when it stopped)."""
    return [f"{queue}-{i}" for i in range(count)]
