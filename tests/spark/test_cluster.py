"""The amqp data source on a Spark standalone cluster (a master and two workers of one core
each, started here from the pyspark installation, tests.support.spark_cluster):

- examples/spark_orders.py submitted with spark-submit, batch and streaming, its tasks running in
  the workers' executors. The batch driver is the base interpreter without the venv, so
  rabbitish, pamqp and pika reach it only through --py-files, as on a cluster whose nodes have
  none of them installed; the streaming driver needs pandas and pyarrow (the spark extra), so
  it is the venv's.
- Exactly-once through lost machines: a worker killed (-9, with its executor and Python
  workers) while a task of a streaming query holds its sink transaction open, then restarted,
  then the query's driver killed the same way and restarted on its checkpoint; and a batch write
  job that loses a worker mid-job. Each message or row id reaches the target queue exactly once.

Tasks are caught mid-batch by a gate (tests.spark.cluster_job): the first attempt of the task
meeting a given body marks its process id and waits; the test finds the worker that process
runs under and checks that something there holds a connection to the broker (the task's sink,
its transaction open) before killing it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pamqp
import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from tests.spark.cluster_job import ROUTING_KEY, ROW_SIZE, held_at
from tests.spark.conftest import ROOT, missing
from tests.support.clients import bodies, pika_channel
from tests.support.management import Api
from tests.support.spark_cluster import ClusterDidNotStart, StandaloneCluster, spark_home
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark

BASE_PYTHON = Path(sys.base_prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")
DRIVER_TIMEOUT = 300.0  # a driver JVM and its executors start on a loaded 2-core machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GiB each); skips, saying why, when they do not come
    up within two minutes."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    if spark_home() is None or not Path("/proc/self/stat").exists():
        pytest.skip("no spark-class in the pyspark installation, or no /proc (Linux)")
    running = StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2, cores=1)
    try:
        try:
            running.start()
        except ClusterDidNotStart as exc:
            pytest.skip(f"the standalone cluster did not come up: {exc}")
        yield running
    finally:
        running.stop()


@pytest.fixture
def workers(cluster) -> StandaloneCluster:
    """The cluster with both workers alive (a test before may have lost and restarted one)."""
    cluster.ensure_workers()
    return cluster


# ---------------------------------------------------------------------- the example, submitted
def _deps(directory: Path) -> Path:
    """rabbitish, pamqp (its client's codec) and pika (the example's) as one zip for
    --py-files."""
    path = directory / "deps.zip"
    packages = [ROOT / "rabbitish", Path(pamqp.__file__).parent, Path(pika.__file__).parent]
    with zipfile.ZipFile(path, "w") as archive:
        for package in packages:
            for file in package.rglob("*.py"):
                archive.write(file, file.relative_to(package.parent))
    return path


def _submit(
    cluster: StandaloneCluster, driver_python: Path, arguments: list[str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """spark-submit examples/spark_orders.py in client mode; executors run the venv's Python."""
    home = spark_home()
    assert home is not None
    submit = [str(home / "bin" / "spark-submit"), "--master", cluster.master_url]
    for conf in (
        f"spark.pyspark.python={sys.executable}",
        f"spark.pyspark.driver.python={driver_python}",
        "spark.driver.host=127.0.0.1",
        "spark.driver.bindAddress=127.0.0.1",
        "spark.ui.enabled=false",
        "spark.sql.shuffle.partitions=2",
        "spark.executor.memory=512m",
    ):
        submit += ["--conf", conf]
    submit += [*arguments]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return subprocess.run(
        submit, env=env, cwd=cwd, capture_output=True, text=True, timeout=DRIVER_TIMEOUT
    )


def _orders(url: str, queue: str) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, durable=True)
        for customer, amount in [("ada", "1.25"), ("grace", "2"), ("ada", "3")]:
            ch.basic_publish("", queue, json.dumps({"customer": customer, "amount": amount}))


