"""A Spark session set up for this machine's tests, test drivers and benchmarks (on local[N] or
a standalone cluster's master): the driver bound to 127.0.0.1, no UI, few shuffle partitions,
Python workers on this interpreter, and the amqp data source registered. Imports pyspark, so
only callers that have it use it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def local_session(master: str, app_name: str, config: Mapping[str, str] | None = None) -> Any:
    """The session (created, or the one running); `config` adds to or overrides the settings
    below, e.g. for a standalone cluster's executors."""
    from pyspark.sql import SparkSession

    from rabbitish.spark import AmqpDataSource

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        **(config or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(AmqpDataSource)
    return session
