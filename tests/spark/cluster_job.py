"""The drivers the cluster tests run as processes of their own, on a standalone master, so that a
test can kill a worker under them, or the driver itself:

    python -m tests.spark.cluster_job write MASTER URL EXCHANGE ROWS GATES [GATE ...]
    python -m tests.spark.cluster_job stream MASTER URL QUEUE EXCHANGE CHECKPOINT GATES [GATE ...]

`write` publishes ROWS rows (four partitions; bodies `r00000...`, `r00001...`, dots up to
ROW_SIZE bytes) to EXCHANGE with a batch write. `stream` moves QUEUE to EXCHANGE with a
streaming query (Trigger.AvailableNow, 25 messages per micro-batch,
`tests.spark.stream_job.streamed`), written as Spark users write one, with its checkpoint on
writeStream only. Both route with the key `ledger`.

A GATE is a body (or its part before the first "."): the first attempt of the task that meets
it stops there, after marking the directory GATES with its process id (`held_at`), and waits to
be killed; later attempts pass. The test thus knows that a task is running, mid-batch, and in
which process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import TaskContext
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from tests.spark.conftest import ROOT
from tests.spark.stream_job import streamed
from tests.support.spark import local_session

ROUTING_KEY = "ledger"
PARTITIONS = 4
ROW_SIZE = 400  # bytes per written row: the rows before a gate outgrow every 64 KiB buffer
HOLD_LIMIT = 300.0  # a task nobody kills fails after this, rather than hang the job for ever
# Small executors (two share a 2-core machine with the driver and the broker), and rows handed
# on in small Arrow batches, so that the rows before a gate move on to the task's sink (through
# 64 KiB buffers between the Python workers and the JVM) while the gate holds.
CLUSTER_CONFIG = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.executorEnv.PYTHONPATH": str(ROOT),
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10",
}


def session(master: str, app_name: str) -> SparkSession:
    spark: SparkSession = local_session(master, app_name, CLUSTER_CONFIG)
    return spark


def gated(body: Column, directory: str, gates: list[str]) -> Column:
    """`body` as it is, except that the first attempt of a task meeting one of `gates` (a body,
    or its part before the first ".") marks `directory` with `<gate>.<pid>` and waits there
    until killed. A pandas UDF: it sees the rows
    in Arrow batches, and those before the gate's batch go on to the sink meanwhile."""
    held = frozenset(gate.encode() for gate in gates)

    def through(values: pd.Series) -> pd.Series:
        context = TaskContext.get()
        if context is None or context.attemptNumber() > 0:
            return values
        for value in held.intersection(body.split(b".", 1)[0] for body in values):
            Path(directory, f"{value.decode()}.{os.getpid()}").touch()
            deadline = time.monotonic() + HOLD_LIMIT
            while time.monotonic() < deadline:
                time.sleep(0.1)
            raise RuntimeError(f"held at the gate {value!r} for {HOLD_LIMIT:.0f} s, never killed")
        return values

    return F.pandas_udf(through, BinaryType())(body)


def held_at(directory: Path, gate: str) -> int | None:
    """The process id of the task attempt held at `gate`, once it has got there."""
    for mark in directory.glob(f"{gate}.*"):
        return int(mark.suffix[1:])
    return None


def write(master: str, url: str, exchange: str, rows: str, gate_dir: str, *gates: str) -> int:
    spark = session(master, "rabbitish-cluster-write")
    ids = F.format_string("r%05d", "id")
    bodies = spark.range(0, int(rows), numPartitions=PARTITIONS).select(
        F.rpad(ids, ROW_SIZE, ".").cast("binary").alias("body")
    )
    rows_out = bodies.select(gated(F.col("body"), gate_dir, list(gates)).alias("body"))
    writer = rows_out.write.format("amqp").option("url", url).option("exchange", exchange)
    writer.option("routingKey", ROUTING_KEY).mode("append").save()
    spark.stop()
    return 0


def stream(
    master: str, url: str, queue: str, exchange: str, checkpoint: str, gate_dir: str, *gates: str
) -> int:
    spark = session(master, "rabbitish-cluster-stream")
    messages = streamed(spark, url, queue, None)
    query: Any = (
        messages.select(gated(F.col("body"), gate_dir, list(gates)).alias("body"))
        .writeStream.format("amqp")
        .option("url", url)
        .option("exchange", exchange)
        .option("routingKey", ROUTING_KEY)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    raise SystemExit({"write": write, "stream": stream}[command](*arguments))
