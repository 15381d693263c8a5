"""A 0-9-1 consumer as the engine's queues see it: its credit comes from its own prefetch, the
channel's global limiter (basic.qos global=true), channel.flow and the connection's output
backlog; deliveries become basic.deliver frames."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rabbitish.engine.consumer import UNLIMITED, Consumer
from rabbitish.protocol.outgoing import shortstr

if TYPE_CHECKING:
    from rabbitish.engine.delivery import Delivery
    from rabbitish.engine.queue import Queue
    from rabbitish.protocol.channel import Channel


class GlobalLimiter:
    """A channel's global prefetch (basic.qos global=true), modelled on RabbitMQ's
    rabbit_limiter: `volume` counts deliveries against the limit. It starts at the number of
    unacked deliveries when the limit is set, grows with each consumer delivery that needs an
    ack and shrinks as consumer deliveries are settled (basic.get deliveries never count;
    settlements staged in a transaction count at commit)."""

    __slots__ = ("prefetch", "volume")

    def __init__(self) -> None:
        self.prefetch = 0  # 0: no channel limit
        self.volume = 0

    def limit(self, prefetch_count: int, unacked: int) -> None:
        """basic.qos(global=true), with `unacked` deliveries outstanding on the channel."""
        if prefetch_count == 0:
            self.unlimit()
            return
        if self.prefetch == 0:
            self.volume = unacked
        self.prefetch = prefetch_count

    def unlimit(self) -> None:
        """basic.qos(global=false) and a global limit of 0 both drop the channel limit."""
        self.prefetch = 0
        self.volume = 0

    def delivered(self) -> None:
        """A consumer delivery that needs an ack went out."""
        if self.prefetch:
            self.volume += 1

    def settled(self, count: int) -> None:
        """Consumer deliveries settled; RabbitMQ's limiter leaves a zero volume alone."""
        if self.prefetch and self.volume:
            self.volume -= count


class Consumer091(Consumer):
    __slots__ = ("channel", "limiter", "tag_bytes")

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
            session=channel.session,
            prefetch=prefetch,
        )
        self.channel = channel
        self.limiter = channel.limiter
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
        limiter = self.limiter
        if limiter.prefetch:
            credit = min(credit, limiter.prefetch - limiter.volume)
        return credit

    def delivered(self, delivery: Delivery) -> None:
        self.channel.deliver(self, delivery)

    def release_credit(self, count: int) -> None:
        # Settlements anywhere (ack, reject, recover, channel close, tx.commit) also shrink the
        # channel's global prefetch volume.
        self.unsettled -= count
        self.limiter.settled(count)

    def cancelled_by_broker(self) -> None:
        self.channel.consumer_cancelled_by_broker(self)
