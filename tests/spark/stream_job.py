"""A streaming query from one queue to another through the amqp source and sink, run as its
own driver process so that a test can kill it (-9) in the middle of the stream:

    python -m tests.spark.stream_job URL SOURCE_QUEUE TARGET_QUEUE CHECKPOINT

Trigger.AvailableNow in batches of at most 25 messages, on local[3]."""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession

from tests.support.spark import local_session


def main(url: str, source: str, target: str, checkpoint: str) -> int:
    spark = local_session("local[3]", "rabbitish-stream-job")
    query = (
        streamed(spark, url, source, checkpoint)
        .writeStream.format("amqp")
        .option("url", url)
        .option("routingKey", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()
    return 0


def streamed(spark: SparkSession, url: str, queue: str, checkpoint: str) -> DataFrame:
    """The source side, shared with the test's restart: bodies only, 25 per batch."""
    return (
        spark.readStream.format("amqp")
        .option("url", url)
        .option("queue", queue)
        .option("maxRows", 25)
        .option("checkpointLocation", checkpoint)
        .load()
        .select("body")
    )


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
