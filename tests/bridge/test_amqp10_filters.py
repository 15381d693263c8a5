"""Source filters with a real client (qpid-proton over TCP): a JMS selector and RabbitMQ 4.1's
property filter expressions are applied and echoed in the attach reply; an unknown filter is
left out of it; a malformed selector refuses the link with the column of the fault; messages a
receiver does not select stay in the queue, in order, for the others.

RabbitMQ 3.10's 1.0 plugin applies no filter (every message reaches the receiver): these tests
run against rabbitish only, and docs/amqp10.md's feature table records the difference."""

from __future__ import annotations

import pytest

from tests.support.amqp10 import proton_url

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import (  # noqa: E402
    Described,
    Message,
    Timeout,
    symbol,
    ulong,
)
from proton.reactor import Filter, Selector  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402

SELECTOR = symbol("apache.org:selector-filter:string")


@pytest.fixture
def conn(broker_url):
    connection = BlockingConnection(proton_url(broker_url), timeout=5)
    yield connection
    connection.close()


def send(conn, address: str, *colours: str) -> None:
    sender = conn.create_sender(address)
    for i, colour in enumerate(colours):
        sender.send(
            Message(
                body=f"{colour}{i}".encode(),
                properties={"colour": colour, "n": i},
                subject=f"fruit.{colour}",
                priority=9 if colour == "green" else 4,
                inferred=True,
            )
        )
    sender.close()


def receive_all(receiver, quiet: float = 0.5) -> list[bytes]:
    """Every message the receiver gets until none comes for `quiet` seconds."""
    got = []
    while True:
        try:
            message = receiver.receive(timeout=quiet)
        except Timeout:
            return got
        got.append(bytes(message.body))
        receiver.accept()


def echoed(receiver) -> dict | None:
    data = receiver.link.remote_source.filter
    data.rewind()
    return data.get_object() if data.next() else None


def test_a_selector_is_applied_and_echoed(conn, uid):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green", "blue", "green")
    receiver = conn.create_receiver(address, credit=10, options=Selector("colour = 'green'"))
    assert echoed(receiver) == {symbol("selector"): Described(SELECTOR, "colour = 'green'")}
    assert receive_all(receiver) == [b"green1", b"green3"]


def test_unselected_messages_stay_for_other_receivers_in_order(conn, uid):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green", "blue", "green", "red")
    picky = conn.create_receiver(address, name="picky", credit=10, options=Selector("n > 2"))
    assert receive_all(picky) == [b"green3", b"red4"]
    everyone = conn.create_receiver(address, name="everyone", credit=10)
    assert receive_all(everyone) == [b"red0", b"green1", b"blue2"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("JMSPriority = 9", [b"green1"]),
        ("JMSType LIKE 'fruit.b%'", [b"blue2"]),  # JMSType is the subject (Qpid JMS)
        ("colour IN ('red', 'blue') AND n BETWEEN 1 AND 5", [b"blue2"]),
        (
            "JMSDeliveryMode = 'NON_PERSISTENT' AND missing IS NULL AND n <> 0",
            [b"green1", b"blue2"],
        ),
    ],
)
def test_selectors_read_jms_names_and_application_properties(conn, uid, selector, expected):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green", "blue")
    receiver = conn.create_receiver(address, credit=10, options=Selector(selector))
    assert receive_all(receiver) == expected


def test_a_malformed_selector_refuses_the_link_with_the_column(conn, uid):
    with pytest.raises(LinkDetached) as refused:
        conn.create_receiver(f"/queue/{uid}", options=Selector("colour = 'green' AND"))
    condition = refused.value.link.remote_condition
    assert condition.name == "amqp:invalid-field"
    assert condition.description == (
        "invalid selector \"colour = 'green' AND\": expected a value, an identifier or '(',"
        " found end of selector at column 21"
    )
    # The session goes on: the link alone was refused.
    send(conn, f"/queue/{uid}", "red")
    assert receive_all(conn.create_receiver(f"/queue/{uid}", name="after", credit=1)) == [b"red0"]


def test_an_unknown_filter_is_left_out_of_the_reply(conn, uid):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green")
    no_local = Described(symbol("apache.org:no-local-filter:list"), [])
    receiver = conn.create_receiver(
        address,
        credit=10,
        options=Filter(
            {
                symbol("no-local"): no_local,
                symbol("selector"): Described(ulong(0x0000468C_00000004), "colour = 'red'"),
            }
        ),
    )
    # What a client that needs no-local checks: it is not there, so it would close the link.
    assert echoed(receiver) == {
        symbol("selector"): Described(ulong(0x0000468C_00000004), "colour = 'red'")
    }
    assert receive_all(receiver) == [b"red0"]


def test_no_filter_applied_no_filter_echoed(conn, uid):
    receiver = conn.create_receiver(
        f"/queue/{uid}",
        options=Filter({symbol("x"): Described(symbol("example.org:unknown"), "x")}),
    )
    assert echoed(receiver) is None


def test_rabbitmq_property_filters_with_prefix_and_suffix(conn, uid):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green", "blue", "green")
    properties = Described(symbol("amqp:properties-filter"), {symbol("subject"): "&s:een"})
    app = Described(symbol("amqp:application-properties-filter"), {"colour": "&p:gr", "n": 3})
    filters = {symbol("props"): properties, symbol("app"): app}
    receiver = conn.create_receiver(address, credit=10, options=Filter(filters))
    assert echoed(receiver) == filters
    assert receive_all(receiver) == [b"green3"]


def test_a_property_filter_it_cannot_read_is_left_out(conn, uid):
    address = f"/queue/{uid}"
    send(conn, address, "red", "green")
    bad = Described(symbol("amqp:properties-filter"), {symbol("no-such-field"): "x"})
    receiver = conn.create_receiver(address, credit=10, options=Filter({symbol("p"): bad}))
    assert echoed(receiver) is None
    assert receive_all(receiver) == [b"red0", b"green1"]


def test_a_selector_on_an_exchange_address(conn, uid):
    receiver = conn.create_receiver(
        "/exchange/amq.topic/fruit.#", credit=10, options=Selector("colour <> 'red'")
    )
    send(conn, "/exchange/amq.topic", "red", "green")
    assert receive_all(receiver) == [b"green1"]
