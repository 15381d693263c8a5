"""Publisher confirms of one channel in confirm mode. Each publish gets the next sequence number;
the outcomes are coalesced: acks wait for `flush` (the connection calls it after each read
batch) and go out as one basic.ack (multiple when it covers several), a nack goes at once with
the acks before it. A confirm promises durability, so every ack or nack is sent only once what
the journal holds so far is on disk; if the store cannot write it, a nack goes instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rabbitish.protocol import outgoing

if TYPE_CHECKING:
    from rabbitish.engine.vhost import VirtualHost


class PublisherConfirms:
    __slots__ = ("_channel_id", "_send", "_sent", "_stats", "_upto", "_vhost", "published")

    def __init__(
        self,
        channel_id: int,
        vhost: VirtualHost,
        send: Callable[[bytes], None],
        stats: dict[str, int],
    ) -> None:
        """`send` writes a frame unless the channel is closing or closed; `stats` is the
        channel's, whose "confirm" count this keeps."""
        self.published = 0  # publishes in confirm mode so far: the last sequence number given
        self._upto = 0  # publishes decided so far (acked, up to a nack that was sent)
        self._sent = 0  # publishes whose confirm was sent (waiting for the sync, maybe)
        self._channel_id = channel_id
        self._vhost = vhost
        self._send = send
        self._stats = stats

    @property
    def unconfirmed(self) -> int:
        """Publishes whose confirm has not gone out yet (management's channel view)."""
        return self.published - self._sent

    def outcome(self, seq: int, ok: bool) -> None:
        """Record whether publish `seq` was accepted; acks are coalesced and sent per read
        batch."""
        if ok:
            self._upto = seq
            return
        self._upto = seq - 1
        self.flush()
        self._stats["confirm"] += 1
        nack = outgoing.nack(self._channel_id, seq, False)
        self._after_sync(nack, nack)
        self._sent = self._upto = seq

    def flush(self) -> None:
        """Send one ack for every publish accepted since the last flush."""
        upto, sent = self._upto, self._sent
        if upto > sent:
            self._stats["confirm"] += upto - sent
            multiple = upto - sent > 1
            channel = self._channel_id
            self._after_sync(
                outgoing.ack(channel, upto, multiple), outgoing.nack(channel, upto, multiple)
            )
            self._sent = upto

    def _after_sync(self, frame: bytes, failed: bytes) -> None:
        """Send `frame` once everything journaled so far is on disk. In :memory: mode, and when
        nothing durable is pending, at once. If the store cannot write it, send `failed` (a
        nack) instead."""
        journal = self._vhost.journal
        send = self._send
        journal.when_synced(
            journal.position,
            lambda: send(frame),
            lambda _reason: send(failed),
        )
