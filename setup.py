"""Everything about the package is in pyproject.toml; this file only adds, when
RABBITISH_COMPILE=1, the hot modules compiled to C with mypyc (rabbitish/native.py)."""

from __future__ import annotations

import os
import runpy
from typing import Any

from setuptools import setup

COMPILE = os.environ.get("RABBITISH_COMPILE") == "1"
# mypyc ships with mypy (the version `make typecheck` uses); pamqp, which the compiled modules
# import, so they are compiled against its types as they are checked.
BUILD_REQUIRES = ["mypy>=2.4,<2.5", "pamqp>=3.3,<5"]


def compiled_modules() -> list[Any]:
    if not COMPILE:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # pip is asking for the build's requirements: mypy is one
        return []
    modules = runpy.run_path(os.path.join("rabbitish", "native.py"))["MODULES"]
    # The package's own mypy settings are for `make typecheck`'s layout (build/typecheck).
    return mypycify(["--config-file=", "--ignore-missing-imports", *modules], opt_level="3")


setup(ext_modules=compiled_modules(), setup_requires=BUILD_REQUIRES if COMPILE else [])
