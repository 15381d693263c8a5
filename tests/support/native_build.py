"""A copy of the package as installed, its hot modules compiled with mypyc (rabbitish/native.py),
under build/native: what `RABBITISH_COMPILE=1 pip install` gives, for the suite's compiled run and
the benchmarks' `--native`. Run it (`python -m tests.support.native_build`) to build or refresh."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rabbitish.native import MODULES

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "native"
# Where each part of the installed package comes from (pyproject's package-dir).
LAYOUT = {
    "rabbitish": ROOT / "rabbitish",
    "rabbitish/bridge": ROOT / "bridge",
    "rabbitish/cli": ROOT / "cli",
}


def _sources() -> list[Path]:
    return sorted(
        path
        for source in LAYOUT.values()
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def _digest() -> str:
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> Path:
    """build/native, compiled from the sources as they are now (rebuilt only when they
    changed). Put it first on PYTHONPATH (with `python -P`) to run the compiled package."""
    stamp = TREE / ".sources"
    digest = _digest()
    if stamp.exists() and stamp.read_text() == digest:
        return TREE
    shutil.rmtree(TREE, ignore_errors=True)
    for target, source in LAYOUT.items():
        shutil.copytree(source, TREE / target, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    mypyc = Path(sys.executable).parent / "mypyc"
    args = [str(mypyc), "--config-file=", "--ignore-missing-imports", *MODULES]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(args, cwd=TREE, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"mypyc failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    stamp.write_text(digest)
    return TREE


if __name__ == "__main__":
    print(build())
