"""One local Spark session for the whole run (JVM start-up is the slow part), pointed at the
session's in-process rabbitish; tasks get three attempts (local[2,3]) so retries can be
tested. Skips, saying why, without Java or the spark extra."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def missing() -> str | None:
    """Why the spark tests cannot run here, or None."""
    if shutil.which("java") is None:
        return "no java on PATH: the spark tests need Java 17 or 21 (apt openjdk-17-jre-headless)"
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed: pip install -e '.[spark]' (make test does when java is)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    from tests.support.spark import local_session

    # Python workers run this interpreter and can import tests.support (UDFs use it).
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    session = local_session("local[2,3]", "rabbitish-tests")
    try:
        yield session
    finally:
        session.stop()
