"""`python -m benchmarks.amqp10_hot_path` must keep running: the bridge alone, fed the bytes a
qpid-proton client sends, with tiny counts. It checks itself that every message went in and
came out; no speed is asserted."""

from __future__ import annotations

import subprocess
import sys


def test_amqp10_hot_path_benchmark_runs() -> None:
    argv = [sys.executable, "-m", "benchmarks.amqp10_hot_path", "--messages", "1000"]
    done = subprocess.run([*argv, "--rounds", "2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "| send (unsettled, accepted) |" in done.stdout
    assert "| receive (credit 500, accepted) |" in done.stdout
