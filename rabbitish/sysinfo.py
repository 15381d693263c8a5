"""What the broker asks the operating system about its resources, each answer cheap enough to
take several times a second: resident memory from /proc/self/statm (one small read, no parsing
of /proc/self/status or psutil), total memory from the cgroup limit or /proc/meminfo, free disk
from statvfs, and glibc's malloc_trim to give freed heap pages back to the system (and mallopt to
say when it may do so by itself)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_CGROUP_LIMITS = (
    "/sys/fs/cgroup/memory.max",  # cgroup v2
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",  # cgroup v1
)
_NO_LIMIT = 1 << 60  # cgroup v1 writes a huge number for "unlimited"


def rss_bytes() -> int:
    """Resident set size of this process: what the memory watermark is compared with (the
    memory the kernel would have to find if it ran short, whoever allocated it)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


def peak_rss_bytes() -> int:
    """The highest RSS this process has had (VmHWM), 0 if unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def total_memory_bytes() -> int:
    """The memory this process may use: the cgroup limit if there is one, else MemTotal."""
    total = 0
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError):
        pass
    for path in _CGROUP_LIMITS:
        try:
            with open(path, "rb") as f:
                raw = f.read().strip()
        except OSError:
            continue
        if raw.isdigit() and 0 < int(raw) < _NO_LIMIT:
            limit = int(raw)
            total = min(total, limit) if total else limit
        break
    return total or 1024 * 1024 * 1024  # unknown: as RabbitMQ, assume 1 GiB


def disk_free_bytes(path: str) -> int:
    """Bytes an unprivileged writer can still use on the file system holding `path`."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _malloc_trim() -> Callable[[], None]:
    # The process's own symbols (dlopen(NULL)) include its C library's: no ctypes.util lookup,
    # which imports subprocess and runs `ldconfig -p`, at every start.
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return lambda: None  # not glibc: freed memory stays with the allocator
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


release_free_memory = _malloc_trim()


_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
_M_MMAP_THRESHOLD = -3
HEAP_UP_TO = 32 * 1024 * 1024  # glibc's largest mmap threshold on 64-bit systems
TRIM_ABOVE = 256 * 1024 * 1024


def keep_large_blocks_in_heap() -> bool:
    """Serve blocks up to HEAP_UP_TO from the heap and give the heap's free top back to the
    system only above TRIM_ABOVE (the broker's own malloc_trim, `release_free_memory`, still
    runs every few seconds: engine/resources.py). False where the C library is not glibc.

    glibc's defaults map every block above 128 KiB afresh (raising that bar only after one such
    block is freed, to its size) and trim the heap as soon as its free top passes twice that:
    a 16 MiB message then touched about 50 MiB of freshly mapped memory, 13,000 page faults,
    half of the broker's CPU per byte, and on a virtual machine that hands freed memory back to
    its host more still. Fixed bars keep large bodies' buffers in memory the process owns."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_UP_TO)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE)
    )
