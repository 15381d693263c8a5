"""One transaction model for every front end. Work is staged in arrival order: publishes with the
queues they were routed to when they arrived, and settlements (ack, requeue, discard) of deliveries
already taken out of the front end's unacked set. Commit applies publishes in order, then
settlements, with delivery to consumers held until the whole commit is applied, so no consumer on
any queue sees part of a commit. Rollback drops the publishes and hands the settlements back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.queue import Queue

ACK = "ack"
REQUEUE = "requeue"
DISCARD = "discard"


@dataclass(slots=True)
class StagedPublish:
    message: Message
    queues: list[Queue]
    mandatory: bool


@dataclass(slots=True)
class StagedSettlement:
    """Deliveries settled together; `tokens` are the front end's own records of them."""

    entries: list[tuple[Queue, QueueEntry]]
    outcome: str
    tokens: list[Any]


@dataclass
class CommitResult:
    returned: list[Message] = field(default_factory=list)  # mandatory publishes that hit no queue
    rejected: list[Message] = field(default_factory=list)  # refused by x-overflow reject-publish
    settled_tokens: list[Any] = field(default_factory=list)
    queues_touched: int = 0  # a commit that touched no queue completes at once


class Transaction:
    __slots__ = ("publishes", "settlements")

    def __init__(self) -> None:
        self.publishes: list[StagedPublish] = []
        self.settlements: list[StagedSettlement] = []

    @property
    def empty(self) -> bool:
        return not self.publishes and not self.settlements

    @property
    def staged_deliveries(self) -> int:
        return sum(len(s.entries) for s in self.settlements)

    def stage_publish(self, message: Message, queues: list[Queue], mandatory: bool) -> None:
        self.publishes.append(StagedPublish(message, queues, mandatory))

    def stage_settle(
        self, entries: list[tuple[Queue, QueueEntry]], outcome: str, tokens: list[Any]
    ) -> None:
        self.settlements.append(StagedSettlement(entries, outcome, tokens))

    def commit(self) -> CommitResult:
        """Apply everything; returns what the front end must report. The transaction is empty
        afterwards and can be used again (0-9-1 channels keep one open after tx.select)."""
        result = CommitResult()
        touched: dict[int, Queue] = {}
        publishes, settlements = self.publishes, self.settlements
        self.publishes, self.settlements = [], []

        def hold(queue: Queue) -> None:
            if id(queue) not in touched:
                touched[id(queue)] = queue
                queue.suspend_dispatch()

        try:
            for staged in publishes:
                if not staged.queues and staged.mandatory:
                    result.returned.append(staged.message)
                accepted = True
                for queue in staged.queues:
                    if queue.deleted:
                        continue  # deleted since the publish: not an error (RabbitMQ agrees)
                    hold(queue)
                    accepted = queue.enqueue(staged.message) and accepted
                if not accepted:
                    result.rejected.append(staged.message)
            for settlement in settlements:
                by_queue: dict[int, tuple[Queue, list[QueueEntry]]] = {}
                for queue, entry in settlement.entries:
                    hold(queue)
                    by_queue.setdefault(id(queue), (queue, []))[1].append(entry)
                for queue, entries in by_queue.values():
                    if settlement.outcome == ACK:
                        for entry in entries:
                            queue.ack(entry)
                    elif settlement.outcome == REQUEUE:
                        queue.requeue(entries)
                    else:
                        queue.discard(entries)
                result.settled_tokens.extend(settlement.tokens)
        finally:
            for queue in touched.values():
                queue.resume_dispatch()
        result.queues_touched = len(touched)
        return result

    def rollback(self) -> list[Any]:
        """Discard staged publishes; return the tokens of staged settlements so the front end
        can put those deliveries back into its unacked set (they are not requeued)."""
        tokens = [token for s in self.settlements for token in s.tokens]
        self.publishes, self.settlements = [], []
        return tokens
