"""pytest plugin (registered through the `pytest11` entry point): a rabbitish broker for the
test session instead of a RabbitMQ container.

    rabbitish_broker          session: in-process broker on an ephemeral port, :memory: store
    rabbitish_url             session: its amqp:// URL
    rabbitish_management_url  session: http://guest:guest@host:port of its management API
                              (started on an ephemeral port the first time it is asked for)
    amqp_reset                per test: deletes the queues, exchanges and bindings the test
                              declared

Nothing starts unless a test asks for one of these fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from rabbitish.app import Broker


@pytest.fixture(scope="session")
def rabbitish_broker() -> Iterator[Broker]:
    from rabbitish.testing import running_broker

    with running_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def rabbitish_url(rabbitish_broker: Broker) -> str:
    return rabbitish_broker.url


@pytest.fixture(scope="session")
def rabbitish_management_url(rabbitish_broker: Broker) -> str:
    from rabbitish.testing import enable_management, management_url

    enable_management(rabbitish_broker)
    return management_url(rabbitish_broker)


@pytest.fixture
def amqp_reset(rabbitish_broker: Broker) -> Iterator[None]:
    from rabbitish.testing import reset, snapshot

    before = snapshot(rabbitish_broker)
    yield
    reset(rabbitish_broker, before)
