"""Batch reads of one queue: browse (nothing consumed) or drain (consumed, acks committed in
one tx at the task's end). One partition: a queue is one ordered sequence, and a single reader
keeps that order in the DataFrame."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rabbitish.spark.broker import session
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import SCHEMA, AmqpSchemaError, DeliveryRows


class AmqpReader(DataSourceReader):
    """Reads up to maxMessages ready messages of the queue with basic.get, without auto-ack."""

    def __init__(self, options: AmqpOptions, schema: StructType) -> None:
        if schema != SCHEMA:
            raise AmqpSchemaError("the amqp source has a fixed schema (rabbitish.spark.SCHEMA)")
        self.options = options
        self.queue = options.require_queue()

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """browse: every message taken is requeued at the end with one basic.nack (multiple,
        requeue), which puts each back in its original position. drain: one basic.ack
        (multiple) inside a tx, committed after the last row; a task that dies first commits
        nothing, and closing its connection requeues what it took."""
        drain = self.options.mode == "drain"
        limit = self.options.max_messages
        rows = DeliveryRows()
        with session(self.options.url, tx=drain) as amqp:
            channel = amqp.channel
            last_tag = None
            taken = 0
            while limit is None or taken < limit:
                message = channel.basic_get(self.queue)
                if message is None:
                    break
                last_tag = message[0]
                taken += 1
                yield rows.row(message)
            if last_tag is None:
                return
            if drain:
                channel.basic_ack(last_tag, multiple=True)
                channel.tx_commit()
            else:
                channel.basic_nack(last_tag, multiple=True, requeue=True)
                channel.close()  # waits for close-ok: the requeue is done when the task ends
