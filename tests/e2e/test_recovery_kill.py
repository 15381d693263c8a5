"""Killing the broker at any point of its start-up leaves a data dir the next start loads whole.

A data dir with tens of thousands of persistent messages (and wiring, and deliveries that were
unacked at the last stop) is started again and again, each start killed with SIGKILL: once at
each stage of start-up (the start is told to stop at a named stage and killed once it logs
that it is there: opened, locked, in the middle of the messages, recovered, marked as running,
journal started) and then at fixed delays after the process was spawned, wherever those land.
After every kill `serve --check` must load the whole data dir, and at the end a real start
must serve every message, in order, none lost and none doubled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pika
import pytest

from rabbitish.store import PAUSE_ENV, STAGES
from tests.support.broker_process import BrokerProcess
from tests.support.clients import pika_wait
from tests.support.waiting import wait_until

QUEUES = ("rk-a", "rk-b", "rk-c")
PER_QUEUE = 10_000  # recovery reports progress (the "messages" stage) every 10,000 messages
UNACKED = 5
DELAYS = (0.0, 0.15, 0.3, 0.5, 0.8, 1.2)  # seconds after spawn, for the kills at no stage
PERSISTENT = pika.BasicProperties(delivery_mode=2)


def body(queue: str, i: int) -> bytes:
    return f"{queue}:{i:06d}:".encode() + b"x" * 150


def populate(data: Path) -> None:
    with BrokerProcess(data_dir=data, keep_port=True) as broker:
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        ch.exchange_declare("rk-x", "topic", durable=True)
        for queue in QUEUES:
            ch.queue_declare(queue, durable=True)
            ch.queue_bind(queue, "rk-x", f"{queue}.#")
        for i in range(PER_QUEUE):
            for queue in QUEUES:
                ch.basic_publish("rk-x", f"{queue}.m", body(queue, i), PERSISTENT)
        ch.queue_declare(QUEUES[0], durable=True)  # a round trip: every publish was handled
        for _ in range(UNACKED):
            ch.basic_get(QUEUES[0], auto_ack=False)  # unacked at the stop: back redelivered
        assert broker.stop() == 0  # a clean stop writes what is pending


def serve_argv(data: Path) -> list[str]:
    options = ["--data-dir", str(data), "--port", "0", "--management-port", "0"]
    return [sys.executable, "-m", "rabbitish", "serve", *options]


def kill_at_stage(data: Path, stage: str, log: Path) -> None:
    env = {**os.environ, PAUSE_ENV: stage}
    with log.open("wb") as out:
        proc = subprocess.Popen(serve_argv(data), env=env, stdout=out, stderr=out)
    try:
        wait_until(
            lambda: (
                f"paused at stage {stage}" in log.read_text(errors="replace")
                or proc.poll() is not None
            ),
            timeout=60,
            interval=0.005,
        )
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
    finally:
        proc.kill()
        proc.wait(10)


def kill_after(data: Path, delay: float, log: Path) -> None:
    with log.open("wb") as out:
        proc = subprocess.Popen(serve_argv(data), stdout=out, stderr=out)
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        pass
    finally:
        proc.kill()
        proc.wait(10)


def check(data: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rabbitish", "serve", "--data-dir", str(data), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def drain(url: str) -> dict[str, list[tuple[bytes, bool]]]:
    """Every message of every queue, in order, with its redelivered flag."""
    found: dict[str, list[tuple[bytes, bool]]] = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=2000)
    for queue in QUEUES:
        total = ch.queue_declare(queue, passive=True).method.message_count
        got: list[tuple[bytes, bool]] = []
        ch.basic_consume(
            queue, lambda _c, m, _p, b, got=got: got.append((b, m.redelivered)), auto_ack=True
        )
        pika_wait(lambda got=got, total=total: len(got) >= total, conn, timeout=60)
        found[queue] = got
    conn.close()
    return found


@pytest.mark.timeout(600)
def test_kill_9_at_every_stage_of_start_up_loses_nothing(tmp_path):
    data = tmp_path / "data"
    populate(data)
    expected = f"{len(QUEUES) * PER_QUEUE} messages"
    assert expected in check(data)
    kills = 0
    for stage in STAGES:
        kill_at_stage(data, stage, tmp_path / f"stage-{stage}.log")
        kills += 1
        assert expected in check(data), f"after a kill at stage {stage}"
    for delay in DELAYS:
        kill_after(data, delay, tmp_path / f"delay-{delay}.log")
        kills += 1
        assert expected in check(data), f"after a kill {delay} s after spawn"
    assert kills == len(STAGES) + len(DELAYS)

    with BrokerProcess(data_dir=data) as broker:
        found = drain(broker.url)
    for queue in QUEUES:
        assert [b for b, _ in found[queue]] == [body(queue, i) for i in range(PER_QUEUE)]
    # The last start was not stopped cleanly: everything comes back redelivered, as on RabbitMQ.
    assert {flag for items in found.values() for _, flag in items} == {True}
