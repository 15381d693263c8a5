"""The keep-alive rules of both protocols, sans-IO: when to send a heartbeat (0-9-1's heartbeat
frame, 1.0's empty frame) and when a silent peer has timed out. The I/O layer runs the timers
(server/socket_protocol.py) and asks these at each tick, passing its running counts of socket
writes and reads; a count that did not move since the previous tick means silence that way.

0-9-1 follows RabbitMQ: a heartbeat every heartbeat/2 seconds in which nothing else was sent
(the first tick always sends), and a peer silent for two checks in a row (heartbeat seconds
apart) is dropped. 1.0 follows its spec's idle time-outs: an empty frame whenever we were
silent for half the peer's idle-time-out, and a peer silent for two checks in a row (our
idle-time-out apart) is closed: the spec has a peer announce half its real threshold. Under a
resource alarm reading stops, so a blocked peer never counts as silent."""

from __future__ import annotations


class SendCheck:
    """At each send tick: is a heartbeat due, because nothing was written since the last tick?"""

    def __init__(self, first_tick_sends: bool) -> None:
        self._first_tick_sends = first_tick_sends
        self._writes_at_tick: int | None = None  # no tick yet

    def due(self, writes: int) -> bool:
        if self._writes_at_tick is None:
            return self._first_tick_sends
        return writes == self._writes_at_tick

    def ticked(self, writes: int) -> None:
        """The tick is over (a heartbeat it sent counted): the next one compares with this."""
        self._writes_at_tick = writes


class IdleCheck:
    """At each receive check: has the peer now been silent for `silent_checks` checks in a
    row? The first check always counts as activity."""

    def __init__(self, silent_checks: int) -> None:
        self.silent_checks = silent_checks
        self._reads_at_check: int | None = None
        self._silent = 0

    def expired(self, reads: int, blocked: bool) -> bool:
        if reads != self._reads_at_check or blocked:
            self._silent = 0
        else:
            self._silent += 1
            if self._silent >= self.silent_checks:
                return True
        self._reads_at_check = reads
        return False
