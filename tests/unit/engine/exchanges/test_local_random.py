"""The x-local-random exchange: one bound queue per message, at random, routing key ignored;
RabbitMQ 4's binding refusals."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.errors import AMQPError
from rabbitish.engine.exchanges.base import Binding
from rabbitish.engine.exchanges.fanout import FanoutExchange
from rabbitish.engine.exchanges.local_random import LocalRandomExchange
from rabbitish.engine.exchanges.registry import exchange_type
from tests.support.engine import message


class Destination:
    """A queue as the exchange sees one: its name and arguments."""

    def __init__(self, name: str, arguments: dict[str, Any] | None = None) -> None:
        self.name = name
        self.arguments = arguments or {}


def test_registered_under_rabbitmq_4s_name():
    assert exchange_type("x-local-random") is LocalRandomExchange


def test_each_message_goes_to_exactly_one_bound_queue_whatever_its_key():
    exchange = LocalRandomExchange("/", "lr")
    queues = [Destination(name) for name in "abc"]
    for queue in queues:
        exchange.add_binding(Binding(exchange, queue, ""))
    chosen = [list(exchange.match(message(), f"key-{n}")) for n in range(300)]
    assert all(len(picked) == 1 for picked in chosen)
    # Every queue is picked (each misses all 300 with probability (2/3)**300).
    assert {picked[0].name for picked in chosen} == {"a", "b", "c"}


def test_no_binding_no_destination_and_an_unbound_queue_is_no_longer_chosen():
    exchange = LocalRandomExchange("/", "lr")
    assert list(exchange.match(message(), "")) == []
    kept, gone = Destination("kept"), Destination("gone")
    exchange.add_binding(Binding(exchange, kept, ""))
    binding = Binding(exchange, gone, "")
    exchange.add_binding(binding)
    exchange.remove_binding(binding.key)
    assert {q.name for n in range(50) for q in exchange.match(message(), "")} == {"kept"}


@pytest.mark.parametrize(
    ("destination", "key", "text"),
    [
        (Destination("q"), "k", "Non empty binding 'k' key not permitted"),
        (FanoutExchange("/", "x"), "", "Destination not found"),
        (
            Destination("q", {"x-queue-type": "quorum"}),
            "",
            "Queue type rabbit_quorum_queue not valid for this exchange type",
        ),
        (FanoutExchange("/", "x"), "k", "Non empty binding 'k' key not permitted"),
    ],
)
def test_bindings_refused_as_rabbitmq_4_refuses_them(destination, key, text):
    exchange = LocalRandomExchange("/", "lr")
    with pytest.raises(AMQPError) as info:
        exchange.validate_binding(destination, key, {}, {})
    assert (info.value.reply_code, info.value.text) == (406, text)


def test_a_classic_queue_with_an_empty_key_may_bind():
    LocalRandomExchange("/", "lr").validate_binding(
        Destination("q", {"x-queue-type": "classic"}), "", {"any": "argument"}, {}
    )
