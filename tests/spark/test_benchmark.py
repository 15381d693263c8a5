"""benchmarks.spark must keep running: its scenarios with a few hundred rows, in the shared
session, against the test broker. Only that every scenario completes (each checks its own
counts) and reports a rate is checked; no speed is asserted."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from benchmarks.spark import SCENARIOS, run_broker
from benchmarks.spark_reader import fill, read

pytestmark = pytest.mark.spark


def test_every_scenario_runs_and_reports_a_rate(spark, broker_url):
    args = argparse.Namespace(
        spark=spark,
        rows=300,
        body=20,
        prefetch=100,
        progress=False,
        cpu_split=True,
        read_only=False,
    )
    rates = run_broker(broker_url, [], args)
    assert sorted(rates) == sorted(SCENARIOS)
    assert all(rate > 0 for rate in rates.values())


def test_the_reader_without_spark_takes_every_message(broker_url, uid):
    fill(broker_url, 300, queue=uid)
    sizes = read(broker_url, 0.0, 0.0, queue=uid)
    assert sum(sizes) == 300
