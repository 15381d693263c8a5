"""The benchmark suite must keep running: `python -m benchmarks --url` against a broker in its
own process with tiny counts. Only that it completes and reports every scenario is checked;
no speed is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pika
import pytest

from benchmarks.interleaved import Slice
from benchmarks.report import SCENARIOS
from tests.support.broker_process import BrokerProcess


def test_suite_runs_against_a_url_and_reports_every_scenario(tmp_path) -> None:
    with BrokerProcess("--fsync", "always", data_dir=tmp_path) as broker:
        argv = [sys.executable, "-m", "benchmarks", "--url", broker.url, "--driver", "pipelined"]
        small = ["--messages", "200", "--transient", "300", "--seconds", "0.2", "--rounds", "20"]
        done = subprocess.run(argv + small, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    for scenario in SCENARIOS:
        assert f"| {scenario} |" in done.stdout
    assert "| geometric mean" not in done.stdout  # one broker: no ratios


def test_compare_mode_starts_rabbitish_with_the_serve_args_given() -> None:
    argv = [sys.executable, "-m", "benchmarks", "--no-rabbitmq", "--serve-args=--busy-wait-us 0"]
    argv += ["--driver", "pipelined"]
    small = ["--messages", "200", "--transient", "300", "--seconds", "0.2", "--rounds", "20"]
    done = subprocess.run(argv + small, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert "runs `--fsync always --busy-wait-us 0`" in done.stdout
    for scenario in SCENARIOS:
        assert f"| {scenario} |" in done.stdout


def test_per_write_driver_builds_and_runs_tiny_scenarios(broker_url: str) -> None:
    """The Go driver (amqp091-go, every frame its own write) builds, fills a queue in confirm
    mode and drains it in a transaction, with the broker's CPU read around each run (this
    process's: the broker is in-process). Skipped without go or Debian's amqp091-go."""
    from benchmarks import per_write

    reason = per_write.unavailable()
    if reason is not None:
        pytest.skip(reason)
    binary = per_write.build()
    queue = f"go-driver-{uuid.uuid4().hex[:8]}"
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    ch = conn.channel()
    try:
        ch.queue_declare(queue, durable=True)
        pids = [os.getpid()]
        published = per_write.run_scenario(
            binary, broker_url, pids, "confirm_publish", queue=queue, messages=60, window=10
        )
        acked = per_write.run_scenario(
            binary, broker_url, pids, "tx_ack", queue=queue, messages=60, ack_every=25
        )
        assert ch.queue_declare(queue, passive=True).method.message_count == 0
    finally:
        ch.queue_delete(queue)
        conn.close()
    for outcome in (published, acked):
        assert outcome.count == 60
        assert outcome.seconds > 0 and outcome.cpu_us is not None


class _Recorded:
    """A stand-in session: its slices take a fixed time a round trip, and it notes each."""

    def __init__(self, name: str, trip_us: float, log: list[str]) -> None:
        self.name, self.trip_us, self.log = name, trip_us, log

    def run(self) -> Slice:
        self.log.append(self.name)
        return Slice(2, self.trip_us * 2e-6, [self.trip_us] * 2)


def test_slices_alternate_between_brokers() -> None:
    """One uncounted slice on each, then slices in alternating order; each broker's figures
    from its own counted slices only."""
    from benchmarks.interleaved import Session, alternate, latency, rate

    log: list[str] = []
    sessions: dict[str, Session] = {"a": _Recorded("a", 10.0, log), "b": _Recorded("b", 30.0, log)}
    found = alternate(sessions, 3, {"a": [], "b": []})
    assert log == ["a", "b", "a", "b", "b", "a", "a", "b"]
    slices, cpu = found["b"]
    assert len(slices) == 3
    assert latency(slices, cpu, []) == {"latency_p50": (30.0, None), "latency_p99": (30.0, None)}
    assert rate(slices, cpu, []) == pytest.approx((1e6 / 30.0, None))


def test_interleaved_scenarios_run_on_both_drivers(broker_url: str) -> None:
    """tx_commit_1, tx_commit_100, tx_ack and latency, interleaved between two "brokers" (the
    same one twice) with pika and a raw socket, then with the Go program, which runs its
    scenario once per slice on the connection it opened (skipped without go or Debian's
    amqp091-go). The broker is in-process: its CPU is this process's."""
    from benchmarks import interleaved, per_write

    brokers = {"one": (broker_url, [os.getpid()]), "two": (broker_url, [os.getpid()])}
    runs = [interleaved.pipelined(brokers, rounds=40, seconds=0.1, messages=30, body_size=16)]
    if per_write.unavailable() is None:
        binary = per_write.build()
        runs.append(
            interleaved.per_write(
                binary, brokers, rounds=40, seconds=0.1, messages=30, body_size=16
            )
        )
    for results in runs:
        assert set(results) == {"one", "two"}
        for figures in results.values():
            assert set(figures) == {
                "tx_commit_1",
                "tx_commit_100",
                "tx_ack",
                "latency_p50",
                "latency_p99",
            }
            (p50, cpu), (p99, cpu_again) = figures["latency_p50"], figures["latency_p99"]
            assert 0 < p50 <= p99
            assert cpu is not None and cpu == cpu_again
            for scenario in ("tx_commit_1", "tx_commit_100", "tx_ack"):
                commits, commit_cpu = figures[scenario]
                assert commits > 0 and commit_cpu is not None
    if len(runs) == 1:
        pytest.skip(f"pipelined only: {per_write.unavailable()}")


