"""`rabbitish serve` refuses settings it cannot run with before it starts, and starts with the
cyclic garbage collector off until it is up."""

from __future__ import annotations

import subprocess
import sys

from rabbitish.cli.serve import GC_THRESHOLD, limits_problem

from rabbitish.config import Config


def test_a_negative_transaction_timeout_is_refused():
    assert limits_problem(Config(transaction_timeout=-1)) == (
        "--transaction-timeout must not be negative"
    )
    assert limits_problem(Config(transaction_timeout=0.5)) is None


# In a fresh interpreter: `run` turns collection off for the start; settle_memory turns it back
# on, and a start that fails leaves it on too.
GC_SCRIPT = """
import gc
from rabbitish.cli.serve import run, settle_memory
from rabbitish.config import Config
failed = run(Config(tls_port=0, data_dir=":memory:", management_port=0))
after_failure = gc.isenabled()
gc.disable()
settle_memory()
print(failed, after_failure, gc.isenabled(), gc.get_threshold()[0])
"""


def test_collection_is_back_on_once_started_or_after_a_failed_start():
    done = subprocess.run(
        [sys.executable, "-c", GC_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "True", "True", str(GC_THRESHOLD)]
