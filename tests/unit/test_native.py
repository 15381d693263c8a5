"""The compiled build (rabbitish/native.py): a run of the suite that expects it
(RABBITISH_EXPECT_COMPILED=1, `make test-native`) really imports every hot module compiled."""

from __future__ import annotations

import importlib
import os

import pytest

from rabbitish.native import MODULES, compiled

EXPECTED = os.environ.get("RABBITISH_EXPECT_COMPILED") == "1"


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("path", MODULES)
def test_every_hot_module_is_compiled_or_none_is(path):
    module = importlib.import_module(_module(path))
    assert (not (module.__file__ or "").endswith(".py")) == compiled() == EXPECTED
