"""RabbitMQ 4's own AMQP 1.0 client (`rabbitmq-amqp-python-client` from PyPI) against rabbitish
over real TCP: it checks the open's product and version, then declares, binds, publishes,
consumes, purges and deletes through the `/management` node and the /queues and /exchanges
addresses (docs/amqp10.md "RabbitMQ 4 clients")."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlparse

import pytest

client = pytest.importorskip(
    "rabbitmq_amqp_python_client",
    reason="rabbitmq-amqp-python-client is not installed (pip install -e '.[test]')",
)
from rabbitmq_amqp_python_client import (  # noqa: E402
    AddressHelper,
    AMQPMessagingHandler,
    ClassicQueueSpecification,
    Environment,
    ExchangeCustomSpecification,
    ExchangeSpecification,
    ExchangeToQueueBindingSpecification,
    ExchangeType,
    Message,
    OutcomeState,
    QueueType,
    QuorumQueueSpecification,
    ValidationCodeException,
)
from rabbitmq_amqp_python_client.qpid.proton import symbol as Symbol  # noqa: E402


class Stop(BaseException):
    """Ends the client's consumer loop once a message is in (a BaseException: the client
    catches Exception inside its loop)."""


class TakeOne(AMQPMessagingHandler):  # type: ignore[misc]
    """Accepts the first message and stops the consumer's loop."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytes] = []

    def on_amqp_message(self, event) -> None:
        self.bodies.append(bytes(event.message.body))
        self.delivery_context.accept(event)
        raise Stop


@pytest.fixture
def connection(broker_url):
    parsed = urlparse(broker_url)
    environment = Environment(uri=f"amqp://guest:guest@{parsed.hostname}:{parsed.port}/")
    conn = environment.connection()
    conn.dial()
    try:
        yield conn
    finally:
        environment.close()


def test_declare_bind_publish_consume_purge_delete(connection, uid):
    management = connection.management()
    exchange, queue = f"{uid}-x", f"{uid}-q/with slash"
    management.declare_exchange(
        ExchangeSpecification(name=exchange, exchange_type=ExchangeType.topic)
    )
    management.declare_queue(ClassicQueueSpecification(name=queue, is_durable=False))
    binding = management.bind(
        ExchangeToQueueBindingSpecification(
            source_exchange=exchange, destination_queue=queue, binding_key="a.*"
        )
    )
    publisher = connection.publisher(AddressHelper.exchange_address(exchange, "a.b"))
    for n in range(3):
        status = publisher.publish(Message(body=f"m{n}".encode()))
        assert status.remote_state == OutcomeState.ACCEPTED
    publisher.close()

    info = management.queue_info(queue)
    assert (info.name, info.message_count, info.is_durable) == (queue, 3, False)

    handler = TakeOne()
    consumer = connection.consumer(AddressHelper.queue_address(queue), message_handler=handler)
    with pytest.raises(Stop):
        consumer.run()
    assert handler.bodies == [b"m0"]
    consumer.close()

    assert management.purge_queue(queue) == 2
    management.unbind(binding)
    management.delete_queue(queue)
    management.delete_exchange(exchange)
    with pytest.raises(ValidationCodeException):
        management.queue_info(queue)
    management.close()


def test_inequivalent_redeclare_is_a_precondition_failure(connection, uid):
    management = connection.management()
    management.declare_queue(ClassicQueueSpecification(name=uid, is_durable=False))
    with pytest.raises(ValidationCodeException, match="ErrPreconditionFailed"):
        management.declare_queue(ClassicQueueSpecification(name=uid, is_durable=True))
    management.delete_queue(uid)
    management.close()


def test_quorum_queue_with_every_argument_the_client_sends(connection, uid):
    """The client's own test_declare_quorum_queue_with_args: the quorum arguments are accepted
    for a quorum queue; those no queue type knows (x-quorum-target-group-size, and the
    client's misspelt x-deliver-limit) are kept and ignored, as RabbitMQ does."""
    management = connection.management()
    spec = QuorumQueueSpecification(
        name=uid,
        dead_letter_exchange="my_exchange",
        dead_letter_routing_key="my_key",
        max_len=500000,
        max_len_bytes=1000000000,
        message_ttl=timedelta(seconds=2),
        overflow_behaviour="reject-publish",
        auto_expires=timedelta(seconds=2),
        single_active_consumer=True,
        deliver_limit=10,
        dead_letter_strategy="at-least-once",
        quorum_initial_group_size=5,
        cluster_target_group_size=5,
    )
    management.declare_queue(spec)
    info = management.queue_info(uid)
    assert (info.is_durable, info.is_auto_delete, info.is_exclusive) == (True, False, False)
    assert info.queue_type == QueueType.quorum
    assert info.arguments["x-deliver-limit"] == 10
    assert info.arguments["x-quorum-target-group-size"] == 5
    assert info.arguments["x-quorum-initial-group-size"] == 5
    assert info.arguments["x-dead-letter-strategy"] == "at-least-once"
    with pytest.raises(ValidationCodeException, match="ErrPreconditionFailed"):
        management.declare_queue(ClassicQueueSpecification(name=f"{uid}-c", max_priority=300))
    management.delete_queue(uid)
    management.close()


