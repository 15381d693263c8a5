"""Batch writes: one AMQP tx per task, and on rabbitish job-atomic writes through half
transactions, so neither a retried task nor a failed job leaves duplicates or partial output
behind where the broker can help it. Tasks take Spark's Arrow record batches as they come and
publish at frame level (amqp_client), on a tx channel their Python worker keeps between tasks."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rabbitish.spark.amqp_client import Channel
from rabbitish.spark.broker import decide, reused_session, session
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import batch_messages, check_write_schema
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY

# Attempts past the highest one reported whose IDs the driver also rolls back: an attempt that
# committed its half tx but failed before reporting (or lost to a speculative copy) leaves an
# ID that no commit message names, and only its deterministic name lets the driver clear it.
SWEEP_MARGIN = 4


@dataclass(frozen=True)
class TaskCommit(WriterCommitMessage):
    """What one successful task attempt published: `txn_id` is its half ID, None for a plain
    per-task tx (the rows are already visible)."""

    partition: int
    attempt: int
    rows: int
    txn_id: str | None


class AmqpWriter(DataSourceArrowWriter):
    """Created on the driver: it picks the job's ID and whether writes are job-atomic (the
    broker announces half transactions), and every task follows that choice."""

    def __init__(self, options: AmqpOptions, schema: StructType) -> None:
        check_write_schema(schema)
        self.options = options
        self.job = uuid.uuid4().hex
        with session(options.url, tx=False) as amqp:
            self.half = amqp.half

    def txn_id(self, partition: int, attempt: int) -> str:
        return f"spark-{self.job}-{partition}-{attempt}"

    def write(self, iterator: Iterator[Any]) -> TaskCommit:
        """Publish every row of the task's record batches on a tx channel and commit once at
        the end; any failure closes the connection before tx.commit, which discards the lot.
        In half mode each row also carries this attempt's ID, so even committed rows stay
        invisible until the driver commits the ID."""
        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        attempt = context.attemptNumber() if context else 0
        txn_id = self.txn_id(partition, attempt) if self.half else None
        with reused_session(self.options.url) as amqp:
            if txn_id is not None and not amqp.half:
                raise RuntimeError(f"the broker no longer announces {HALF_TRANSACTIONS_CAPABILITY}")
            rows = publish_batches(amqp.channel, iterator, self.options, txn_id)
            amqp.channel.tx_commit()
        return TaskCommit(partition, attempt, rows, txn_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Half mode: commit the winning attempts' IDs and roll back every other attempt's,
        all in one tx, so the job's rows appear together. Plain mode: nothing left to do."""
        if not self.half:
            return
        ordered = sorted(_commits(messages), key=lambda m: m.partition)
        winners = [m.txn_id for m in ordered if m.txn_id]
        self._decide(winners, self._other_ids(messages, set(winners)))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Half mode: roll back every attempt's ID, so a failed job leaves nothing visible.
        Plain mode: tasks that committed stay published (documented partial output)."""
        if self.half:
            self._decide([], self._other_ids(messages, set()))

    def _other_ids(self, messages: list[WriterCommitMessage | None], keep: set[str]) -> list[str]:
        highest = max((m.attempt for m in _commits(messages)), default=0)
        return sweep(self.txn_id, len(messages), highest, keep)

    def _decide(self, commit: list[str], rollback: list[str]) -> None:
        with session(self.options.url, tx=True) as amqp:
            decide(amqp.channel, commit, "commit")
            decide(amqp.channel, rollback, "rollback")
            amqp.channel.tx_commit()


def _commits(messages: list[WriterCommitMessage | None]) -> list[TaskCommit]:
    return [m for m in messages if isinstance(m, TaskCommit)]


def publish_batches(
    channel: Channel, batches: Iterator[Any], options: AmqpOptions, txn_id: str | None
) -> int:
    """Publish every row of the record batches (as half messages of `txn_id` when given);
    returns the count. The caller commits the channel's tx. Each record batch's frames are
    written out when it is done (and every 1 MiB): rows leave as Spark hands them over, not
    all at the task's end."""
    publish = channel.publish
    count = 0
    for batch in batches:
        for exchange, routing_key, properties, body in batch_messages(
            batch, options.exchange, options.routing_key, txn_id
        ):
            publish(exchange, routing_key, properties, body)
        count += batch.num_rows
        channel.flush()
    channel.flush()
    return count


def sweep(
    txn_id: Callable[[int, int], str], partitions: int, highest: int, keep: set[str]
) -> list[str]:
    """Every attempt ID a job may have used, up to SWEEP_MARGIN past the highest reported
    attempt, except those in `keep`."""
    return [
        name
        for partition in range(partitions)
        for attempt in range(highest + 1 + SWEEP_MARGIN)
        if (name := txn_id(partition, attempt)) not in keep
    ]
