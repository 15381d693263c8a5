"""The `rabbitmqctl` and `rabbitmq-diagnostics` commands of `rabbitish[ctl-aliases]`, installed as
pip installs the sibling distribution packages/rabbitish-ctl-aliases, but into a folder of their
own: on the suite's PATH they would shadow a real RabbitMQ's tools."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALIASES = ROOT / "packages" / "rabbitish-ctl-aliases"


def install_aliases(work: Path) -> Path:
    """Install into `work`; the folder holding the two commands."""
    source = work / "source"
    shutil.copytree(ALIASES, source)  # pip builds in place: keep the checkout clean
    target = work / "installed"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--no-index", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return target / "bin"
