"""examples/spark_orders.py run as a user runs it (its main with command-line arguments),
against the test broker: the totals it publishes are checked exactly."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from tests.spark.conftest import ROOT
from tests.support.clients import bodies, pika_channel

pytestmark = pytest.mark.spark


def _example() -> ModuleType:
    path = ROOT / "examples" / "spark_orders.py"
    spec = importlib.util.spec_from_file_location("spark_orders", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_batch_example_publishes_exact_totals_per_customer(spark, broker_url, uid, capsys):
    orders, exchange = f"{uid}-orders", f"{uid}-results"
    sent = [
        {"customer": "ada", "amount": "12.50"},
        {"customer": "grace", "amount": 3},
        {"customer": "ada", "amount": 7.5},
        {"customer": "edsger", "amount": "0.10"},
        {"customer": "grace", "amount": "0.20"},
    ]
    with pika_channel(broker_url) as ch:
        ch.queue_declare(orders, durable=True)
        for order in sent:
            ch.basic_publish("", orders, json.dumps(order).encode())
        ch.basic_publish("", orders, b"not an order", pika.BasicProperties())
    example = _example()
    argv = ["--url", broker_url, "--queue", orders, "--exchange", exchange]
    assert example.main(argv) == 0
    assert capsys.readouterr().out == (
        f"6 orders read; totals published to {exchange!r} ('totals')\n"
    )
    with pika_channel(broker_url) as ch:
        got = sorted(bodies(ch, f"{exchange}.totals"))
        assert bodies(ch, orders) == []
    assert got == [
        b'{"customer":"ada","orders":2,"total":20.00}',
        b'{"customer":"edsger","orders":1,"total":0.10}',
        b'{"customer":"grace","orders":2,"total":3.20}',
    ]


def test_the_streaming_example_publishes_running_totals_across_runs(
    spark, broker_url, uid, capsys, tmp_path
):
    """Two runs on one checkpoint: the second publishes the totals of the customers it saw,
    carried on from the first run's."""
    orders, exchange = f"{uid}-orders", f"{uid}-results"
    example = _example()
    argv = ["--url", broker_url, "--queue", orders, "--exchange", exchange, "--stream"]
    argv += ["--checkpoint", str(tmp_path / "checkpoint")]
    with pika_channel(broker_url) as ch:
        ch.queue_declare(orders, durable=True)
        for order in ({"customer": "ada", "amount": "1.50"}, {"customer": "grace", "amount": 2}):
            ch.basic_publish("", orders, json.dumps(order).encode())
    assert example.main(argv) == 0
    assert capsys.readouterr().out == (
        f"2 orders read; totals published to {exchange!r} ('totals')\n"
    )
    with pika_channel(broker_url) as ch:
        assert sorted(bodies(ch, f"{exchange}.totals")) == [
            b'{"customer":"ada","orders":1,"total":1.50}',
            b'{"customer":"grace","orders":1,"total":2.00}',
        ]
        ch.basic_publish("", orders, json.dumps({"customer": "ada", "amount": 3}).encode())
    assert example.main(argv) == 0
    with pika_channel(broker_url) as ch:
        assert bodies(ch, f"{exchange}.totals") == [b'{"customer":"ada","orders":2,"total":4.50}']
        assert bodies(ch, orders) == []
