"""Starting and stopping the broker: `rabbitish serve` and `python -m rabbitish serve` as
processes, and the embedding APIs `rabbitish.Broker` and `rabbitish.running_broker()`."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

import rabbitish
from tests.support.broker_process import MODULE, SCRIPT, BrokerProcess
from tests.support.raw_amqp import RawClient

SHUTDOWN = (320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'")
COMMANDS = {"script": SCRIPT, "module": MODULE}


@contextmanager
def serving(kind: str, *extra: str) -> Iterator[BrokerProcess]:
    """Start the broker process on a port of its choosing; yield it once a client completed the
    AMQP handshake (start-up speed is measured by `python -m benchmarks.startup`, not
    asserted here). Stopped on exit."""
    with BrokerProcess(*extra, command=COMMANDS[kind]) as broker:
        RawClient(broker.url, timeout=1).open().close()
        yield broker


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_serve_accepts_connections_and_logs_one_line(kind):
    with serving(kind) as broker:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait() == 0
        lines = broker.output().splitlines()
    assert len(lines) == 1, lines
    assert f"127.0.0.1:{broker.port} " in lines[0]


@pytest.mark.parametrize(("kind", "sig"), [("script", signal.SIGINT), ("module", signal.SIGTERM)])
def test_signal_closes_clients_with_320_and_exits_0(kind, sig):
    with serving(kind) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        channel.queue_declare("", exclusive=True)
        broker.send_signal(sig)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                connection.process_data_events(time_limit=0.1)
        assert (info.value.reply_code, info.value.reply_text) == SHUTDOWN
        assert broker.wait(timeout=5) == 0


def _threads_cpus(pid: int) -> dict[int, set[int]]:
    """Each thread of `pid` (by id) -> the CPUs it may run on, from /proc."""
    cpus: dict[int, set[int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as status:
            line = next(line for line in status if line.startswith("Cpus_allowed_list:"))
        allowed: set[int] = set()
        for part in line.split(":", 1)[1].strip().split(","):
            low, _, high = part.partition("-")
            allowed.update(range(int(low), int(high or low) + 1))
        cpus[int(tid)] = allowed
    return cpus


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
    reason="CPU binding needs Linux and at least two allowed CPUs",
)
@pytest.mark.parametrize("bind_type", ["db", "u"])
def test_event_loop_thread_bound_to_one_cpu_as_rabbitmq_binds_schedulers(bind_type, tmp_path):
    """`db` (the default, RabbitMQ's +stbt db) binds the event loop's thread only: the threads
    started before it (the store's writer, uvloop's workers) keep every CPU; `u` binds none."""
    allowed = os.sched_getaffinity(0)
    extra = () if bind_type == "db" else ("--scheduler-bind-type", "u")
    with BrokerProcess(*extra, data_dir=tmp_path) as broker:
        assert broker.proc is not None
        threads = _threads_cpus(broker.proc.pid)
        loop_thread = threads.pop(broker.proc.pid)
    assert threads, "the store's writer thread is missing"
    assert all(cpus == allowed for cpus in threads.values()), threads
    if bind_type == "db":
        assert len(loop_thread) == 1 and loop_thread <= allowed
    else:
        assert loop_thread == allowed


def test_serve_options_and_host(tmp_path):
    with serving("module", "--host", "127.0.0.1", "--fsync", "never") as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        assert connection.channel().is_open
        connection.close()
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(timeout=5) == 0


def test_bad_option_exits_2():
    result = subprocess.run([*MODULE, "serve", "--no-such-option"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "--no-such-option" in result.stderr


def test_serve_help_lists_the_options():
    result = subprocess.run(
        [*SCRIPT, "serve", "--help"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    for option in ("--host", "--port", "--data-dir", "--fsync"):
        assert option in result.stdout


# ---------------------------------------------------------------------- embedding
async def test_async_broker_context():
    async with rabbitish.Broker(port=0, data_dir=":memory:") as broker:
        assert broker.url.startswith("amqp://guest:guest@127.0.0.1:")
        connection = await aio_pika.connect(broker.url)
        channel = await connection.channel()
        queue = await channel.declare_queue(exclusive=True)
        await channel.default_exchange.publish(aio_pika.Message(b"embedded"), queue.name)
        message = await queue.get(timeout=5)
        assert message.body == b"embedded"
        raw = await aiormq.connect(broker.url)
    # Leaving the block closed the clients the way RabbitMQ's shutdown does.
    with pytest.raises(aiormq.exceptions.ConnectionClosed) as info:
        await asyncio.wait_for(raw.closing, 5)
    assert info.value.args == SHUTDOWN
    await connection.close()


def test_running_broker_in_a_thread():
    with rabbitish.running_broker() as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        channel.queue_declare("embedded", auto_delete=True)
        channel.basic_publish("", "embedded", b"sync")
        assert channel.basic_get("embedded", auto_ack=True)[2] == b"sync"
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        connection.process_data_events(time_limit=2)
    assert (info.value.reply_code, info.value.reply_text) == SHUTDOWN
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()


def test_two_embedded_brokers_side_by_side():
    with rabbitish.running_broker() as one, rabbitish.running_broker() as two:
        assert one.port != two.port
        for broker in (one, two):
            connection = pika.BlockingConnection(pika.URLParameters(broker.url))
            assert connection.channel().is_open
            connection.close()
