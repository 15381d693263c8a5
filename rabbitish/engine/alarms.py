"""Resource alarms, RabbitMQ's word for "stop taking publishes": while any alarm is raised, the
front ends block publishing connections (0-9-1 connection.blocked and no more reads) and lift
the block when the last alarm clears. The store raises one while its writes fail, the resource
monitor (resources.py) one for memory above the high watermark and one for disk space below the
free limit."""

from __future__ import annotations

from collections.abc import Callable

RESOURCES = ("disk", "memory")  # the alarms RabbitMQ has (engine/resources.py raises them)


class Alarms:
    def __init__(self) -> None:
        self.active: dict[str, str] = {}  # source -> reason, e.g. "store" -> "disk is full"
        self._listeners: list[Callable[[], None]] = []

    @property
    def reason(self) -> str | None:
        """The reason a blocked client is told, None without alarms. The memory and disk alarms
        read as RabbitMQ words them, in its order: "low on memory", "low on disk & memory"; a
        store alarm's own reason follows."""
        resources = sorted(source for source in self.active if source in RESOURCES)
        parts = [f"low on {' & '.join(resources)}"] if resources else []
        parts += [reason for source, reason in self.active.items() if source not in RESOURCES]
        return " & ".join(parts) or None

    def listen(self, callback: Callable[[], None]) -> None:
        """Call `callback` after every change of the set of alarms."""
        self._listeners.append(callback)

    def raise_alarm(self, source: str, reason: str) -> None:
        if self.active.get(source) != reason:
            self.active[source] = reason
            self._changed()

    def clear(self, source: str) -> None:
        if self.active.pop(source, None) is not None:
            self._changed()

    def _changed(self) -> None:
        for callback in list(self._listeners):
            callback()
