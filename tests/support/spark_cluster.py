"""A Spark standalone cluster for tests: a master and workers started from the pyspark
installation on free ports, read through the master's JSON status (its web UI port, /json/),
and workers lost as machines are lost: the worker, its executors and their Python processes
frozen and killed (-9) at once, then started again.

Also the processes' side the tests watch: which worker a process runs under, and whether
anything under a worker holds a connection to the broker (a task of the amqp sink has its
transaction open there). Linux only (/proc); callers skip elsewhere."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.waiting import wait_until

START_TIMEOUT = 120.0  # two JVMs per node on a loaded 2-core machine
_ESTABLISHED = "01"


class ClusterDidNotStart(Exception):
    """The master or a worker did not come up in time; the message says where the logs are."""


def spark_home() -> Path | None:
    """The pyspark installation's directory (it holds bin/spark-class), or None."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    home = Path(spec.origin).parent
    return home if (home / "bin" / "spark-class").exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class _Node:
    """One master or worker JVM: its command line (rebuilt with fresh ports on a restart)."""

    name: str
    log: Path
    process: subprocess.Popen[bytes] | None = None
    port: int = 0


class StandaloneCluster:
    """A master and `workers` workers of `cores` cores and `memory` each, on 127.0.0.1."""

    def __init__(self, work: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        home = spark_home()
        if home is None:
            raise ClusterDidNotStart("pyspark (with bin/spark-class) is not installed")
        self.work = work
        self._class = str(home / "bin" / "spark-class")
        self._env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_WORKER_DIR": str(work / "work"),
            "SPARK_DAEMON_MEMORY": "512m",
        }
        self.master_port, self.web_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self._master = _Node("master", work / "master.log")
        self._workers = [_Node(f"worker{i}", work / f"worker{i}.log") for i in range(workers)]
        self._worker_args = ["--cores", str(cores), "--memory", memory]

    # ------------------------------------------------------------------ start and stop
    def start(self) -> None:
        """Master first, then every worker; returns once the master lists them all alive."""
        deploy = "org.apache.spark.deploy"
        args = ["--host", "127.0.0.1", "--port", str(self.master_port)]
        self._launch(
            self._master, [f"{deploy}.master.Master", *args, "--webui-port", str(self.web_port)]
        )
        self._wait(lambda: self.status() is not None, "the master's web UI never answered")
        for index in range(len(self._workers)):
            self._start_worker(index)
        self._wait(lambda: len(self.alive_workers()) == len(self._workers), "workers missing")

    def stop(self) -> None:
        """SIGTERM to every node's process group (a worker stops its executors), then SIGKILL
        to whatever of their process trees is left."""
        nodes = [node for node in [*self._workers, self._master] if node.process is not None]
        trees = [(pid, _started(pid)) for node in nodes for pid in _tree(_pid(node))]
        for node in nodes:
            _signal_group(_pid(node), signal.SIGTERM)
        for node in nodes:
            try:
                _process(node).wait(timeout=60)
            except subprocess.TimeoutExpired:
                _signal_group(_pid(node), signal.SIGKILL)
                _process(node).wait(timeout=30)
        for pid, started in trees:
            if started is not None and _started(pid) == started:  # not a reused pid
                _signal(pid, signal.SIGKILL)

    def _start_worker(self, index: int) -> None:
        node = self._workers[index]
        node.port = free_port()
        args = ["--host", "127.0.0.1", "--port", str(node.port), *self._worker_args]
        args += ["--webui-port", str(free_port()), self.master_url]
        self._launch(node, ["org.apache.spark.deploy.worker.Worker", *args])

    def _launch(self, node: _Node, args: list[str]) -> None:
        with node.log.open("a") as log:  # the child keeps its own descriptor
            node.process = subprocess.Popen(
                [self._class, *args],
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait(self, condition: Any, what: str) -> None:
        try:
            wait_until(condition, timeout=START_TIMEOUT, interval=0.5)
        except AssertionError:
            message = f"{what} within {START_TIMEOUT:.0f} s; logs in {self.work}"
            raise ClusterDidNotStart(message) from None

    # ------------------------------------------------------------------ the master's view
    def status(self) -> dict[str, Any] | None:
        """The master's JSON status, or None while it does not answer."""
        try:
            url = f"http://127.0.0.1:{self.web_port}/json/"
            with urllib.request.urlopen(url, timeout=5) as reply:
                state: dict[str, Any] = json.load(reply)
                return state
        except OSError:
            return None

    def alive_workers(self) -> list[dict[str, Any]]:
        state = self.status() or {}
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def worker_status(self, index: int) -> dict[str, Any] | None:
        """What the master says about worker `index` as it runs now (matched by its port)."""
        port = self._workers[index].port
        return next((w for w in self.alive_workers() if w.get("port") == port), None)

    def runs_an_executor(self, index: int) -> bool:
        """Whether the master has granted worker `index`'s cores to an application."""
        worker = self.worker_status(index)
        return worker is not None and worker.get("coresused", 0) > 0

    # ------------------------------------------------------------------ losing a worker
    def worker_of(self, pid: int) -> int | None:
        """The index of the worker whose process tree holds `pid` (an executor's Python
        worker, say), or None."""
        for index, node in enumerate(self._workers):
            if node.process is not None and pid in _tree(node.process.pid):
                return index
        return None

    def ports_connected_to(self, index: int, port: int) -> set[int]:
        """The local ports of the established TCP connections that processes under worker
        `index` hold to 127.0.0.1:`port` (tasks talking to the broker there)."""
        node = self._workers[index]
        if node.process is None:
            return set()
        held = _socket_inodes(_tree(node.process.pid))
        return {local for local, inode in _connections_to(port).items() if inode in held}

    def kill_worker(self, index: int) -> None:
        """The worker, its executors and their Python processes, as a machine that dies: each
        process is stopped (SIGSTOP) before its children are looked up, so nothing forks or
        notices in between, then all get SIGKILL together."""
        node = self._workers[index]
        process = _process(node)
        frozen: list[int] = []
        pending = [process.pid]
        while pending:
            pid = pending.pop()
            if pid in frozen:
                continue
            _signal(pid, signal.SIGSTOP)
            frozen.append(pid)
            pending += _children(pid)
        for pid in frozen:
            _signal(pid, signal.SIGKILL)
        process.wait(timeout=30)
        port = node.port
        wait_until(
            lambda: all(w.get("port") != port for w in self.alive_workers()),
            timeout=START_TIMEOUT,
            interval=0.2,
            message="the master still lists the killed worker as alive",
        )

    def restart_worker(self, index: int) -> None:
        """Start worker `index` again (new ports, same work directory); returns once the
        master lists it alive."""
        self._start_worker(index)
        wait_until(
            lambda: self.worker_status(index) is not None,
            timeout=START_TIMEOUT,
            interval=0.5,
            message=f"the restarted worker never registered; logs in {self.work}",
        )

    def ensure_workers(self) -> None:
        """Every worker alive (a test that lost one restarted it; this checks it did)."""
        for index, node in enumerate(self._workers):
            if node.process is None or node.process.poll() is not None:
                self.restart_worker(index)
        wait_until(
            lambda: len(self.alive_workers()) == len(self._workers),
            timeout=START_TIMEOUT,
            interval=0.5,
            message=f"workers missing; logs in {self.work}",
        )


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, cores: int = 1) -> Iterator[StandaloneCluster]:
    """A running cluster, stopped on exit; ClusterDidNotStart when it does not come up."""
    cluster = StandaloneCluster(work, workers=workers, cores=cores)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


# ---------------------------------------------------------------------- processes (/proc)
def _process(node: _Node) -> subprocess.Popen[bytes]:
    assert node.process is not None, f"{node.name} was never started"
    return node.process


def _pid(node: _Node) -> int:
    return _process(node).pid


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live process."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            parents[int(entry.name)] = int(ppid)
    return parents


def _started(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot), which tells it from a later reuse of the
    same pid; None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    return [child for child, parent in _parents().items() if parent == pid]


def _tree(root: int) -> set[int]:
    """`root` and every live descendant of it."""
    parents = _parents()
    tree = {root}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return tree


def _socket_inodes(pids: set[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    return inodes


def _connections_to(port: int) -> dict[int, str]:
    """Local port -> socket inode of every established TCP connection to remote `port`."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[3] == _ESTABLISHED:
                found[local_port] = fields[9]
    return found
