"""`python -m benchmarks.fsync` must keep running: its disk loops for a fraction of a second,
then the whole script with tiny counts against a broker it starts. No speed is asserted."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.fsync import disk_rates


def test_disk_loops_measure_and_leave_nothing_behind(tmp_path) -> None:
    rates = disk_rates(tmp_path, 0.05)
    assert rates.append_fsync > 0 and rates.append_fdatasync > 0
    assert rates.rewrite_fdatasync > 0 and rates.sqlite_commit > 0 and rates.bandwidth > 0
    assert list(tmp_path.iterdir()) == []


def test_script_reports_the_broker_against_the_disk(tmp_path) -> None:
    argv = [sys.executable, "-m", "benchmarks.fsync", "--dir", str(tmp_path)]
    small = ["--seconds", "0.05", "--rounds", "1", "--messages", "50", "--no-rabbitmq"]
    done = subprocess.run(argv + small, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| rabbitish tx_commit_1 " in done.stdout
    assert "| rabbitish confirm_publish " in done.stdout
    assert list(tmp_path.iterdir()) == []
