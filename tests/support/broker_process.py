"""`rabbitish serve` as a real process, for what an embedded broker cannot show: signals,
kill -9, restarts on the same data dir, start-up time, the command line itself.

The broker's output goes to a log file. It is ready once it logs the line saying where it
accepts AMQP connections (written after the listener is up, so after recovery), and that line
also gives the port when it was started with `--port 0`."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tests.support.ports import ReservedPort
from tests.support.waiting import wait_until

MODULE = (sys.executable, "-m", "rabbitish")
SCRIPT = (str(Path(sys.executable).parent / "rabbitish"),)
START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0

_READY = re.compile(r"accepting AMQP 0-9-1 connections on (?P<host>.+):(?P<port>\d+) \(data: ")
_MANAGEMENT = re.compile(r"management API on http://.+:(?P<port>\d+)")


class BrokerError(RuntimeError):
    """The broker exited or did not get ready; carries the end of its log."""


class BrokerProcess:
    """`rabbitish serve` with `args` on `data_dir` (default :memory:, no management API unless
    `args` name a --management-port).

    By default each start passes `--port 0` and reads the port the broker reports. With
    `keep_port` the object reserves a port for its whole life and every start uses it, so a
    restart (after stop, kill or a crash) keeps the URL clients know."""

    def __init__(
        self,
        *args: str,
        data_dir: str | Path = ":memory:",
        command: Sequence[str] = MODULE,
        log: Path | None = None,
        keep_port: bool = False,
        url_query: str = "",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.args = args
        self.env = None if env is None else {**os.environ, **env}  # on top of this process's
        self.data_dir = str(data_dir)
        self.command = tuple(command)
        self.url_query = url_query
        self._reservation = ReservedPort() if keep_port else None
        self.port: int | None = self._reservation.port if self._reservation else None
        self.management_port: int | None = None
        if log is None:
            fd, name = tempfile.mkstemp(prefix="rabbitish-serve-", suffix=".log")
            os.close(fd)
            self.log, self._own_log = Path(name), True
        else:
            self.log, self._own_log = log, False
        self._log_start = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """amqp:// URL of the default user and vhost (known once started, or with keep_port)."""
        assert self.port is not None, "not started"
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F{self.url_query}"

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = START_TIMEOUT) -> BrokerProcess:
        """Start the process and return once it accepts AMQP connections."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        port = str(self.port) if self._reservation else "0"
        extra = () if "--management-port" in self.args else ("--management-port", "0")
        if "--prometheus-port" not in self.args:  # never compete for 15692
            extra = (*extra, "--prometheus-port", "0")
        argv = [*self.command, "serve", "--port", port, "--data-dir", self.data_dir, *extra]
        with self.log.open("ab") as out:
            self._log_start = out.tell()
            self.proc = subprocess.Popen(
                [*argv, *self.args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=self.env,
            )
        try:
            ready = wait_until(
                self._ready_line,
                timeout=timeout,
                interval=0.002,
                message=lambda: f"rabbitish serve not ready after {timeout} s:\n{self._tail()}",
            )
        except BaseException:
            self.kill()
            raise
        self.port = int(ready["port"])
        management = _MANAGEMENT.search(ready.string, ready.end())
        self.management_port = int(management["port"]) if management else None
        return self

    def _ready_line(self) -> re.Match[str] | None:
        assert self.proc is not None
        found = _READY.search(self.output())
        if found is None and self.proc.poll() is not None:
            raise BrokerError(
                f"rabbitish serve exited with {self.proc.returncode}:\n{self._tail()}"
            )
        return found

    def output(self) -> str:
        """What the broker wrote since it was last started."""
        with self.log.open("rb") as log:
            log.seek(self._log_start)
            return log.read().decode(errors="replace")

    def _tail(self) -> str:
        return self.output()[-2000:] or "<no output>"

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        """Wait for the process to exit; its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash would end it; the port and the data dir stay for a restart."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)

    def stop(self) -> int | None:
        """SIGTERM (a clean shutdown), SIGKILL if that takes too long; the exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop, give the reserved port back and remove a log this object made."""
        self.stop()
        if self._reservation is not None:
            self._reservation.release()
        if self._own_log:
            with contextlib.suppress(OSError):
                self.log.unlink()

    def __enter__(self) -> BrokerProcess:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
