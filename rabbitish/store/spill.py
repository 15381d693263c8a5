"""Message bodies moved to disk under memory pressure. While the resource monitor says memory is
past its paging threshold (engine/resources.py), queues hand the bodies of messages arriving
behind a backlog to this store, which appends them to segment files and drops them from memory;
a body comes back (one pread) when a consumer reaches its message. When pressure begins, the
bodies already waiting in queues go too. This covers what the journal's pager (pager.py) does
not: transient messages and messages on transient queues, which have no copy in the database,
and persistent messages on durable queues shorter than the pager's limits (their bodies are
then written twice, once here, while memory is short).

Segments are plain files under the data dir's `spill` directory (a temporary directory for
:memory:), made when first needed and removed at start and at stop. Each segment holds a weak
set of the messages whose bodies it keeps (read back or not, so a body paged out again is not
written again): once none is alive, the segment file is deleted, so a drained or purged queue
gives its disk space back."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import weakref
from pathlib import Path

from rabbitish.engine.message import Message

SEGMENT_BYTES = 64 * 1024 * 1024  # a new segment file starts past this size
KEEP_READY = 64  # ready messages per queue whose bodies stay in memory under pressure


class _Segment:
    __slots__ = ("fd", "live", "path", "size")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.size = 0
        self.live: weakref.WeakSet[Message] = weakref.WeakSet()

    def close(self) -> None:
        os.close(self.fd)
        self.path.unlink(missing_ok=True)


class SpillStore:
    def __init__(self, directory: str | None) -> None:
        """`directory`: where segment files go (made when first needed, removed at close);
        None for a private temporary directory."""
        self._requested = directory
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)  # nothing there outlives a restart
        self.dir: Path | None = None
        self.paging = False  # set by the resource monitor
        self._segments: list[_Segment] = []
        self._next = 0
        self.paged_out = 0  # bodies written so far (figures for docs and tests)
        self.read_back = 0

    def _directory(self) -> Path:
        if self.dir is None:
            if self._requested is None:
                self.dir = Path(tempfile.mkdtemp(prefix="rabbitish-spill-"))
            else:
                self.dir = Path(self._requested)
                self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir

    @property
    def disk_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def page_out(self, message: Message) -> None:
        """Write the body to the current segment and drop it from memory."""
        body = message.body_if_in_memory
        if body is None:
            return
        loader = message.loader
        if isinstance(loader, functools.partial) and loader.func == self._load:
            message.drop_body(loader)  # read back since, but its copy here is still good
            return
        segment = self._segments[-1] if self._segments else None
        if segment is None or segment.size >= SEGMENT_BYTES:
            segment = _Segment(self._directory() / f"{self._next:08d}.seg")
            self._next += 1
            self._segments.append(segment)
        offset = segment.size
        view = memoryview(body)
        while view:
            written = os.pwrite(segment.fd, view, offset + len(body) - len(view))
            view = view[written:]
        segment.size += len(body)
        segment.live.add(message)
        message.drop_body(functools.partial(self._load, segment, offset))
        self.paged_out += 1

    def _load(self, segment: _Segment, offset: int, message: Message) -> bytes:
        body = os.pread(segment.fd, message.size, offset)
        while len(body) < message.size:  # a short read: only at the end of a huge body
            more = os.pread(segment.fd, message.size - len(body), offset + len(body))
            if not more:
                raise LookupError(f"message {message.id}: spilled body cut short")
            body += more
        self.read_back += 1
        return body

    def page_out_queues(self, queues: list) -> int:
        """Pressure has begun: move the bodies of messages waiting behind each queue's first
        KEEP_READY out of memory. Returns how many went."""
        before = self.paged_out
        for queue in queues:
            if len(queue.ready) <= KEEP_READY:
                continue
            for position, entry in enumerate(queue.ready):
                if position >= KEEP_READY:
                    self.page_out(entry.message)
        return self.paged_out - before

    def collect(self) -> None:
        """Delete segments whose messages are all gone or read back; cut the last one back."""
        if not self._segments:
            return
        keep = []
        for segment in self._segments:
            if len(segment.live):
                keep.append(segment)
            else:
                segment.close()
        self._segments = keep

    def close(self) -> None:
        for segment in self._segments:
            segment.close()
        self._segments = []
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
