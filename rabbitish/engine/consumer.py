"""A consumer as queues see it, in words every front end can speak: `credit` (how many more
deliveries it can take now), `settled_on_delivery` (0-9-1 no-ack, 1.0 settle mode "settled"),
a priority and exclusivity. The engine counts what each consumer holds unsettled; a front end
adds its own limits (0-9-1 prefetch and flow, 1.0 link credit) by overriding `credit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rabbitish.engine.delivery import Delivery
    from rabbitish.engine.message import QueueEntry
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.sessions import ConsumerSession

UNLIMITED = 1 << 62


class Selection:
    """Which messages a consumer takes (a selector, a filter): the queue hands it the first
    ready message it `accepts` and leaves the others where they are, in order, for other
    consumers. `seen` holds, per ready list, the sequence number up to which every fresh
    message was turned down, so each message is judged once, not at every dispatch."""

    __slots__ = ("accepts", "seen")

    def __init__(self, accepts: Callable[[QueueEntry], bool]) -> None:
        self.accepts = accepts
        self.seen: dict[object, int] = {}


class Consumer:
    __slots__ = (
        "arguments",
        "blocked",
        "exclusive",
        "prefetch",
        "priority",
        "queue",
        "rank",
        "selection",
        "session",
        "settled_on_delivery",
        "tag",
        "unsettled",
    )

    def __init__(
        self,
        queue: Queue,
        tag: str,
        *,
        settled_on_delivery: bool = False,
        exclusive: bool = False,
        arguments: dict[str, Any] | None = None,
        session: ConsumerSession | None = None,
        prefetch: int = 0,
    ) -> None:
        self.queue = queue
        self.session = session
        self.tag = tag
        self.settled_on_delivery = settled_on_delivery
        self.exclusive = exclusive
        self.arguments = arguments or {}
        priority = self.arguments.get("x-priority", 0)
        self.priority = priority if isinstance(priority, int) else 0  # higher first
        self.unsettled = 0  # deliveries handed over and not settled yet
        self.prefetch = prefetch  # the consumer's own limit on unsettled deliveries (0: none)
        # Only the messages it accepts (None: every message, at no cost to dispatch).
        self.selection: Selection | None = None
        # The queue's bookkeeping (engine/queue.py): its place among the queue's consumers
        # (priority first, then arrival), and whether the queue found it without credit and
        # left it out of the round-robin until `Queue.credit_returned` names it.
        self.rank = 0
        self.blocked = False

    @property
    def credit(self) -> int:
        """How many more deliveries this consumer can take now (0: none)."""
        if self.settled_on_delivery or not self.prefetch:
            return UNLIMITED
        return self.prefetch - self.unsettled

    def delivered(self, delivery: Delivery) -> None:
        """Take one delivery. Called by the queue after it counted it against the consumer."""
        raise NotImplementedError

    def release_credit(self, count: int) -> None:
        """`count` deliveries of this consumer were settled."""
        self.unsettled -= count

    def cancelled_by_broker(self) -> None:
        """The queue went away (deleted, expired): tell the client if it can be told."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.tag!r} on {self.queue!r}>"
