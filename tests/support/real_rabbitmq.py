"""Start a throwaway real RabbitMQ node for reference/compatibility tests.

Rabbitish aims to behave like RabbitMQ, so some tests run the same scenario
against a real broker (Debian's ``rabbitmq-server`` package) to compare.
Each node gets its own temp dir, node name and ephemeral ports so several
can run side by side without touching the system installation.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.support.ports import ReservedPort
from tests.support.waiting import wait_until

RABBITMQ_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
RABBITMQ_LIB = Path("/usr/lib/rabbitmq/lib")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
_POLL_INTERVAL = 0.1


class RealRabbitError(RuntimeError):
    """Raised when the node exits while starting; carries the tail of its output."""


def rabbitmq_available() -> bool:
    """Say whether the Debian package is installed, so tests can skip otherwise."""
    return RABBITMQ_SERVER.is_file()


def _packaged_version() -> str:
    """Fallback version from the install dir name if the handshake lacks it."""
    for entry in sorted(RABBITMQ_LIB.glob("rabbitmq_server-*")):
        return entry.name.removeprefix("rabbitmq_server-")
    return "unknown"


def _tail(path: Path, lines: int = 40) -> str:
    """Last lines of the node's console output, for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no output>"


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class RealRabbit:
    """A running RabbitMQ node; ``restart()`` keeps its port and data."""

    # Plugins a subclass enables besides AMQP 1.0 (and management when it has a port).
    EXTRA_PLUGINS: ClassVar[tuple[str, ...]] = ()

    port: int
    url: str
    management_port: int | None
    version: str
    data_dir: Path
    dist_port: int
    nodename: str
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def _env(self) -> dict[str, str]:
        """Environment that points every RabbitMQ path into ``data_dir``."""
        base = self.data_dir
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("RABBITMQ_", "ERL_"))
        }
        env.update(
            HOME=str(base / "home"),
            RABBITMQ_NODENAME=self.nodename,
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_MNESIA_BASE=str(base / "mnesia"),
            RABBITMQ_LOG_BASE=str(base / "log"),
            RABBITMQ_CONFIG_FILE=str(base / "rabbitmq.conf"),
            # Isolate from /etc/rabbitmq: empty env file, absent advanced.config.
            RABBITMQ_CONF_ENV_FILE=str(base / "rabbitmq-env.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(base / "advanced.config"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(base / "enabled_plugins"),
        )
        return env

    def _write_config(self) -> None:
        """Write config files: guest may connect from 127.0.0.1, fixed ports."""
        base = self.data_dir
        for sub in ("home", "mnesia", "log"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            "loopback_users = none",
            f"listeners.tcp.default = 127.0.0.1:{self.port}",
        ]
        # AMQP 1.0 on the same port, as rabbitish serves it.
        plugins = ["rabbitmq_amqp1_0"]
        if self.management_port is not None:
            lines += [
                f"management.tcp.port = {self.management_port}",
                "management.tcp.ip = 127.0.0.1",
            ]
            plugins.append("rabbitmq_management")
        plugins += self.EXTRA_PLUGINS
        enabled = f"[{','.join(plugins)}]."
        (base / "rabbitmq.conf").write_text("\n".join(lines) + "\n")
        (base / "enabled_plugins").write_text(enabled + "\n")
        (base / "rabbitmq-env.conf").write_text("")

    @property
    def pid(self) -> int:
        """The running node's rabbitmq-server process; beam and its helpers run under it."""
        if self._proc is None:
            raise RealRabbitError("node not running")
        return self._proc.pid

    @property
    def _console_log(self) -> Path:
        return self.data_dir / "console.log"

    def start(self) -> None:
        """Launch the node in its own process group and wait until usable."""
        if self._proc is not None:
            raise RealRabbitError("node already running")
        self._write_config()
        with self._console_log.open("ab") as out:
            # Own session so stop() can signal beam.smp along with the sh wrapper.
            self._proc = subprocess.Popen(
                [str(RABBITMQ_SERVER)],
                env=self._env(),
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        """Poll TCP then a full AMQP handshake (the port opens before auth works), then the
        management port if there is one."""
        import pika  # local import: only needed when a node is really started
        import pika.exceptions

        started = time.monotonic()
        params = pika.URLParameters(
            self.url + "?connection_attempts=1&socket_timeout=2&blocked_connection_timeout=2"
        )
        last_error: list[BaseException] = []

        def handshake() -> pika.BlockingConnection | None:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RealRabbitError(
                    f"rabbitmq-server exited with {self._proc.returncode}:\n"
                    + _tail(self._console_log)
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                return pika.BlockingConnection(params)
            except (OSError, pika.exceptions.AMQPError) as exc:  # not up yet
                last_error[:] = [exc]
                return None

        conn = wait_until(
            handshake,
            timeout=START_TIMEOUT,
            interval=_POLL_INTERVAL,
            message=lambda: (
                f"rabbitmq not ready after {START_TIMEOUT}s ({last_error!r}):\n"
                + _tail(self._console_log)
            ),
        )
        try:
            props = conn._impl.server_properties or {}
            version = props.get("version")
            if isinstance(version, bytes):
                version = version.decode()
            if version:
                self.version = str(version)
        finally:
            conn.close()
        if self.management_port is not None:
            wait_until(
                lambda: _listening(self.management_port),
                timeout=max(0.0, started + START_TIMEOUT - time.monotonic()),
                interval=_POLL_INTERVAL,
                message=f"management port {self.management_port} not listening",
            )

    def stop(self) -> None:
        """SIGTERM the process group (graceful in Erlang), SIGKILL on timeout."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        # Kill leftovers (beam.smp may outlive the sh wrapper); not epmd,
        # which daemonizes into its own session and is shared.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def kill(self) -> None:
        """SIGKILL the node's process group (beam.smp included), as a crash would end it; the
        data dir stays for a start."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def restart(self) -> None:
        """Stop and start again on the same port/data dir (durability tests)."""
        self.stop()
        self.start()


@contextlib.contextmanager
def real_rabbitmq(
    enable_management: bool = False, node_class: type[RealRabbit] = RealRabbit
) -> Iterator[RealRabbit]:
    """Run a fresh node for the duration of the block, then remove all traces. Its ports (AMQP,
    distribution, management) stay reserved until the node has stopped, restarts included."""
    if not rabbitmq_available():
        raise RealRabbitError(f"{RABBITMQ_SERVER} not installed")
    data_dir = Path(tempfile.mkdtemp(prefix="rabbitish-rmq-"))
    with contextlib.ExitStack() as ports:
        port = ports.enter_context(ReservedPort()).port
        management = ports.enter_context(ReservedPort()).port if enable_management else None
        rabbit = node_class(
            port=port,
            url=f"amqp://guest:guest@127.0.0.1:{port}/%2F",
            management_port=management,
            version=_packaged_version(),
            data_dir=data_dir,
            dist_port=ports.enter_context(ReservedPort()).port,
            nodename=f"rabbitish-test-{uuid.uuid4().hex[:12]}@localhost",
        )
        try:
            rabbit.start()
            yield rabbit
        finally:
            rabbit.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
