"""examples/spark_orders.py submitted with spark-submit to a Spark standalone cluster (a master
and a worker started here from the pyspark installation), its tasks running in the worker's
executor. The driver is the base interpreter without the venv, so rabbitish and pika reach it
only through --py-files, as on a cluster whose nodes have neither installed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

import pyspark

from tests.spark.conftest import ROOT, missing
from tests.support.clients import bodies, pika_channel
from tests.support.waiting import wait_until

pytestmark = pytest.mark.spark

SPARK_HOME = Path(pyspark.__file__).parent
BASE_PYTHON = Path(sys.base_prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """spark://127.0.0.1:PORT with one registered worker (2 cores, 1 GiB); skips, saying why,
    when either does not come up."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    if not (SPARK_HOME / "bin" / "spark-class").exists() or not BASE_PYTHON.exists():
        pytest.skip(f"no spark-class under {SPARK_HOME} or no {BASE_PYTHON}")
    work = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(work / "work")}
    master = f"spark://127.0.0.1:{_free_port()}"
    klass = str(SPARK_HOME / "bin" / "spark-class")
    deploy = "org.apache.spark.deploy"
    port = master.rsplit(":", 1)[1]
    master_args = ["--port", port, "--webui-port", str(_free_port())]
    worker_args = ["--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()), master]
    commands = {
        "master": [klass, f"{deploy}.master.Master", "--host", "127.0.0.1", *master_args],
        "worker": [klass, f"{deploy}.worker.Worker", "--host", "127.0.0.1", *worker_args],
    }
    started = []
    try:
        for name, command in commands.items():
            log = open(work / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the process
            started.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
            )

        def registered() -> bool:
            return "Successfully registered with master" in (work / "worker.log").read_text()

        try:
            wait_until(registered, timeout=120, interval=0.5)
        except AssertionError:
            pytest.skip(f"the standalone master and worker did not come up; logs in {work}")
        yield master
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            process.wait(timeout=60)


def _deps(directory: Path) -> Path:
    """rabbitish and pika as one zip for --py-files."""
    path = directory / "deps.zip"
    packages = [ROOT / "rabbitish", Path(pika.__file__).parent]
    with zipfile.ZipFile(path, "w") as archive:
        for package in packages:
            for file in package.rglob("*.py"):
                archive.write(file, file.relative_to(package.parent))
    return path


@pytest.mark.timeout(420)  # two JVMs start here, two more for the submitted application
def test_the_batch_example_runs_on_a_standalone_cluster(cluster, broker_url, uid, tmp_path):
    orders, exchange = f"{uid}-orders", f"{uid}-results"
    with pika_channel(broker_url) as ch:
        ch.queue_declare(orders, durable=True)
        for customer, amount in [("ada", "1.25"), ("grace", "2"), ("ada", "3")]:
            ch.basic_publish("", orders, json.dumps({"customer": customer, "amount": amount}))
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster]
    for conf in (
        f"spark.pyspark.python={sys.executable}",
        f"spark.pyspark.driver.python={BASE_PYTHON}",
        "spark.driver.host=127.0.0.1",
        "spark.driver.bindAddress=127.0.0.1",
        "spark.ui.enabled=false",
        "spark.sql.shuffle.partitions=2",
        "spark.executor.memory=1g",
    ):
        submit += ["--conf", conf]
    submit += ["--py-files", str(_deps(tmp_path)), str(ROOT / "examples" / "spark_orders.py")]
    submit += ["--url", broker_url, "--queue", orders, "--exchange", exchange]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(
        submit, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=360
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.endswith(f"3 orders read; totals published to {exchange!r} ('totals')\n")
    assert "Granted executor ID" in done.stderr  # the tasks ran in the worker's executor
    with pika_channel(broker_url) as ch:
        assert sorted(bodies(ch, f"{exchange}.totals")) == [
            b'{"customer":"ada","orders":2,"total":4.25}',
            b'{"customer":"grace","orders":1,"total":2.00}',
        ]
        assert bodies(ch, orders) == []
