"""Ready messages of one queue, always in publication order. New messages append; a requeued
message goes back to its original place. Every message taken out from the head has a lower
sequence number than every message still in the fresh deque, so requeued ones (a heap) always
come first. A consumer with a selection takes the first message it accepts from wherever it is
(`take_matching`); the others keep their order. `since(seq)` is a browser's view: what is ready
from a sequence number on, in publication order, taking nothing."""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterator

from rabbitish.engine.message import QueueEntry


class ReadyList:
    __slots__ = ("_fresh", "_requeued", "bytes", "count")

    def __init__(self) -> None:
        self._fresh: deque[QueueEntry] = deque()
        self._requeued: list[QueueEntry] = []
        self.bytes = 0
        # Entries held: the queue reads it several times per message, where `len()` would
        # be a Python call each time.
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, entry: QueueEntry) -> None:
        self._fresh.append(entry)
        self.bytes += entry.message.size
        self.count += 1

    def requeue(self, entry: QueueEntry) -> None:
        heapq.heappush(self._requeued, entry)
        self.bytes += entry.message.size
        self.count += 1

    def peek(self) -> QueueEntry | None:
        if self._requeued:
            return self._requeued[0]
        return self._fresh[0] if self._fresh else None

    def pop(self) -> QueueEntry:
        entry = heapq.heappop(self._requeued) if self._requeued else self._fresh.popleft()
        self.bytes -= entry.message.size
        self.count -= 1
        return entry

    def take_matching(
        self, accepts: Callable[[QueueEntry], bool], seen: dict[object, int]
    ) -> QueueEntry | None:
        """Remove and return the first entry `accepts` takes, in the order `pop` would give.
        `seen[self]` is the sequence number up to which fresh entries were all turned down
        before: they are not judged again (requeued ones always are: they changed)."""
        requeued = self._requeued
        if requeued:
            for entry in sorted(requeued):
                if accepts(entry):
                    requeued.remove(entry)
                    heapq.heapify(requeued)
                    self.bytes -= entry.message.size
                    self.count -= 1
                    return entry
        fresh = self._fresh
        mark = seen.get(self)
        start = 0 if mark is None else bisect.bisect_right(fresh, mark, key=_seq)
        for index, entry in enumerate(itertools.islice(fresh, start, None), start):
            if accepts(entry):
                del fresh[index]
                seen[self] = entry.seq
                self.bytes -= entry.message.size
                self.count -= 1
                return entry
        if fresh:
            seen[self] = fresh[-1].seq
        return None

    def since(self, seq: int) -> Iterator[QueueEntry]:
        """Ready entries numbered `seq` or later, in publication order (taken by nobody). The
        fresh deque is in order, so its first one is found by bisection."""
        yield from sorted(entry for entry in self._requeued if entry.seq >= seq)
        fresh = self._fresh
        yield from itertools.islice(fresh, bisect.bisect_left(fresh, seq, key=_seq), None)

    def clear(self) -> list[QueueEntry]:
        entries = list(self)
        self._fresh.clear()
        self._requeued.clear()
        self.bytes = 0
        self.count = 0
        return entries

    def __iter__(self) -> Iterator[QueueEntry]:
        yield from sorted(self._requeued)
        yield from self._fresh


class PriorityReady:
    """x-max-priority queues: one ReadyList per level, highest level served first."""

    __slots__ = ("_levels", "count", "max_priority")

    def __init__(self, max_priority: int) -> None:
        self.max_priority = max_priority
        self._levels = [ReadyList() for _ in range(max_priority + 1)]
        self.count = 0  # entries held, over all levels (as ReadyList.count)

    def _level(self, entry: QueueEntry) -> ReadyList:
        return self._levels[min(entry.message.priority, self.max_priority)]

    def __len__(self) -> int:
        return self.count

    @property
    def bytes(self) -> int:
        return sum(level.bytes for level in self._levels)

    def append(self, entry: QueueEntry) -> None:
        self._level(entry).append(entry)
        self.count += 1

    def requeue(self, entry: QueueEntry) -> None:
        self._level(entry).requeue(entry)
        self.count += 1

    def peek(self) -> QueueEntry | None:
        for level in reversed(self._levels):
            if len(level):
                return level.peek()
        return None

    def pop(self) -> QueueEntry:
        for level in reversed(self._levels):
            if level.count:
                self.count -= 1
                return level.pop()
        raise IndexError("pop from an empty queue")

    def take_matching(
        self, accepts: Callable[[QueueEntry], bool], seen: dict[object, int]
    ) -> QueueEntry | None:
        for level in reversed(self._levels):
            if level.count:
                entry = level.take_matching(accepts, seen)
                if entry is not None:
                    self.count -= 1
                    return entry
        return None

    def since(self, seq: int) -> Iterator[QueueEntry]:
        """As `ReadyList.since`, across levels: a browser sees publication order, not
        priority order."""
        return heapq.merge(*(level.since(seq) for level in self._levels))

    def clear(self) -> list[QueueEntry]:
        entries = list(self)
        for level in self._levels:
            level.clear()
        self.count = 0
        return entries

    def __iter__(self) -> Iterator[QueueEntry]:
        for level in reversed(self._levels):
            yield from level


def _seq(entry: QueueEntry) -> int:
    return entry.seq
