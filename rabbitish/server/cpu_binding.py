"""`rabbitish serve` binds its event loop's thread to one CPU, as RabbitMQ binds its scheduler
threads (its rabbitmq-env starts beam with `+stbt db`, "default bind"); `u` ("unbound", the
same letter RabbitMQ's RABBITMQ_SCHEDULER_BIND_TYPE takes) leaves it to the kernel.

Why: a single busy thread that the kernel moves between CPUs runs each move with cold caches.
With a client whose own threads wake one another on both CPUs of a small machine (amqp091-go's
reader, dispatcher and caller), 38% of the loop's wake-ups ran on the second CPU, at a median
half again as long, and the slowest percent of round trips took 1.5-1.8 times as long as bound
(docs/performance.md, "One CPU for the event loop").

The loop takes the CPU it is running on when the broker has started, within the process's
allowed set (taskset, cgroup cpusets), so brokers started one after another land where the
kernel put them rather than all on the first CPU. Threads the broker started before (the
store's writer) keep the whole set; a thread the loop starts later (the default executor's)
inherits the binding. Only `rabbitish serve` binds: a broker embedded in a test
(rabbitish.testing) runs on its caller's thread and never does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

THREAD_STAT = Path("/proc/thread-self/stat")


def current_cpu() -> int | None:
    """The CPU the calling thread last ran on (field 39 of its stat), None where unreadable."""
    try:
        stat = THREAD_STAT.read_text()
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces: the first
    # of them is field 3, so field 39 is at index 36.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[36])
    except (IndexError, ValueError):
        return None


def bind_loop_thread(bind_type: str) -> int | None:
    """Bind the calling thread to the CPU it runs on; the CPU, or None when it stays unbound
    (`u`, one allowed CPU only, or a system without CPU affinity). `bind_type` is one of
    config.SCHEDULER_BIND_TYPES."""
    if bind_type == "u" or not sys.platform.startswith("linux"):
        return None
    allowed = os.sched_getaffinity(0)
    cpu = current_cpu()
    if len(allowed) < 2 or cpu not in allowed:
        return None
    os.sched_setaffinity(0, {cpu})
    return cpu
