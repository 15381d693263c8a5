"""The streaming reader's write-ahead log: the rows of every offset range it hands Spark, on
disk before Spark learns the range exists, kept until every message of the range is acked.

A driver that dies anywhere leaves each range either unknown to Spark (its messages were never
acked, the broker redelivers them) or in the log: a restarted query replays a planned range
from the log row for row, and recognises the redelivered copies of logged messages by their
fingerprints instead of taking them as new."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pamqp import commands

# Headers a broker may add or change when it redelivers a message (quorum queues count).
UNSTABLE_HEADERS = frozenset({"x-delivery-count"})
RANGE_FILE = re.compile(r"^(\d{20})-(\d{20})\.range$")


def fingerprint(
    exchange: str, routing_key: str, props: commands.Basic.Properties, body: bytes
) -> str:
    """What identifies a message across redeliveries: where it was published, its properties
    and body. Two messages equal in all of these are interchangeable for a consumer. The
    properties are keyed as the log has always keyed them (`type`, timestamps in seconds),
    so a log written before keeps matching."""
    fields: dict[str, Any] = {k: v for k, v in props if v is not None}
    if "message_type" in fields:
        fields["type"] = fields.pop("message_type")
    if "timestamp" in fields:
        fields["timestamp"] = int(fields["timestamp"].timestamp())
    headers = fields.get("headers")
    if headers:
        fields["headers"] = {k: v for k, v in headers.items() if k not in UNSTABLE_HEADERS}
    key = repr((exchange, routing_key, sorted(fields.items()), body))
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class PlannedRange:
    """Offsets start..end-1: message `start + i` is entries[i], a (fingerprint, row) pair."""

    start: int
    end: int
    entries: list[tuple[str, tuple[Any, ...]]]


class StreamLog:
    """One directory per (checkpoint, queue): a file per planned range and the highest offset
    Spark has committed (where a new query on the same directory starts numbering)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "committed"
        self._committed = int(path.read_text()) if path.exists() else 0

    def ranges(self) -> list[PlannedRange]:
        """Every range still in the log, oldest first."""
        found = []
        for path in sorted(self.directory.iterdir()):
            match = RANGE_FILE.match(path.name)
            if match:
                entries = pickle.loads(path.read_bytes())
                found.append(PlannedRange(int(match[1]), int(match[2]), entries))
        return found

    def write(self, planned: PlannedRange) -> None:
        self._atomic(self._name(planned.start, planned.end), pickle.dumps(planned.entries))

    def drop(self, start: int, end: int) -> None:
        """The range's messages are all acked: it can never be replayed or redelivered."""
        (self.directory / self._name(start, end)).unlink(missing_ok=True)
        self._sync_directory()

    def committed(self) -> int:
        return self._committed

    def record_committed(self, offset: int) -> None:
        if offset > self._committed:
            self._atomic("committed", str(offset).encode())
            self._committed = offset

    @staticmethod
    def _name(start: int, end: int) -> str:
        return f"{start:020}-{end:020}.range"

    def _atomic(self, name: str, data: bytes) -> None:
        """Written whole or not at all: a temporary file, fsynced, renamed over the name."""
        temporary = self.directory / f".{name}.tmp"
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.directory / name)
        self._sync_directory()

    def _sync_directory(self) -> None:
        descriptor = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
