"""The delivery acknowledgement timeout (RabbitMQ's consumer_timeout): a channel whose oldest
unacknowledged delivery (to a consumer or a basic.get) is older than the timeout is closed with
406 PRECONDITION_FAILED and RabbitMQ's text, and its unacked messages go back to their queues.
RabbitMQ checks on its channel tick; here a timer is set for the moment the oldest delivery
falls due, so a test of it waits no longer than it has to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rabbitish.engine.clock import TimerHandle
from rabbitish.engine.errors import precondition_failed

if TYPE_CHECKING:
    from rabbitish.protocol.channel import Channel


def timed_out_text(channel_id: int, timeout_ms: int) -> str:
    return (
        f"delivery acknowledgement on channel {channel_id} timed out. Timeout value used: "
        f"{timeout_ms} ms. This timeout value can be configured, see consumers doc guide to "
        "learn more"
    )


class AckTimeout:
    __slots__ = ("_timer", "channel", "timeout_ms")

    def __init__(self, channel: Channel, timeout_ms: int) -> None:
        self.channel = channel
        self.timeout_ms = timeout_ms
        self._timer: TimerHandle | None = None

    def watch(self) -> None:
        """A delivery now waits for its ack: make sure a check is due."""
        if self._timer is None and self.timeout_ms:
            self._arm()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        ch = self.channel
        oldest = next(iter(ch.unacked.values()), None)
        if oldest is None or ch.closing or ch.closed:
            self._timer = None
            return
        scheduler = ch.conn.node.scheduler
        due = oldest.delivered_at + self.timeout_ms / 1000
        self._timer = scheduler.call_later(max(0.0, due - scheduler.now()), self._check)

    def _check(self) -> None:
        self._timer = None
        ch = self.channel
        oldest = next(iter(ch.unacked.values()), None)
        if oldest is None or ch.closing or ch.closed:
            return
        scheduler = ch.conn.node.scheduler
        if scheduler.now() - oldest.delivered_at >= self.timeout_ms / 1000:
            error = precondition_failed(timed_out_text(ch.id, self.timeout_ms))
            ch.close_with_error(error.at(0, 0))
            return
        self._arm()
