"""Memory and disk limits, as RabbitMQ's memory and disk monitors keep them. Memory is the
process's resident set size (RSS), sampled on a timer and after every few MiB published (so a
fast publisher cannot run far past the watermark between samples): RSS is what the kernel has to
find, whatever allocated it, and reading it costs one small /proc read, where summing the
engine's own objects would miss the allocator's and the interpreter's overheads. From
`paging_ratio` of the watermark on, queues move message bodies to disk (`on_paging`); above the
watermark the "memory" alarm blocks publishers. Free disk below `disk_limit` raises the "disk"
alarm. Freed heap pages are handed back to the system (malloc_trim) before the alarm is raised
and, less often, above the paging threshold or TRIM_FLOOR, so RSS falls after a drain or purge."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rabbitish.engine.alarms import Alarms
from rabbitish.engine.clock import Scheduler, TimerHandle

log = logging.getLogger("rabbitish.resources")

MEMORY_INTERVAL = 0.1  # seconds between RSS samples
DISK_INTERVAL = 1.0  # seconds between free-space samples
TRIM_INTERVAL = 2.0  # seconds between malloc_trim calls below the paging threshold,
TRIM_INTERVAL_PAGING = 1.0  # ...above it,
TRIM_INTERVAL_ALARM = 0.2  # ...and above the watermark (a trim may lift the alarm)
TRIM_FLOOR = 32 * 1024 * 1024  # ...and only above this RSS
SAMPLE_BYTES = 4 * 1024 * 1024  # published bytes that trigger a sample before the timer does
PAGING_HYSTERESIS = 0.9  # paging stops below this share of the threshold
MESSAGE_OVERHEAD = 512  # ...counting each message's own objects at about this much
MEMORY_REASON = "low on memory"  # RabbitMQ's connection.blocked reasons
DISK_REASON = "low on disk"

_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_UNITS = {
    "": 1,
    **dict.fromkeys(("k", "kib"), 1024),
    **dict.fromkeys(("m", "mib"), 1024**2),
    **dict.fromkeys(("g", "gib"), 1024**3),
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}


def parse_size(text: str) -> int:
    """Bytes from an information unit as RabbitMQ reads them: `512MiB`, `1GB`, `100000`
    (k/KiB/M/MiB/G/GiB are powers of 1024, kB/MB/GB powers of 1000)."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 512MiB, 1GB, 100000)")
    return int(match.group(1)) * _UNITS[unit]


def parse_watermark(text: str, total_memory: int) -> int:
    """The memory high watermark in bytes: a fraction of `total_memory` ("0.4"; a number with
    a point, or 0 or 1) or an absolute size ("512MiB", "2000000000")."""
    text = str(text).strip()
    try:
        if "." in text or text in ("0", "1"):
            fraction = float(text)
            if fraction < 0:
                raise ValueError
            return int(total_memory * fraction)
    except ValueError:
        raise ValueError(f"not a memory watermark: {text!r} (e.g. 0.4 or 512MiB)") from None
    return parse_size(text)


if TYPE_CHECKING:
    from rabbitish.engine.message import Message


class BodyStore(Protocol):
    """Where queues put message bodies while memory is short (store/spill.py)."""

    paging: bool  # memory is past the paging threshold: new bodies behind a backlog go

    def page_out(self, message: Message) -> None: ...


@dataclass
class Probes:
    """How the monitor reads the system (rabbitish.sysinfo in the broker, fakes in tests)."""

    rss: Callable[[], int]
    disk_free: Callable[[], int]
    release_free_memory: Callable[[], None]


class ResourceMonitor:
    def __init__(
        self,
        alarms: Alarms,
        scheduler: Scheduler,
        probes: Probes,
        memory_limit: int,
        paging_ratio: float,
        disk_limit: int,
    ) -> None:
        self.alarms = alarms
        self.scheduler = scheduler
        self.probes = probes
        self.memory_limit = memory_limit
        self.paging_ratio = paging_ratio
        self.disk_limit = disk_limit
        self.rss = 0
        self.paging = False
        # Called with True when RSS reaches the paging threshold (queues move bodies to disk
        # from then on) and False when it falls back below it.
        self.on_paging: Callable[[bool], None] = lambda paging: None
        self.after_sample: Callable[[], None] = lambda: None  # e.g. free emptied spill files
        self._published = 0
        self._last_trim = float("-inf")
        self._running = False
        self._timers: dict[str, TimerHandle] = {}

    @property
    def paging_threshold(self) -> int:
        return int(self.memory_limit * self.paging_ratio)

    def start(self) -> None:
        self._running = True
        self.sample_memory()
        self.sample_disk()

    def stop(self) -> None:
        self._running = False
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def published(self, size: int) -> None:
        """`size` bytes were just published: sample now if enough arrived since the last."""
        self._published += size + MESSAGE_OVERHEAD
        if self._published >= SAMPLE_BYTES and self._running:
            self._check_memory()

    # ------------------------------------------------------------------ memory
    def sample_memory(self) -> None:
        if not self._running:
            return
        self._check_memory()
        self.after_sample()
        self._timers["memory"] = self.scheduler.call_later(MEMORY_INTERVAL, self.sample_memory)

    def _check_memory(self) -> None:
        self._published = 0
        rss = self.probes.rss()
        now = self.scheduler.now()
        since_trim = now - self._last_trim
        if (
            (rss > self.memory_limit and since_trim >= TRIM_INTERVAL_ALARM)
            or (rss >= self.paging_threshold and since_trim >= TRIM_INTERVAL_PAGING)
            or (rss >= TRIM_FLOOR and since_trim >= TRIM_INTERVAL)
        ):
            self.probes.release_free_memory()  # a trim costs ~10 ms on a 300 MiB heap
            self._last_trim = now
            rss = self.probes.rss()
        self.rss = rss
        # Paging stops a little below where it starts, so RSS hovering at the threshold does
        # not walk every queue (on_paging) at each sample.
        paging = rss >= self.paging_threshold * (PAGING_HYSTERESIS if self.paging else 1)
        if paging != self.paging:
            self.paging = paging
            self.on_paging(paging)
            if paging:
                self.probes.release_free_memory()
                self.rss = rss = self.probes.rss()
        if rss > self.memory_limit:
            if "memory" not in self.alarms.active:
                log.warning(
                    "memory resource limit alarm set: RSS %d bytes above the limit of %d bytes; "
                    "publishers are blocked",
                    rss,
                    self.memory_limit,
                )
            self.alarms.raise_alarm("memory", MEMORY_REASON)
        elif "memory" in self.alarms.active:
            log.info("memory resource limit alarm cleared: RSS %d bytes", rss)
            self.alarms.clear("memory")

    # ------------------------------------------------------------------ disk
    def sample_disk(self) -> None:
        if not self._running:
            return
        try:
            free = self.probes.disk_free()
        except OSError as err:
            log.warning("cannot read free disk space: %s", err)
            free = None
        if free is not None and free < self.disk_limit:
            if "disk" not in self.alarms.active:
                log.warning(
                    "disk resource limit alarm set: %d bytes free, limit %d bytes; "
                    "publishers are blocked",
                    free,
                    self.disk_limit,
                )
            self.alarms.raise_alarm("disk", DISK_REASON)
        elif free is not None and "disk" in self.alarms.active:
            log.info("disk resource limit alarm cleared: %d bytes free", free)
            self.alarms.clear("disk")
        self._timers["disk"] = self.scheduler.call_later(DISK_INTERVAL, self.sample_disk)
