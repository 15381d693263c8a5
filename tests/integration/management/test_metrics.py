"""`/metrics`: the Prometheus text format, read back with prometheus_client's own parser, with
the figures moving as clients work; and (against a real RabbitMQ 3.10 with its prometheus plugin)
every `rabbitmq_` metric rabbitish serves exists there with the same type and labels."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import Iterator

import pika
import pytest

from rabbitish.testing import running_broker
from tests.support.ports import ReservedPort
from tests.support.real_rabbitmq import RealRabbit, rabbitmq_available, real_rabbitmq
from tests.support.waiting import wait_until

parser = pytest.importorskip("prometheus_client.parser")


def scrape(base: str, path: str = "/metrics") -> dict[str, tuple[str, dict[tuple, float]]]:
    """sample name -> (family type, {sorted label items: value}), parsed by prometheus_client."""
    with urllib.request.urlopen(base + path, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    found: dict[str, tuple[str, dict[tuple, float]]] = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue  # prometheus_client's own counter companion; none is served
            _, values = found.setdefault(sample.name, (family.type, {}))
            values[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def value(metrics: dict, name: str, **labels: str) -> float:
    return metrics[name][1][tuple(sorted(labels.items()))]


def figures(metrics: dict, names: dict[str, float]) -> dict[str, float]:
    return {name: value(metrics, name) for name in names}


def scrape_when(base: str, name: str, wanted: float) -> dict:
    """The metrics once `name` (unlabelled) reads `wanted`."""

    def check() -> dict | None:
        metrics = scrape(base)
        return metrics if value(metrics, name) == wanted else None

    return wait_until(check)


EXPECTED_WHILE_OPEN = {
    "rabbitmq_queue_messages_unacked": 3,
    "rabbitmq_queue_messages": 3,
    "rabbitmq_queues": 2,
    "rabbitmq_connections": 1,
    "rabbitmq_channels": 1,
    "rabbitmq_consumers": 1,
    "rabbitmq_global_messages_received_total": 4,  # the unroutable one too
    "rabbitmq_global_messages_delivered_total": 3,
    "rabbitmq_queue_messages_published_total": 3,
}
EXPECTED_AFTER = {
    # Totals survive the queue's deletion: counters never go down.
    "rabbitmq_global_messages_acknowledged_total": 3,
    "rabbitmq_global_messages_delivered_total": 3,
    "rabbitmq_global_messages_received_total": 5,
    "rabbitmq_queues": 0,
    "rabbitmq_queue_messages": 0,
    # tx.commit, tx.rollback, then the channel closing with its next transaction open.
    "rabbitish_transactions_committed_total": 1,
    "rabbitish_transactions_rolled_back_total": 2,
    "rabbitish_transactions_open": 0,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, str, str]]:
    """A broker of its own (counters start at zero): AMQP URL, management and metrics bases."""
    with (
        ReservedPort() as management,
        ReservedPort() as prometheus,
        running_broker(management_port=management.port, prometheus_port=prometheus.port) as broker,
    ):
        yield (
            broker.url,
            f"http://127.0.0.1:{management.port}",
            f"http://127.0.0.1:{prometheus.port}",
        )


def test_served_on_both_ports_without_login(broker) -> None:
    _, management, prometheus = broker
    for base in (management, prometheus):
        metrics = scrape(base)
        assert metrics["rabbitmq_queues"][0] == "gauge"
        assert metrics["rabbitmq_global_messages_received_total"][0] == "counter"
        assert (
            value(
                metrics,
                "rabbitmq_identity_info",
                rabbitmq_node="rabbitish@localhost",
                rabbitmq_cluster="rabbitish@localhost",
            )
            == 1
        )


def test_figures_follow_the_clients(broker) -> None:
    url, base, _ = broker
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        ch.queue_declare("metrics-q")
        for body in (b"a", b"bb", b"ccc"):
            ch.basic_publish("", "metrics-q", body)
        ch.basic_publish("", "nowhere", b"dropped")
        for _ in range(3):
            method, _, _ = ch.basic_get("metrics-q", auto_ack=False)
            assert method is not None
        ch.queue_declare("metrics-idle")
        ch.basic_consume("metrics-idle", lambda *a: None, auto_ack=False, consumer_tag="c1")

        metrics = scrape_when(base, "rabbitmq_queue_messages_ready", 0)
        assert figures(metrics, EXPECTED_WHILE_OPEN) == EXPECTED_WHILE_OPEN

        per_object = scrape(base, "/metrics/per-object")
        labels = {"vhost": "/", "queue": "metrics-q"}
        assert value(per_object, "rabbitmq_queue_messages_unacked", **labels) == 3
        assert value(per_object, "rabbitmq_queue_consumers", **labels) == 0
        assert value(per_object, "rabbitmq_queue_consumers", vhost="/", queue="metrics-idle") == 1
        assert value(per_object, "rabbitmq_queue_messages_ready_bytes", **labels) == 0

        ch.basic_cancel("c1")
        ch.tx_select()
        ch.basic_ack(0, multiple=True)
        ch.tx_commit()
        ch.basic_publish("", "metrics-q", b"undone")
        ch.tx_rollback()
        ch.queue_delete("metrics-q")
        ch.queue_delete("metrics-idle")
    finally:
        conn.close()

    metrics = scrape_when(base, "rabbitmq_connections", 0)
    assert figures(metrics, EXPECTED_AFTER) == EXPECTED_AFTER
    assert metrics["rabbitish_transactions_committed_total"][0] == "counter"


# ---------------------------------------------------------------------- against RabbitMQ
class _PrometheusRabbit(RealRabbit):
    """A RabbitMQ with the rabbitmq_prometheus plugin on a reserved port."""

    prometheus_port = 0

    def _write_config(self) -> None:
        super()._write_config()
        with (self.data_dir / "rabbitmq.conf").open("a") as conf:
            conf.write(f"prometheus.tcp.port = {self.prometheus_port}\n")
            conf.write("prometheus.tcp.ip = 127.0.0.1\n")
        (self.data_dir / "enabled_plugins").write_text("[rabbitmq_prometheus].\n")


@contextlib.contextmanager
def rabbitmq_prometheus() -> Iterator[str]:
    with ReservedPort() as port:
        node_class = type("Node", (_PrometheusRabbit,), {"prometheus_port": port.port})
        with real_rabbitmq(node_class=node_class) as node:
            conn = pika.BlockingConnection(pika.URLParameters(node.url))
            try:
                conn.channel().queue_declare("metrics-q")
                base = f"http://127.0.0.1:{port.port}"
                wait_until(
                    lambda: scrape(base, "/metrics/per-object").get("rabbitmq_queue_messages_ready")
                )
                yield base
            finally:
                conn.close()


@pytest.mark.rabbitmq
def test_names_types_and_labels_are_rabbitmqs(broker) -> None:
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    url, base, _ = broker
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        conn.channel().queue_declare("metrics-q")
        ours = {path: scrape(base, path) for path in ("/metrics", "/metrics/per-object")}
    finally:
        conn.close()
    with rabbitmq_prometheus() as rabbitmq_base:
        theirs = {path: scrape(rabbitmq_base, path) for path in ours}
    for path, metrics in ours.items():
        for name, (kind, samples) in metrics.items():
            if name.startswith("rabbitish_"):
                continue
            assert name in theirs[path], f"{path}: {name} is not a RabbitMQ metric"
            their_kind, their_samples = theirs[path][name]
            assert kind == their_kind, (path, name)
            our_labels = {tuple(k for k, _ in labels) for labels in samples}
            their_labels = {tuple(k for k, _ in labels) for labels in their_samples}
            if name.startswith("rabbitmq_queue_") and path.endswith("per-object"):
                assert our_labels <= their_labels, (path, name, our_labels, their_labels)
