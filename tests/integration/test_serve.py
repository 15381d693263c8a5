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
from pathlib import Path

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

import rabbitish
from tests.support.clients import free_port as _free_port
from tests.support.raw_amqp import RawClient

SHUTDOWN = (320, "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'")
BIN = Path(sys.executable).parent
COMMANDS = {
    "script": [str(BIN / "rabbitish")],
    "module": [sys.executable, "-m", "rabbitish"],
}


@contextmanager
def serving(kind: str, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str, float]]:
    """Start the broker process; yield it, its URL and how long until a client completed the
    AMQP handshake. The process is stopped (and reaped) on exit."""
    port = _free_port()
    url = f"amqp://guest:guest@127.0.0.1:{port}/%2F"
    args = [
        *COMMANDS[kind],
        "serve",
        "--port",
        str(port),
        "--data-dir",
        ":memory:",
        "--management-port",
        "0",
        *extra,
    ]
    started = time.monotonic()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, cwd=os.getcwd())
    try:
        deadline = started + 10
        while True:
            try:
                RawClient(url, timeout=1).open().close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.002)
        yield proc, url, time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_serve_accepts_connections_within_half_a_second(kind):
    with serving(kind) as (proc, url, elapsed):
        assert elapsed < 0.5, f"first handshake after {elapsed:.3f} s"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert f"127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}" in lines[0]


@pytest.mark.parametrize(("kind", "sig"), [("script", signal.SIGINT), ("module", signal.SIGTERM)])
def test_signal_closes_clients_with_320_and_exits_0(kind, sig):
    with serving(kind) as (proc, url, _):
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        channel.queue_declare("", exclusive=True)
        proc.send_signal(sig)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                connection.process_data_events(time_limit=0.1)
        assert (info.value.reply_code, info.value.reply_text) == SHUTDOWN
        assert proc.wait(timeout=5) == 0


def test_serve_options_and_host(tmp_path):
    with serving("module", "--host", "127.0.0.1", "--fsync", "never") as (proc, url, _):
        connection = pika.BlockingConnection(pika.URLParameters(url))
        assert connection.channel().is_open
        connection.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0


def test_bad_option_exits_2():
    result = subprocess.run(
        [*COMMANDS["module"], "serve", "--no-such-option"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "--no-such-option" in result.stderr


def test_fast_path_and_full_cli_take_the_same_options():
    """`serve` is parsed by argparse on the fast path and declared in typer for --help: the
    two must not drift apart."""
    import typer.main
    from rabbitish.cli.commands import cli
    from rabbitish.cli.serve import parser

    fast = {opt for action in parser()._actions for opt in action.option_strings} - {"-h", "--help"}
    command = typer.main.get_command(cli).commands["serve"]  # type: ignore[attr-defined]
    full = {opt for param in command.params for opt in param.opts}
    assert fast == full


def test_serve_help_lists_the_options():
    result = subprocess.run(
        [*COMMANDS["script"], "serve", "--help"], capture_output=True, text=True, timeout=30
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
