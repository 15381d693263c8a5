"""The allocator settings `rabbitish serve` makes: large blocks, once freed, are reused from the
heap instead of being mapped afresh (page faults counted in a child process, whose allocator
the test may change)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
from rabbitish.sysinfo import keep_large_blocks_in_heap
kept = keep_large_blocks_in_heap() if sys.argv[1] == "keep" else False
def rounds(count):
    for _ in range(count):
        a = bytes(16 * 1024 * 1024)
        b = a[1:]  # two live at once, as a body and its copy are
        del a, b
rounds(2)  # the first rounds touch their memory for the first time either way
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(20)
print(int(kept), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", FAULTS, mode], check=True, capture_output=True, text=True
    ).stdout.split()
    return bool(int(out[0])), int(out[1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_large_blocks_are_reused_without_new_page_faults() -> None:
    kept, faults = _faults("keep")
    assert kept
    _, default_faults = _faults("default")
    pages_per_round = 2 * 16 * 1024 * 1024 // 4096
    assert default_faults > 10 * pages_per_round  # mapped afresh every time...
    assert faults < pages_per_round // 4  # ...and no longer