@pytest.mark.timeout(420)  # three JVMs start here, two more for the submitted application
def test_the_batch_example_runs_on_a_standalone_cluster(workers, broker_url, uid, tmp_path):
    orders, exchange = f"{uid}-orders", f"{uid}-results"
    _orders(broker_url, orders)
    example = ["--py-files", str(_deps(tmp_path)), str(ROOT / "examples" / "spark_orders.py")]
    example += ["--url", broker_url, "--queue", orders, "--exchange", exchange]
    done = _submit(workers, BASE_PYTHON, example, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.endswith(f"3 orders read; totals published to {exchange!r} ('totals')\n")
    assert "Granted executor ID" in done.stderr  # the tasks ran in the workers' executors
    with pika_channel(broker_url) as ch:
        assert sorted(bodies(ch, f"{exchange}.totals")) == [
            b'{"customer":"ada","orders":2,"total":4.25}',
            b'{"customer":"grace","orders":1,"total":2.00}',
        ]
        assert bodies(ch, orders) == []


@pytest.mark.timeout(420)
def test_the_streaming_example_runs_on_a_standalone_cluster(workers, broker_url, uid, tmp_path):
    """Running totals per customer (state in the checkpoint, kept by the executors) through
    the amqp source and sink; the last total of each customer is exact."""
    orders, exchange = f"{uid}-orders", f"{uid}-results"
    _orders(broker_url, orders)
    example = [str(ROOT / "examples" / "spark_orders.py"), "--stream"]
    example += ["--checkpoint", str(tmp_path / "checkpoint")]
    example += ["--url", broker_url, "--queue", orders, "--exchange", exchange]
    done = _submit(workers, Path(sys.executable), example, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.endswith(f"3 orders read; totals published to {exchange!r} ('totals')\n")
    assert "Granted executor ID" in done.stderr
    with pika_channel(broker_url) as ch:
        published = [json.loads(body) for body in bodies(ch, f"{exchange}.totals")]
        assert bodies(ch, orders) == []
    last = {total["customer"]: total for total in published}  # in the order they were published
    assert last == {
        "ada": {"customer": "ada", "orders": 2, "total": 4.25},
        "grace": {"customer": "grace", "orders": 1, "total": 2.0},
    }


# ---------------------------------------------------------------------- lost machines
@dataclass
class _Driver:
    """A driver of tests.spark.cluster_job in a process group of its own (its JVM with it)."""

    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, arguments: list[str], log: Path) -> _Driver:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
        with log.open("w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.spark.cluster_job", *arguments],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(process, log)

    def running(self) -> bool:
        """True while it runs; fails the test, with the log's end, once it has exited."""
        code = self.process.poll()
        assert code is None, f"the driver exited ({code}):\n{self.tail()}"
        return True

    def kill(self) -> None:
        """SIGKILL to the process group: the Python driver, its JVM, its Python planner."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def finish(self) -> None:
        try:
            code = self.process.wait(timeout=DRIVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the driver never finished:\n{self.tail()}") from None
        assert code == 0, f"the driver failed ({code}):\n{self.tail()}"

    def tail(self) -> str:
        return self.log.read_text()[-3000:]


def _held(cluster: StandaloneCluster, driver: _Driver, gates: Path, gate: str, port: int) -> int:
    """Wait for the task held at `gate`; the index of the worker it runs under, once something
    there (the task's sink, its transaction open) is connected to the broker on `port`."""
    pid = wait_until(
        lambda: driver.running() and held_at(gates, gate),
        timeout=DRIVER_TIMEOUT,
        interval=0.2,
        message=f"no task reached the gate {gate}",
    )
    victim = cluster.worker_of(pid)
    assert victim is not None, f"the task held at {gate} (pid {pid}) runs under no worker"
    wait_until(
        lambda: cluster.ports_connected_to(victim, port),
        timeout=60,
        interval=0.1,
        message=f"nothing under worker {victim} is connected to the broker",
    )
    return victim


def _port(url: str) -> int:
    return urlsplit(url).port or 5672


def _depth(url: str, queue: str) -> int:
    with pika_channel(url) as ch:
        count: int = ch.queue_declare(queue, passive=True).method.message_count
        return count


def _ledger(url: str, exchange: str, queue: str) -> None:
    """A direct exchange and the queue the ledger is kept on, bound with ROUTING_KEY."""
    with pika_channel(url) as ch:
        ch.exchange_declare(exchange, "direct", durable=True)
        ch.queue_declare(queue, durable=True)
        ch.queue_bind(queue, exchange, ROUTING_KEY)


def _check_ledger(got: list[bytes], sent: list[bytes]) -> None:
    """Every id once: none lost, none twice, nothing else."""
    counts = Counter(got)
    twice = sorted(body for body, n in counts.items() if n > 1)
    lost = sorted(set(sent) - set(counts))
    stray = sorted(set(counts) - set(sent))
    short = [body.split(b".", 1)[0] for body in (*lost, *twice, *stray)]
    assert (lost, twice, stray) == ([], [], []), f"lost, twice or unknown: {short}"
    assert len(got) == len(sent)


@pytest.mark.timeout(600)
def test_a_stream_keeps_exactly_once_through_a_lost_worker_and_a_killed_driver(
    workers, broker_url, uid, tmp_path
):
    """150 messages from a queue to an exchange, 25 per micro-batch. Worker A dies (-9) while
    its task of the batch holding m0040 has the sink's transaction open; the batch is retried
    on worker B and the query goes on; A is started again and gets an executor back. Then the
    driver dies (-9, its JVM with it) while a task of the batch holding m0090 is held, and a new
    driver finishes the query from the checkpoint. The ledger: every message once."""
    source, exchange, target = f"{uid}-in", f"{uid}-x", f"{uid}-out"
    sent = [f"m{i:04}".encode() for i in range(150)]
    with pika_channel(broker_url) as ch:
        ch.queue_declare(source, durable=True)
        for body in sent:
            ch.basic_publish("", source, body)
    _ledger(broker_url, exchange, target)
    gates, checkpoint = tmp_path / "gates", tmp_path / "checkpoint"
    gates.mkdir()
    job = ["stream", workers.master_url, broker_url, source, exchange, str(checkpoint), str(gates)]
    first = _Driver.start([*job, "m0040", "m0090"], tmp_path / "driver1.log")
    try:
        victim = _held(workers, first, gates, "m0040", _port(broker_url))
        wait_until(
            lambda: workers.runs_an_executor(1 - victim),
            timeout=60,
            message="the query has no executor on the other worker to retry on",
        )
        workers.kill_worker(victim)
        wait_until(  # batches commit whole and in order: past 40, m0040's batch went through
            lambda: first.running() and _depth(broker_url, target) > 40,
            timeout=DRIVER_TIMEOUT,
            interval=0.2,
            message="the batch of the lost task never went through on the other worker",
        )
        workers.restart_worker(victim)
        wait_until(
            lambda: workers.runs_an_executor(victim),
            timeout=120,
            interval=0.2,
            message="the restarted worker never got an executor of the query",
        )
        _held(workers, first, gates, "m0090", _port(broker_url))
    finally:
        first.kill()
    assert 40 < _depth(broker_url, target) <= 90

    _Driver.start(job, tmp_path / "driver2.log").finish()  # no gates this time
    with pika_channel(broker_url) as ch:
        _check_ledger(bodies(ch, target), sent)
        assert bodies(ch, source) == []


@pytest.mark.timeout(420)
def test_a_batch_write_that_loses_a_worker_mid_job_publishes_every_row_once(
    workers, broker_url, rabbitish_management_url, uid, tmp_path
):
    """4,000 rows in four partitions; the worker running partition 2's first attempt dies (-9)
    while the task's transaction holds published rows (the broker's management API shows the
    task's channel with messages uncommitted). Spark retries the task, the worker is started
    again, the job commits: every row once."""
    exchange, target = f"{uid}-x", f"{uid}-out"
    _ledger(broker_url, exchange, target)
    gates = tmp_path / "gates"
    gates.mkdir()
    management = urlsplit(rabbitish_management_url)
    api = Api(broker_url, f"http://{management.hostname}:{management.port}", "rabbitish")

    def uncommitted_on(worker: int) -> set[int]:
        """Local ports of the worker's connections with a channel holding uncommitted rows."""
        open_tx = {
            channel["connection_details"]["peer_port"]
            for channel in api.ok("GET", "/api/channels")
            if channel["messages_uncommitted"] > 0
        }
        return open_tx & workers.ports_connected_to(worker, _port(broker_url))

    job = ["write", workers.master_url, broker_url, exchange, "4000", str(gates), "r02995"]
    driver = _Driver.start(job, tmp_path / "driver.log")
    try:
        victim = _held(workers, driver, gates, "r02995", _port(broker_url))
        wait_until(
            lambda: uncommitted_on(victim),
            timeout=60,
            interval=0.1,
            message="the held task's transaction holds no published rows",
        )
        workers.kill_worker(victim)
        workers.restart_worker(victim)
        driver.finish()
    finally:
        driver.kill()
    with pika_channel(broker_url) as ch:
        sent = [f"r{i:05}".encode().ljust(ROW_SIZE, b".") for i in range(4000)]
        _check_ledger(bodies(ch, target), sent)
