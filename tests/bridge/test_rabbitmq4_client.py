"""RabbitMQ 4's own AMQP 1.0 client (`rabbitmq-amqp-python-client` from PyPI) against rabbitish
over real TCP: it checks the open's product and version, then declares, binds, publishes,
consumes, purges and deletes through the `/management` node and the /queues and /exchanges
addresses (docs/amqp10.md "RabbitMQ 4 clients")."""

from __future__ import annotations

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
    ExchangeSpecification,
    ExchangeToQueueBindingSpecification,
    ExchangeType,
    Message,
    OutcomeState,
    ValidationCodeException,
)


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
