"""Deliveries and their settlement, owned by the engine so every front end (0-9-1 channels, 1.0
links, the management API's get) settles the same way. A front end maps its own ids (delivery
tags, 1.0 delivery ids) to `Delivery` records and hands them back with one `Outcome`; the queue
keeps the set of its outstanding deliveries, so a record settled twice, or one the queue no longer
holds, changes nothing."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rabbitish.engine.consumer import Consumer
    from rabbitish.engine.message import QueueEntry
    from rabbitish.engine.queue import Queue


class Outcome(enum.Enum):
    """How a delivery ends. Names follow AMQP 1.0's outcomes; 0-9-1 uses the first three."""

    ACK = "ack"  # done: the message leaves the queue
    REQUEUE = "requeue"  # back at its original place, counted as delivered (redelivered)
    DISCARD = "discard"  # rejected without requeue: dead-lettered ("rejected") or dropped
    RELEASED = "released"  # back at its original place as if never delivered
    MODIFIED = "modified"  # delivery-failed and/or undeliverable-here (see `settle`)


class Delivery:
    """One message handed out of one queue. `consumer` is None for a get; `tag` is the front
    end's own id for it (0-9-1 delivery tag, 1.0 delivery id)."""

    __slots__ = ("consumer", "delivered_at", "entry", "queue", "settled", "tag")

    def __init__(self, queue: Queue, entry: QueueEntry, consumer: Consumer | None) -> None:
        self.queue = queue
        self.entry = entry
        self.consumer = consumer
        self.settled = False
        self.tag = 0
        self.delivered_at = queue.scheduler.now()  # for the acknowledgement timeout

    @property
    def delivery_count(self) -> int:
        """Deliveries of this message so far, this one included."""
        return self.entry.delivery_count

    @property
    def redelivered(self) -> bool:
        return self.entry.delivery_count > 1

    def __repr__(self) -> str:
        return f"<Delivery {self.entry.seq} of {self.queue!r}>"


class BrowsedCopy(Delivery):
    """A copy handed to a browser (`Queue.browse`): settled from the start, the message stays
    where it is and its entry's count is unchanged, so the counts read as if this were one
    more delivery."""

    __slots__ = ()

    @property
    def delivery_count(self) -> int:
        return self.entry.delivery_count + 1

    @property
    def redelivered(self) -> bool:
        return self.entry.delivery_count > 0


def settle(
    deliveries: Iterable[Delivery],
    outcome: Outcome,
    *,
    delivery_failed: bool = True,
    undeliverable_here: bool = False,
) -> list[Queue]:
    """Settle deliveries, grouped per queue so requeued messages keep their order. Each frees
    its consumer's credit. MODIFIED with `undeliverable_here` discards (as RabbitMQ's 1.0 plugin
    treats it); otherwise MODIFIED requeues, counting the delivery only if `delivery_failed`.
    Its queue hears that the consumer's credit came back (`Queue.credit_returned`) before any
    message of the settlement is requeued, so a requeued message may go back to it. Returns
    the queues touched, in order, for front ends that resume dispatch."""
    groups: dict[int, tuple[Queue, list[QueueEntry]]] = {}
    for delivery in deliveries:
        if delivery.settled:
            continue
        delivery.settled = True
        consumer = delivery.consumer
        if consumer is not None:
            consumer.release_credit(1)
            if consumer.blocked:  # its queue found it full: it may take again
                consumer.queue.credit_returned(consumer)
        queue = delivery.queue
        if not queue.forget(delivery):
            continue  # the queue went away; nothing left to settle there
        group = groups.get(id(queue))
        if group is None:
            groups[id(queue)] = group = (queue, [])
        group[1].append(delivery.entry)
    if outcome is Outcome.MODIFIED:
        if undeliverable_here:
            outcome = Outcome.DISCARD
        elif not delivery_failed:
            outcome = Outcome.RELEASED
        else:
            outcome = Outcome.REQUEUE
    for queue, entries in groups.values():
        if outcome is Outcome.ACK:
            queue.ack(entries)
        elif outcome is Outcome.REQUEUE:
            queue.requeue(entries)
        elif outcome is Outcome.RELEASED:
            for entry in entries:
                entry.delivery_count -= 1
            queue.requeue(entries)
        else:
            queue.discard(entries)
    return [queue for queue, _ in groups.values()]
