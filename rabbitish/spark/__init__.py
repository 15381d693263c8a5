"""Spark reads queues and writes exchanges (batch and streaming) through the `amqp` PySpark
data source (`pip install 'rabbitish[spark]'`; docs/spark.md):

    spark.dataSource.register(AmqpDataSource)
    spark.read.format("amqp").option("queue", "orders").load()
"""

from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import SCHEMA
from rabbitish.spark.source import AmqpDataSource

__all__ = ["SCHEMA", "AmqpDataSource", "AmqpOptions"]
