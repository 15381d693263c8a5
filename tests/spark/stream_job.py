"""A streaming query from one queue to another through the amqp source and sink, run as its
own driver process so that a test can kill it (-9) in the middle of the stream:

    python -m tests.spark.stream_job URL SOURCE_QUEUE TARGET_QUEUE CHECKPOINT \
        [SOURCE_CHECKPOINT [SINK_URL]]

Trigger.AvailableNow in batches of at most 25 messages, on local[3]. The source takes the
checkpoint too only when SOURCE_CHECKPOINT is `yes` (the write-ahead log a broker without
prepared transactions needs); otherwise the query is written as Spark users write one, with
checkpointLocation on writeStream only. SINK_URL (default URL) is the broker written to."""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession

from tests.support.spark import local_session


def main(
    url: str,
    source: str,
    target: str,
    checkpoint: str,
    source_checkpoint: str = "no",
    sink_url: str = "",
) -> int:
    spark = local_session("local[3]", "rabbitish-stream-job")
    query = (
        streamed(spark, url, source, checkpoint if source_checkpoint == "yes" else None)
        .writeStream.format("amqp")
        .option("url", sink_url or url)
        .option("routingKey", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()
    return 0


def streamed(spark: SparkSession, url: str, queue: str, checkpoint: str | None) -> DataFrame:
    """The source side, shared with the test's restart: bodies only, 25 per batch; the
    source's own checkpointLocation only when given."""
    reader = spark.readStream.format("amqp").option("url", url).option("queue", queue)
    if checkpoint is not None:
        reader = reader.option("checkpointLocation", checkpoint)
    return reader.option("maxRows", 25).load().select("body")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
