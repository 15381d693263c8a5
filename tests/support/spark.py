"""A local Spark session set up for this machine's tests, test drivers and benchmarks: the
driver bound to 127.0.0.1, no UI, few shuffle partitions, Python workers on this interpreter,
and the amqp data source registered. Imports pyspark, so only callers that have it use it."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_session(master: str, app_name: str) -> Any:
    from pyspark.sql import SparkSession

    from rabbitish.spark import AmqpDataSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(AmqpDataSource)
    return session
