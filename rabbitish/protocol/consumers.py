"""A 0-9-1 consumer as the engine's queues see it: its credit comes from the channel's prefetch
(per consumer and global), channel.flow and the connection's output backlog; deliveries become
basic.deliver frames."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.engine.consumer import UNLIMITED, Consumer
from rabbitish.engine.sessions import SessionRef
from rabbitish.protocol.outgoing import shortstr

if TYPE_CHECKING:
    from rabbitish.engine.delivery import Delivery
    from rabbitish.engine.queue import Queue
    from rabbitish.protocol.channel import Channel


class Consumer091(Consumer):
    __slots__ = ("channel", "tag_bytes")

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
        super().__init__(
            queue,
            tag,
            settled_on_delivery=no_ack,
            exclusive=exclusive,
            arguments=arguments,
            session=SessionRef(channel.conn, channel.id, channel.conn.user),
            prefetch=prefetch,
        )
        self.channel = channel
        self.tag_bytes = shortstr(tag)

    @property
    def credit(self) -> int:
        channel = self.channel
        conn = channel.conn
        if conn.output_blocked:
            conn.consumers_starved = True
            return 0
        if not channel.flow_active:
            return 0
        if self.settled_on_delivery:
            return UNLIMITED
        credit = UNLIMITED
        if self.prefetch:
            credit = self.prefetch - self.unsettled
        if channel.global_prefetch:
            credit = min(credit, channel.global_prefetch - channel.global_volume)
        return credit

    def delivered(self, delivery: Delivery) -> None:
        self.channel.deliver(self, delivery)

    def release_credit(self, count: int) -> None:
        # Settlements anywhere (ack, reject, recover, channel close, tx.commit) also shrink the
        # channel's global prefetch volume.
        self.unsettled -= count
        self.channel.limiter_settled(count)

    def cancelled_by_broker(self) -> None:
        self.channel.consumer_cancelled_by_broker(self)
