"""The data source's options, parsed once on the driver so a typo fails the job before any
task touches a queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_URL = "amqp://guest:guest@localhost:5672/%2F"
MODES = ("browse", "drain")


class AmqpOptionError(ValueError):
    """An option the data source cannot use."""


@dataclass(frozen=True)
class AmqpOptions:
    """url, queue (reads), exchange / routingKey (writes), mode, maxMessages."""

    url: str = DEFAULT_URL
    queue: str | None = None
    exchange: str | None = None
    routing_key: str | None = None
    mode: str = "browse"
    max_messages: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> AmqpOptions:
        """Spark hands options over as a case-insensitive dict of strings."""
        lowered = {key.lower(): value for key, value in options.items()}
        known = {"url", "queue", "exchange", "routingkey", "mode", "maxmessages", "path"}
        known.add("checkpointlocation")  # writeStream passes it to the sink too
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
            max_messages=_positive(lowered.get("maxmessages")),
        )

    def require_queue(self) -> str:
        """Reads name a queue; there is no default one to fall back on."""
        if not self.queue:
            raise AmqpOptionError("reading needs the option queue (or load('queue-name'))")
        return self.queue


def _positive(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise AmqpOptionError(f"maxMessages must be a whole number, got {value!r}") from None
    if number < 1:
        raise AmqpOptionError(f"maxMessages must be at least 1, got {number}")
    return number
