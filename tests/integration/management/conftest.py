"""Fixtures of the management API tests: `api` runs a test against rabbitish's management API
and against a real RabbitMQ's (with its management plugin)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.management import Api, rabbitmq_with_management
from tests.support.real_rabbitmq import rabbitmq_available


@pytest.fixture(scope="session")
def rabbitmq_api() -> Iterator[Api]:
    """A real RabbitMQ with the management plugin (RABBITMQ_MANAGEMENT_URL + RABBITMQ_URL reuse
    one already running)."""
    if os.environ.get("RABBITMQ_MANAGEMENT_URL") and os.environ.get("RABBITMQ_URL"):
        yield Api(os.environ["RABBITMQ_URL"], os.environ["RABBITMQ_MANAGEMENT_URL"], "rabbitmq")
        return
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with rabbitmq_with_management() as node:
        yield Api(node.url, f"http://127.0.0.1:{node.management_port}", "rabbitmq")


@pytest.fixture(scope="session")
def rabbitish_api(rabbitish_broker, rabbitish_management_url) -> Api:
    base = f"http://127.0.0.1:{rabbitish_broker.management_port}"
    return Api(rabbitish_broker.url, base, "rabbitish")


@pytest.fixture(params=["rabbitish", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def api(request) -> Api:
    """Runs a test against rabbitish's management API and against RabbitMQ's."""
    return request.getfixturevalue(f"{request.param}_api")
