"""rabbitish/wire_names.py imports nothing, so the client helpers (rabbitish.transactional) and
the Spark connector's executor-side modules name the broker's headers, exchange and capability
without loading the broker's engine: checked in a fresh interpreter, where nothing else has
imported the engine first."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rabbitish import wire_names

ROOT = Path(__file__).resolve().parents[2]

# Imported where a producer or a Spark task runs; none of them may load rabbitish.engine.
CLIENT_MODULES = [
    "rabbitish.transactional",
    "rabbitish.transactional.common",
    "rabbitish.transactional.blocking",
    "rabbitish.transactional.aio",
]
# rabbitish.spark's modules; those that need pyspark are checked only where it is installed,
# the others (a task's broker session, options, the stream log) always.
SPARK_DIR = ROOT / "rabbitish" / "spark"
SPARK_MODULES = sorted(
    f"rabbitish.spark.{path.stem}" for path in SPARK_DIR.glob("*.py") if path.stem != "__init__"
)
HAS_PYSPARK = importlib.util.find_spec("pyspark") is not None

# Without pyspark, rabbitish/spark/__init__.py (which needs it) is replaced by a bare package,
# so each module is imported with exactly what it imports itself.
PROBE = """
import importlib, json, sys, types
name, bare = sys.argv[1], sys.argv[2] == "bare"
if bare:
    package = types.ModuleType("rabbitish.spark")
    package.__path__ = [sys.argv[3]]
    sys.modules["rabbitish.spark"] = package
try:
    importlib.import_module(name)
except ModuleNotFoundError as err:
    print(json.dumps({"missing": err.name}))
else:
    print(json.dumps({"loaded": sorted(m for m in sys.modules if m.startswith("rabbitish"))}))
"""


def loaded_by(name: str) -> list[str] | None:
    """The rabbitish modules importing `name` loads in a fresh interpreter (None: it needs
    pyspark, which is not installed)."""
    bare = name.startswith("rabbitish.spark") and not HAS_PYSPARK
    args = [name, "bare" if bare else "package", str(SPARK_DIR)]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr

    answer = json.loads(done.stdout)
    if "missing" in answer:
        assert answer["missing"].split(".")[0] == "pyspark", answer
        return None
    return answer["loaded"]


def test_the_module_imports_nothing():
    tree = ast.parse(Path(wire_names.__file__).read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imports == []
    assert loaded_by("rabbitish.wire_names") == ["rabbitish", "rabbitish.wire_names"]


def test_the_names_are_those_on_the_wire():
    """Clients and other brokers' users depend on these exact strings."""
    assert wire_names.HALF_HEADER == "x-half-txn"
    assert wire_names.TXN_EXCHANGE == "amq.rabbitish.txn"
    assert wire_names.CHECK_QUEUE_HEADER == "x-check-queue"
    assert wire_names.CHECK_IMMUNITY_HEADER == "x-check-immunity"
    assert wire_names.CHECK_COUNT_HEADER == "x-check-count"
    assert wire_names.HALF_TRANSACTIONS_CAPABILITY == "rabbitish.half_transactions"
    assert wire_names.DEFAULT_EXCHANGE_ALIAS == "amq.default"
    assert wire_names.TRACE_EXCHANGE == "amq.rabbitmq.trace"
    assert wire_names.NODE_NAME == "rabbitish@localhost"


@pytest.mark.parametrize("name", CLIENT_MODULES + SPARK_MODULES)
def test_client_side_modules_do_not_load_the_engine(name):
    loaded = loaded_by(name)
    if loaded is None:
        pytest.skip(f"{name} needs pyspark, which is not installed")
    assert name in loaded
    assert [m for m in loaded if m == "rabbitish.engine" or m.startswith("rabbitish.engine.")] == []


def test_the_probe_sees_the_engine_where_it_is_loaded():
    """Guard against a probe that passes everything."""
    assert "rabbitish.engine.half" in (loaded_by("rabbitish.engine.half") or [])
