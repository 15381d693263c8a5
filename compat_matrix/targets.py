"""The two brokers the matrix compares, each restartable in place.

rabbitish runs as a real `python -m rabbitish serve` process on a free port with a data
directory, so a restart is what a user sees: the process stops (SIGTERM) and starts again on the
same port and data. RabbitMQ is Debian's rabbitmq-server as a throwaway node
(tests/support/real_rabbitmq.py)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from compat_matrix.runner import Target

START_TIMEOUT = 15.0
STOP_TIMEOUT = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RabbitishProcess:
    """`rabbitish serve` as a subprocess; `restart()` keeps the port and the data directory."""

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        self.port = _free_port()
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [sys.executable, "-m", "rabbitish", "serve", "--port", str(self.port)]
        args += ["--data-dir", str(self.data_dir)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=log, stdout=log)
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Ready once a client completes the AMQP handshake."""
        from tests.support.raw_amqp import RawClient

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"rabbitish exited with {self.proc.returncode}: {self._tail()}")
            try:
                RawClient(self.url, timeout=1).open().close()
                return
            except (OSError, ConnectionError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rabbitish not ready: {self._tail()}") from None
                time.sleep(0.02)

    def _tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return "<no log>"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


def _rabbitish_version() -> str:
    try:
        from importlib.metadata import version

        return version("rabbitish")
    except Exception:
        return "dev"


@contextlib.contextmanager
def rabbitish_target() -> Iterator[Target]:
    """A fresh rabbitish process with its own data directory, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="compat-rabbitish-"))
    process = RabbitishProcess(base / "data", base / "serve.log")
    try:
        process.start()
        yield Target("rabbitish", _rabbitish_version(), process.url, process.restart)
    finally:
        process.stop()
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def rabbitmq_target() -> Iterator[Target]:
    """A throwaway RabbitMQ node (needs Debian's rabbitmq-server)."""
    from tests.support.real_rabbitmq import real_rabbitmq

    with real_rabbitmq() as node:
        yield Target("RabbitMQ", node.version, node.url, node.restart)


def rabbitmq_installed() -> bool:
    from tests.support.real_rabbitmq import rabbitmq_available

    return rabbitmq_available()
