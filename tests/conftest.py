"""Shared fixtures: one in-process rabbitish per session (real TCP, ephemeral port, :memory:),
and, for differential tests, a real RabbitMQ node when Debian's rabbitmq-server is installed."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from rabbitish.testing import running_broker
from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

_names = itertools.count()


@pytest.fixture(scope="session")
def rabbitish_broker():
    with running_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def broker_url(rabbitish_broker) -> str:
    return rabbitish_broker.url


@pytest.fixture(scope="session")
def rabbitmq_url() -> Iterator[str]:
    """A real RabbitMQ for differential tests; RABBITMQ_URL points at one already running."""
    if os.environ.get("RABBITMQ_URL"):
        yield os.environ["RABBITMQ_URL"]
        return
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with real_rabbitmq() as node:
        yield node.url


@pytest.fixture(params=["rabbitish", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def amqp_url(request) -> str:
    """Runs a test against rabbitish and, when available, against a real RabbitMQ: the same
    assertions must hold on both."""
    if request.param == "rabbitish":
        return request.getfixturevalue("broker_url")
    return request.getfixturevalue("rabbitmq_url")


@pytest.fixture
def uid(request) -> str:
    """A name unique to this test, for queues and exchanges on shared brokers."""
    return f"t{os.getpid()}-{next(_names)}-{request.node.name[:40]}".replace("[", "-").replace(
        "]", ""
    )
