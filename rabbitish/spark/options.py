"""The data source's options, parsed once on the driver so a typo fails the job before any
task touches a queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_URL = "amqp://guest:guest@localhost:5672/%2F"
MODES = ("browse", "drain")
# Unacknowledged messages a streaming read holds at most (basic.qos): a micro-batch's messages
# stay unacked until Spark commits it, so this also bounds a batch.
DEFAULT_PREFETCH = 10_000
MAX_PREFETCH = 65_535  # basic.qos's prefetch-count is a 16-bit field


class AmqpOptionError(ValueError):
    """An option the data source cannot use."""


@dataclass(frozen=True)
class AmqpOptions:
    """url, queue (reads), exchange / routingKey (writes), mode, maxMessages; streaming reads
    also maxRows, maxBytes, prefetch and, from brokers without prepared transactions,
    checkpointLocation (where their write-ahead log lives)."""

    url: str = DEFAULT_URL
    queue: str | None = None
    exchange: str | None = None
    routing_key: str | None = None
    mode: str = "browse"
    max_messages: int | None = None
    checkpoint: str | None = None
    max_rows: int | None = None
    max_bytes: int | None = None
    prefetch: int = DEFAULT_PREFETCH

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> AmqpOptions:
        """Spark hands options over as a case-insensitive dict of strings."""
        lowered = {key.lower(): value for key, value in options.items()}
        known = {"url", "queue", "exchange", "routingkey", "mode", "maxmessages", "path"}
        known |= {"checkpointlocation", "maxrows", "maxbytes", "prefetch"}
        unknown = sorted(set(lowered) - known)
        if unknown:
            raise AmqpOptionError(f"unknown amqp option(s): {', '.join(unknown)}")
        mode = lowered.get("mode", "browse").lower()
        if mode not in MODES:
            raise AmqpOptionError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        return cls(
            url=lowered.get("url", DEFAULT_URL),
            queue=lowered.get("queue") or lowered.get("path"),
            exchange=lowered.get("exchange"),
            routing_key=lowered.get("routingkey"),
            mode=mode,
            max_messages=_positive("maxMessages", lowered.get("maxmessages")),
            checkpoint=lowered.get("checkpointlocation"),
            max_rows=_positive("maxRows", lowered.get("maxrows")),
            max_bytes=_positive("maxBytes", lowered.get("maxbytes")),
            prefetch=_prefetch(lowered.get("prefetch")),
        )

    def require_queue(self) -> str:
        """Reads name a queue; there is no default one to fall back on."""
        if not self.queue:
            raise AmqpOptionError("reading needs the option queue (or load('queue-name'))")
        return self.queue

    def require_checkpoint(self) -> str:
        """A streaming read from a broker without prepared transactions keeps its write-ahead
        log there; without one a driver crash would lose or repeat messages, so there is no
        default."""
        if not self.checkpoint:
            raise AmqpOptionError(
                "a streaming read needs the option checkpointLocation (the query's checkpoint "
                "directory, on a file system the driver can write)"
            )
        return self.checkpoint.removeprefix("file://").removeprefix("file:")


def _prefetch(value: str | None) -> int:
    prefetch = _positive("prefetch", value) or DEFAULT_PREFETCH
    if prefetch > MAX_PREFETCH:
        raise AmqpOptionError(
            f"prefetch must be at most {MAX_PREFETCH} (basic.qos's limit), got {prefetch}"
        )
    return prefetch


def _positive(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise AmqpOptionError(f"{name} must be a whole number, got {value!r}") from None
    if number < 1:
        raise AmqpOptionError(f"{name} must be at least 1, got {number}")
    return number
