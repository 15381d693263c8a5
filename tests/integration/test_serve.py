"""Starting and stopping the broker: `rabbitish serve` and `python -m rabbitish serve` as
processes, and the embedding APIs `rabbitish.Broker` and `rabbitish.running_broker()`."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest

import rabbitish
from rabbitish.config import FSYNC_MODES
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


def test_fast_path_and_full_cli_take_the_same_options(monkeypatch):
    """`serve` is parsed by argparse on the fast path and declared in typer for --help: the
    two must not drift apart, neither in option names nor in the values a choice accepts."""
    import typer.main
    from rabbitish.cli import serve
    from rabbitish.cli.commands import cli
    from typer.testing import CliRunner

    from rabbitish.tls import LOGIN_FROM

    actions = [
        action for action in serve.parser()._actions if "--help" not in action.option_strings
    ]
    fast = {opt for action in actions for opt in action.option_strings}
    command = typer.main.get_command(cli).commands["serve"]  # type: ignore[attr-defined]
    full = {opt for param in command.params for opt in param.opts} - {"--help"}
    assert fast == full
    choices = {
        action.option_strings[0]: tuple(action.choices) for action in actions if action.choices
    }
    assert choices == {"--fsync": FSYNC_MODES, "--ssl-cert-login-from": LOGIN_FROM}
    started: list[tuple[str, str]] = []

    def run(config: Any) -> int:
        started.append((config.fsync, config.ssl_cert_login_from))
        return 0

    monkeypatch.setattr(serve, "run", run)
    for option, accepted in choices.items():
        for value in (*accepted, "sometimes", accepted[0].upper(), ""):
            try:
                serve.parser().parse_args([option, value])
                fast_accepts = True
            except SystemExit:
                fast_accepts = False
            result = CliRunner().invoke(cli, ["serve", option, value])
            assert result.exit_code in (0, 2), result.output
            assert (result.exit_code == 0) == fast_accepts == (value in accepted), (option, value)
    assert started == [(mode, "common_name") for mode in FSYNC_MODES] + [
        ("always", name) for name in LOGIN_FROM
    ]


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
