"""A 0-9-1 consumer as the engine's queues see it: credit comes from the channel's prefetch,
channel.flow and the connection's output backlog; deliveries become basic.deliver frames."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.engine.message import QueueEntry
from rabbitish.protocol.outgoing import shortstr

if TYPE_CHECKING:
    from rabbitish.engine.queue import Queue
    from rabbitish.protocol.channel import Channel


class Consumer091:
    __slots__ = (
        "_unacked",
        "arguments",
        "channel",
        "exclusive",
        "no_ack",
        "prefetch",
        "priority",
        "queue",
        "tag",
        "tag_bytes",
    )

    def __init__(
        self,
        channel: Channel,
        queue: Queue,
        tag: str,
        *,
        no_ack: bool,
        exclusive: bool,
        prefetch: int,
        arguments: dict[str, Any],
    ) -> None:
        self.channel = channel
        self.queue = queue
        self.tag = tag
        self.tag_bytes = shortstr(tag)
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.prefetch = prefetch
        self.arguments = arguments
        priority = arguments.get("x-priority", 0)
        self.priority = priority if isinstance(priority, int) else 0
        self._unacked = 0

    @property
    def unacked(self) -> int:
        """Deliveries of this consumer not settled yet (per-consumer prefetch)."""
        return self._unacked

    @unacked.setter
    def unacked(self, value: int) -> None:
        # Every change also moves the channel's global prefetch volume, wherever the
        # settlement happens (ack, reject, recover, channel close, tx.commit).
        delta = value - self._unacked
        self._unacked = value
        if delta > 0:
            self.channel.limiter_delivered(delta)
        elif delta < 0:
            self.channel.limiter_settled(-delta)

    def can_take(self) -> bool:
        channel = self.channel
        conn = channel.conn
        if conn.output_blocked:
            conn.consumers_starved = True
            return False
        if not channel.flow_active:
            return False
        if self.no_ack:
            return True
        if self.prefetch and self.unacked >= self.prefetch:
            return False
        return not (channel.global_prefetch and channel.credit_used >= channel.global_prefetch)

    def deliver(self, queue: Queue, entry: QueueEntry, redelivered: bool) -> None:
        self.channel.deliver(self, entry, redelivered)

    def cancelled_by_broker(self, queue: Queue) -> None:
        self.channel.consumer_cancelled_by_broker(self)