@pytest.mark.parametrize("tracing", ["off", "bound"])
def test_hot_path_benchmark_runs(tracing: str) -> None:
    argv = [sys.executable, "-m", "benchmarks.hot_path", "--messages", "4000", "--rounds", "1"]
    argv += ["--tracing", tracing]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| pipelined publish |" in done.stdout
    assert "| publish -> delivery |" in done.stdout
    assert "| publish + ack -> delivery, 1 consumer(s) |" in done.stdout


def test_half_commits_benchmark_runs_with_prepared_transactions(tmp_path) -> None:
    with BrokerProcess("--fsync", "always", data_dir=tmp_path) as broker:
        argv = [sys.executable, "-m", "benchmarks.half_commits", "--url", broker.url]
        done = subprocess.run(
            [*argv, "--seconds", "0.05"], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    assert "transactions/s, acks per transaction:" in done.stdout
    assert "rabbitish prepare + commit" in done.stdout
    assert done.stdout.count("rabbitish plain tx.commit") == 2


def test_amqp10_benchmark_measures_a_selector_receiver() -> None:
    """`python -m benchmarks.amqp10`'s rabbitish column with tiny counts, the selector
    scenario included (RabbitMQ's column is left to the full run)."""
    import argparse

    from benchmarks.amqp10 import RR_091, RR_10, SCENARIOS, Figure, rabbitish, run_broker
    from benchmarks.request_reply import Latency

    args = argparse.Namespace(
        messages=50, body=16, batch=10, rounds=1, durable=False, round_trips=20
    )
    with rabbitish() as (url, pids):
        results = run_broker(url, pids, args)
    assert isinstance(results["selector receive (1 in 10)"], Figure)
    assert set(results) == set(SCENARIOS)
    for round_trip in (RR_10, RR_091):
        latency = results[round_trip]
        assert isinstance(latency, Latency)
        assert 0 < latency.p50_us <= latency.p99_us


def test_mixed_soak_runs_briefly_with_exact_ledgers() -> None:
    """`python -m benchmarks.soak --mixed` for a few seconds at tiny rates, kills and faults
    included: every ledger exact and nothing left behind (flatness needs the long run)."""
    argv = [sys.executable, "-m", "benchmarks.soak", "--mixed", "--minutes", "0.15"]
    argv += ["--rate", "3", "--kill-every", "2", "--fault-every", "1.5", "--sample-every", "1"]
    argv += ["--burst-mib", "2", "--drain-timeout", "60"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=150)
    assert '"settled": true' in done.stdout, done.stdout + done.stderr
    for rule in ("lost", "phantom", "duplicate", "atomic"):
        assert f'"ledger {rule}": 0' in done.stdout, done.stdout
    for left in ("connections", "channels", "consumers", "messages", "messages_half"):
        assert f'"left: {left}": 0' in done.stdout, done.stdout
    assert '"confirmed or committed": 0' not in done.stdout