def test_local_random_exchange_declared_bound_and_routed(connection, uid):
    """The client's test_declare_delete_exchange_custom, then a message published to the
    x-local-random exchange reaches exactly one of the two bound queues."""
    management = connection.management()
    exchange = f"{uid}-lr"
    info = management.declare_exchange(
        ExchangeCustomSpecification(
            name=exchange, exchange_type="x-local-random", arguments={"x-delayed-type": "direct"}
        )
    )
    assert info.name == exchange
    queues = [f"{uid}-a", f"{uid}-b"]
    for queue in queues:
        management.declare_queue(ClassicQueueSpecification(name=queue, is_durable=False))
        management.bind(
            ExchangeToQueueBindingSpecification(
                source_exchange=exchange, destination_queue=queue, binding_key=""
            )
        )
    publisher = connection.publisher(AddressHelper.exchange_address(exchange, "ignored"))
    for n in range(20):
        assert publisher.publish(Message(body=f"m{n}".encode())).remote_state == (
            OutcomeState.ACCEPTED
        )
    publisher.close()
    counts = [management.queue_info(queue).message_count for queue in queues]
    assert sum(counts) == 20
    for queue in queues:
        management.delete_queue(queue)
    management.delete_exchange(exchange)
    management.close()


class Modify(AMQPMessagingHandler):  # type: ignore[misc]
    """Settles the first message `modified` with annotations (requeue or discard), then stops."""

    def __init__(self, discard: bool) -> None:
        super().__init__()
        self.discard = discard

    def on_amqp_message(self, event) -> None:
        annotations = {Symbol("x-opt-mark"): "seen"}
        if self.discard:
            self.delivery_context.discard_with_annotations(event, annotations)
        else:
            self.delivery_context.requeue_with_annotations(event, annotations)
        raise Stop


class Annotations(AMQPMessagingHandler):  # type: ignore[misc]
    """Accepts the first message, keeps its message annotations and stops."""

    def __init__(self) -> None:
        super().__init__()
        self.annotations: dict = {}

    def on_amqp_message(self, event) -> None:
        self.annotations = dict(event.message.annotations or {})
        self.delivery_context.accept(event)
        raise Stop


def _first_annotations(connection, queue: str) -> dict:
    handler = Annotations()
    consumer = connection.consumer(AddressHelper.queue_address(queue), message_handler=handler)
    with pytest.raises(Stop):
        consumer.run()
    consumer.close()
    return handler.annotations


@pytest.mark.parametrize("discard", [False, True], ids=["requeue", "discard"])
def test_modified_annotations_reach_a_quorum_queues_message(connection, uid, discard):
    """RabbitMQ 4: a `modified` outcome's x- annotations are merged into a quorum queue's
    message: the redelivery carries them, and so does the copy dead-lettered by a discard."""
    management = connection.management()
    dead = f"{uid}-dead"
    management.declare_queue(ClassicQueueSpecification(name=dead, is_durable=False))
    management.declare_queue(
        QuorumQueueSpecification(name=uid, dead_letter_exchange="", dead_letter_routing_key=dead)
    )
    publisher = connection.publisher(AddressHelper.queue_address(uid))
    publisher.publish(Message(body=b"m"))
    publisher.close()
    consumer = connection.consumer(
        AddressHelper.queue_address(uid), message_handler=Modify(discard)
    )
    with pytest.raises(Stop):
        consumer.run()
    consumer.close()
    annotations = _first_annotations(connection, dead if discard else uid)
    assert annotations.get("x-opt-mark") == "seen"
    for queue in (uid, dead):
        management.delete_queue(queue)
    management.close()


def test_modified_annotations_leave_a_classic_queues_message_alone(connection, uid):
    management = connection.management()
    management.declare_queue(ClassicQueueSpecification(name=uid, is_durable=False))
    publisher = connection.publisher(AddressHelper.queue_address(uid))
    publisher.publish(Message(body=b"m"))
    publisher.close()
    consumer = connection.consumer(
        AddressHelper.queue_address(uid), message_handler=Modify(discard=False)
    )
    with pytest.raises(Stop):
        consumer.run()
    consumer.close()
    assert "x-opt-mark" not in _first_annotations(connection, uid)
    management.delete_queue(uid)
    management.close()
