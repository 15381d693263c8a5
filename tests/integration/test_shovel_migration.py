"""docs/operations.md "Moving to a RabbitMQ cluster", small: rabbitish's definitions exported
and imported into a real RabbitMQ with rabbitmqadmin, then its queued messages drained by
RabbitMQ's shovel (a 0-9-1 source and an AMQP 1.0 source, ack-mode on-confirm), which connects
to rabbitish as an ordinary client. Every message arrives once, in order, and each shovel
deletes itself."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pika
import pytest

from rabbitish.testing import running_broker
from tests.support.management import Api, _FastStatsRabbit
from tests.support.rabbitmqadmin import Rabbitmqadmin, rabbitmqadmin_available
from tests.support.real_rabbitmq import RealRabbit, rabbitmq_available, real_rabbitmq
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.rabbitmq,
    pytest.mark.skipif(not rabbitmq_available(), reason="rabbitmq-server is not installed"),
    pytest.mark.skipif(
        not rabbitmqadmin_available(), reason="/usr/bin/rabbitmqadmin is not installed"
    ),
]

PER_QUEUE = 100
PROPERTIES = pika.BasicProperties(
    delivery_mode=2, content_type="application/json", headers={"source": "rabbitish"}
)


class _ShovelRabbit(_FastStatsRabbit):
    EXTRA_PLUGINS = ("rabbitmq_shovel", "rabbitmq_shovel_management")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RealRabbit]:
    with real_rabbitmq(enable_management=True, node_class=_ShovelRabbit) as node:
        yield node


def _shovel(source: dict[str, object], queue: str) -> str:
    return json.dumps(
        {
            **source,
            "dest-protocol": "amqp091",
            "dest-uri": "amqp://",
            "dest-queue": queue,
            "ack-mode": "on-confirm",
        }
    )


def _bodies(url: str, queue: str) -> list[tuple[int, pika.BasicProperties]]:
    """Every message of `queue`, read without taking it (the consumer never acks)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = conn.channel()
        found = []
        for method, properties, body in channel.consume(queue, inactivity_timeout=1):
            if method is None:
                break
            found.append((json.loads(body)["n"], properties))
        return found
    finally:
        conn.close()


def test_definitions_and_messages_move_to_rabbitmq(cluster: RealRabbit, tmp_path) -> None:
    with running_broker(management=True) as broker:
        assert broker.management_port is not None and cluster.management_port is not None
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = conn.channel()
        channel.confirm_delivery()
        channel.exchange_declare("shop", "topic", durable=True)
        for queue in ("orders", "events"):
            channel.queue_declare(queue, durable=True)
            channel.queue_bind(queue, "shop", f"{queue}.#")
            for n in range(PER_QUEUE):
                body = json.dumps({"n": n}).encode()
                channel.basic_publish("shop", f"{queue}.new", body, PROPERTIES)
        conn.close()

        source = Rabbitmqadmin(broker.management_port, tmp_path)
        target = Rabbitmqadmin(cluster.management_port, tmp_path)
        try:
            assert source.run("export", "defs.json").code == 0
            assert target.run("import", "defs.json").code == 0
            src_uri = f"amqp://guest:guest@127.0.0.1:{broker.port}"
            amqp091 = {
                "src-protocol": "amqp091",
                "src-uri": src_uri,
                "src-queue": "orders",
                "src-delete-after": "queue-length",
            }
            amqp10 = {
                "src-protocol": "amqp10",
                "src-uri": src_uri,
                "src-address": "/queues/events",
                "src-delete-after": PER_QUEUE,
            }
            for name, settings, queue in (("orders", amqp091, "orders"), ("ev", amqp10, "events")):
                declared = target.run(
                    "declare",
                    "parameter",
                    "component=shovel",
                    f"name=drain-{name}",
                    f"value={_shovel(settings, queue)}",
                )
                assert declared.text == "parameter declared\n[exit 0]"
        finally:
            source.close()
            target.close()

        rabbitmq = Api(cluster.url, f"http://127.0.0.1:{cluster.management_port}", "rabbitmq")
        wait_until(
            lambda: (
                rabbitmq.ok("GET", "/api/parameters/shovel") == []
                and rabbitmq.ok("GET", "/api/shovels") == []
            ),
            timeout=30,
        )
        rabbitish = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        assert [(q["name"], q["messages"]) for q in rabbitish.ok("GET", "/api/queues")] == [
            ("events", 0),
            ("orders", 0),
        ]
        bindings = rabbitmq.ok("GET", "/api/exchanges/%2F/shop/bindings/source")
        assert sorted(b["destination"] for b in bindings) == ["events", "orders"]

    orders, events = _bodies(cluster.url, "orders"), _bodies(cluster.url, "events")
    assert [n for n, _ in orders] == list(range(PER_QUEUE))
    assert [n for n, _ in events] == list(range(PER_QUEUE))
    kept = {(p.delivery_mode, p.content_type, json.dumps(p.headers)) for _, p in orders}
    assert kept == {(2, "application/json", '{"source": "rabbitish"}')}
