"""Streaming writes: each micro-batch is one job-atomic write on rabbitish (half transactions,
as in batch writes) whose commit is idempotent by (query id, batch id), so a query restarted
from its checkpoint never publishes a batch twice; per-task tx on other brokers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pamqp import commands
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rabbitish.spark.amqp_client import Channel, encode_properties
from rabbitish.spark.broker import decide, reused_session
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import check_write_schema
from rabbitish.spark.writer import publish_batches, sweep
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY

# Durable queue per query holding one message, the last batch id committed through the sink.
# It lives on the broker, not under the checkpoint, so that recording a batch is part of the
# very tx that makes its rows visible: either both happened or neither.
MARKER_PREFIX = "rabbitish.spark.sink."
# Local properties Spark's micro-batch execution sets for the tasks of a batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass(frozen=True)
class BatchCommit(WriterCommitMessage):
    """What one successful task attempt of a micro-batch published; `txn_id` is None for a
    plain per-task tx (the rows are already visible)."""

    query: str
    batch: int
    partition: int
    attempt: int
    rows: int
    txn_id: str | None


def batch_txn_id(query: str, batch: int, partition: int, attempt: int) -> str:
    """Deterministic, so that a restarted query's driver can clear what a dead run left held
    under the same batch."""
    return f"spark-{query}-{batch}-{partition}-{attempt}"


def marker_queue(query: str) -> str:
    return MARKER_PREFIX + query


class AmqpStreamWriter(DataSourceStreamArrowWriter):
    """Created once per query run on the driver; decides, like the batch writer, whether
    batches are written through half transactions."""

    def __init__(self, options: AmqpOptions, schema: StructType) -> None:
        check_write_schema(schema)
        self.options = options
        self.query: str | None = None  # learnt from the first commit messages
        with reused_session(options.url) as amqp:
            self.half = amqp.half

    def write(self, iterator: Iterator[Any]) -> BatchCommit:
        """Publish the task's rows in one tx. Half mode: first roll back this attempt's ID, in
        a tx of its own, since a previous run of the query that died may have left rows held
        under the same deterministic ID."""
        context = TaskContext.get()
        if context is None or context.getLocalProperty(QUERY_ID_PROPERTY) is None:
            raise RuntimeError("the amqp stream writer runs in the tasks of a streaming query")
        query = str(context.getLocalProperty(QUERY_ID_PROPERTY))
        batch = int(str(context.getLocalProperty(BATCH_ID_PROPERTY)))
        partition, attempt = context.partitionId(), context.attemptNumber()
        txn_id = batch_txn_id(query, batch, partition, attempt) if self.half else None
        with reused_session(self.options.url) as amqp:
            if txn_id is not None:
                if not amqp.half:
                    raise RuntimeError(
                        f"the broker no longer announces {HALF_TRANSACTIONS_CAPABILITY}"
                    )
                decide(amqp.channel, [txn_id], "rollback")
                amqp.channel.tx_commit()
            rows = publish_batches(amqp.channel, iterator, self.options, txn_id)
            amqp.channel.tx_commit()
        return BatchCommit(query, batch, partition, attempt, rows, txn_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Half mode, in one tx: read the query's marker; unless it already records this batch,
        commit the winning attempts' IDs and record the batch; roll back every other attempt
        ID of the batch (all of them when the batch was already committed by an earlier run)."""
        commits = self._commits(messages)
        if not self.half or self.query is None:
            return
        winners = [m.txn_id for m in sorted(commits, key=lambda m: m.partition) if m.txn_id]
        with reused_session(self.options.url) as amqp:
            channel = amqp.channel
            queue = marker_queue(self.query)
            channel.queue_declare(queue, durable=True)
            marker = channel.basic_get(queue)
            done = marker is not None and int(marker[5]) >= batchId
            commit = [] if done else winners
            decide(channel, commit, "commit")
            decide(channel, self._other_ids(messages, batchId, set(commit)), "rollback")
            if not done:
                if marker is not None:
                    channel.basic_ack(marker[0])  # replaced in the same tx
                record(channel, queue, batchId)
            elif marker is not None:
                # Left as it was: back on its queue at this commit (the channel is kept).
                channel.basic_nack(marker[0], requeue=True)
            channel.tx_commit()

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Half mode: roll back every attempt ID of the batch; nothing of it becomes visible.
        Before any batch of this run reported, the query id is unknown here: what the failed
        attempts hold stays held until the restarted query reruns the batch (its tasks and
        its commit clear the same IDs) or `rabbitish tx rollback` clears it."""
        self._commits(messages)
        if self.half and self.query is not None:
            with reused_session(self.options.url) as amqp:
                decide(amqp.channel, self._other_ids(messages, batchId, set()), "rollback")
                amqp.channel.tx_commit()

    def _commits(self, messages: list[WriterCommitMessage | None]) -> list[BatchCommit]:
        commits = [m for m in messages if isinstance(m, BatchCommit)]
        if commits:
            self.query = commits[0].query
        return commits

    def _other_ids(
        self, messages: list[WriterCommitMessage | None], batch: int, keep: set[str]
    ) -> list[str]:
        query = self.query or ""
        highest = max((m.attempt for m in self._commits(messages)), default=0)
        return sweep(lambda p, a: batch_txn_id(query, batch, p, a), len(messages), highest, keep)


MARKER_PROPERTIES = encode_properties(
    commands.Basic.Properties(content_type="text/plain", delivery_mode=2)
)


def record(channel: Channel, queue: str, batch: int) -> None:
    """The marker message: the batch id as text, persistent on a durable queue."""
    channel.publish("", queue, MARKER_PROPERTIES, str(batch).encode())
