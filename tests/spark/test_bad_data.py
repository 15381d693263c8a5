"""What real queues hold: bodies the user's from_json schema cannot decode (they land in
`_corrupt_record`, Spark's PERMISSIVE convention, and the stream goes on), headers of every AMQP
field type (each survives in the `headers` column in the string form docs/spark.md lists),
empty bodies and 10 MiB ones, read and written."""

from __future__ import annotations

import decimal
import json

import pika
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")

from pyspark.sql import functions as F

from rabbitish.engine.message import FieldValue
from rabbitish.protocol.properties import encode_properties, with_headers
from tests.support.clients import bodies, pika_channel

pytestmark = pytest.mark.spark

BIG = 10 * 1024 * 1024
# Every AMQP 0-9-1 field type (RabbitMQ's tags), and the string the headers column shows.
FIELDS: dict[str, tuple[FieldValue, str | None]] = {
    "t-bool": (FieldValue("bool", True), "true"),
    "b-byte": (FieldValue("byte", -3), "-3"),
    "B-unsignedbyte": (FieldValue("unsignedbyte", 200), "200"),
    "s-short": (FieldValue("short", -300), "-300"),
    "u-unsignedshort": (FieldValue("unsignedshort", 60000), "60000"),
    "I-signedint": (FieldValue("signedint", -70000), "-70000"),
    "i-unsignedint": (FieldValue("unsignedint", 4_000_000_000), "4000000000"),
    "l-long": (FieldValue("long", -(2**40)), "-1099511627776"),
    "f-float": (FieldValue("float", 1.5), "1.5"),
    "d-double": (FieldValue("double", 0.1), "0.1"),
    "D-decimal": (FieldValue("decimal", decimal.Decimal("12.34")), "12.34"),
    "T-timestamp": (FieldValue("timestamp", 1_700_000_000), "2023-11-14T22:13:20+00:00"),
    "V-void": (FieldValue("void", None), None),
    "S-longstr": (FieldValue("longstr", "grüße".encode()), "grüße"),
    "S-longstr-not-utf8": (FieldValue("longstr", b"\xff\xfe"), "base64://4="),
    "x-binary": (FieldValue("binary", b"\x00\x01"), "\x00\x01"),
    "A-array": (
        FieldValue("array", [FieldValue("long", 1), FieldValue("longstr", b"a")]),
        '[1, "a"]',
    ),
    "F-table": (
        FieldValue("table", {"k": FieldValue("bool", False), "n": FieldValue("double", 2.5)}),
        '{"k": false, "n": 2.5}',
    ),
}


class RawProperties(pika.BasicProperties):
    """Properties sent as rabbitish's encoder wrote them: pika cannot write every field type
    (a byte, a float, an unsigned int), and a test of the reader must."""

    def __init__(self, raw: bytes) -> None:
        super().__init__()
        self.raw = raw

    def encode(self) -> list[bytes]:
        return [self.raw]


def test_headers_of_every_field_type_survive(spark, broker_url, uid):
    headers = {name: value for name, (value, _) in FIELDS.items()}
    raw = with_headers(encode_properties(delivery_mode=2), headers)
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
        ch.basic_publish("", uid, b"typed", RawProperties(raw))
    read = spark.read.format("amqp").option("url", broker_url).option("queue", uid)
    [row] = read.load().collect()
    assert row.headers == {name: shown for name, (_, shown) in FIELDS.items()}


def test_undecodable_bodies_go_to_corrupt_record_and_the_stream_goes_on(
    spark, broker_url, uid, tmp_path
):
    """A stream read as Spark users write one (checkpointLocation on writeStream only): good
    JSON, bad JSON, bytes that are not UTF-8, an empty body and a 10 MiB body all come out
    once, the undecodable ones in _corrupt_record, and every message is acked."""
    big = json.dumps({"id": 4, "name": "x" * (BIG - 30)}).encode()
    sent = [b'{"id": 1, "name": "one"}', b"{not json", b"\xff\xfe\x00", b"", big]
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
        for body in sent:
            ch.basic_publish("", uid, body)
    schema = "id INT, name STRING, _corrupt_record STRING"
    parsed = (
        spark.readStream.format("amqp")
        .option("url", broker_url)
        .option("queue", uid)
        .load()
        .select(
            "body",
            F.from_json(
                F.col("body").cast("string"),
                schema,
                {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"},
            ).alias("j"),
        )
        .select("body", "j.id", "j._corrupt_record")
    )
    name = f"bad{uid}".replace("-", "_")
    query = (
        parsed.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    rows = {bytes(r.body): r for r in spark.table(name).collect()}
    assert sorted(rows) == sorted(sent)
    assert (rows[sent[0]].id, rows[sent[0]]._corrupt_record) == (1, None)
    assert (rows[sent[1]].id, rows[sent[1]]._corrupt_record) == (None, "{not json")
    assert rows[sent[2]].id is None and rows[sent[2]]._corrupt_record is not None
    assert rows[sent[3]].id is None  # empty: no record, and no failure either
    assert (rows[big].id, len(rows[big].body)) == (4, len(big))
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == []


def test_empty_and_ten_mib_bodies_are_written(spark, broker_url, uid):
    big = bytes(range(256)) * (BIG // 256)
    df = spark.createDataFrame([(big,), (b"",)], "body BINARY").coalesce(1)
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, durable=True)
    df.write.format("amqp").option("url", broker_url).option("routingKey", uid).mode(
        "append"
    ).save()
    with pika_channel(broker_url) as ch:
        assert sorted(bodies(ch, uid), key=len) == [b"", big]
