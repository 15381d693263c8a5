"""The `amqp` data source: the entry point Spark instantiates on the driver and in tasks."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.reader import AmqpReader
from rabbitish.spark.schema import SCHEMA
from rabbitish.spark.stream_reader import AmqpStreamReader
from rabbitish.spark.stream_writer import AmqpStreamWriter
from rabbitish.spark.writer import AmqpWriter


class AmqpDataSource(DataSource):
    """`spark.dataSource.register(AmqpDataSource)`, then `format("amqp")` for reads, writes,
    streaming reads and streaming writes (options in docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return "amqp"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return AmqpReader(AmqpOptions.parse(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return AmqpWriter(AmqpOptions.parse(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return AmqpStreamReader(AmqpOptions.parse(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return AmqpStreamWriter(AmqpOptions.parse(self.options), schema)
