"""Fixtures of the restart tests: a data dir a test restarts its brokers on."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def data(tmp_path: Path) -> str:
    return str(tmp_path / "data")
