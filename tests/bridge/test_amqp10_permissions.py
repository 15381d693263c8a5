"""Permissions on AMQP 1.0 links: attaching takes the permissions of the 0-9-1 operations it
stands for (declare: configure; publish: write on the exchange; consume: read on the queue; a
receiver on an exchange: its private queue's declare and bind), and a refusal ends the session
with amqp:unauthorized-access and RabbitMQ's 0-9-1 text. RabbitMQ 3.10's plugin never answers
such an attach (the link stays half open until the client gives up), so these run on
rabbitish only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rabbitish.app import Broker
from rabbitish.engine.auth import Permission
from rabbitish.testing import call_in_loop, running_broker
from tests.bridge.test_amqp10_errors import attach, attached, begin, error
from tests.support.amqp10 import Raw

USER = "links-user"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with running_broker() as running:

        def setup() -> None:
            users = running.node.users
            users.add_user(USER, "pw")
            users.set_permissions(USER, "/", Permission("^pc-", "^pw-", "^pr-"))
            vhost = running.node.vhosts["/"]
            for queue in ("px", "pr-q"):
                vhost.declare_queue(queue, owner=None)
            vhost.declare_exchange("pw-x", "direct")

        call_in_loop(running, setup)
        yield running


@pytest.fixture
def client(broker: Broker) -> Iterator[Raw]:
    raw = Raw(broker.url)
    raw.sasl_plain(USER, "pw")
    raw.open()
    begin(raw)
    yield raw
    raw.close()


def refused(kind: str, name: str) -> tuple[str, str, str]:
    text = f"ACCESS_REFUSED - access to {kind} '{name}' in vhost '/' refused for user '{USER}'"
    return "End", "amqp:unauthorized-access", text


@pytest.mark.parametrize(
    ("address", "receiver", "expected"),
    [
        ("/queue/px", False, refused("queue", "px")),
        ("/queue/pc-q", False, refused("exchange", "amq.default")),
        ("/exchange/amq.direct/k", False, refused("exchange", "amq.direct")),
        ("/queue/px", True, refused("queue", "px")),
        ("/amq/queue/px", True, refused("queue", "px")),
    ],
)
def test_refused_links_end_the_session(client: Raw, address: str, receiver: bool, expected):
    attach(client, address, receiver)
    assert error(client) == expected


def test_a_receiver_on_an_exchange_needs_to_declare_its_queue(client: Raw) -> None:
    attach(client, "/exchange/amq.direct/k", receiver=True)
    performative, condition, text = error(client)
    assert (performative, condition) == ("End", "amqp:unauthorized-access")
    assert text.startswith("ACCESS_REFUSED - access to queue 'amq.gen-")


@pytest.mark.parametrize(
    ("address", "receiver"), [("/exchange/pw-x/k", False), ("/amq/queue/pr-q", True)]
)
def test_permitted_links_attach(client: Raw, address: str, receiver: bool) -> None:
    attach(client, address, receiver)
    assert attached(client).handle == 0
