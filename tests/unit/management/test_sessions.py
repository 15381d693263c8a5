"""The management JSON made from the neutral views, without sockets: a 1.0 session may list
several open transactions (and two sessions of one connection the same one), a 0-9-1 channel at
most one; links split into RabbitMQ 4.x's incoming and outgoing lists."""

from __future__ import annotations

from rabbitish.engine.sessions import ConnectionView, LinkView, SessionView
from rabbitish.engine.transactions import TransactionRegistry
from rabbitish.management.rates import Rates
from rabbitish.management.sessions import Endpoint, channel_json, session_json, transactions_json

ENDPOINT = Endpoint("127.0.0.1:5000 -> 127.0.0.1:5672", "127.0.0.1", 5000, "127.0.0.1", 5672)


def session(number: int, **fields) -> SessionView:
    defaults = dict(
        state="running",
        transactional=True,
        confirm=False,
        consumer_count=0,
        prefetch_count=0,
        global_prefetch_count=0,
        unacked=0,
    )
    return SessionView(number=number, **{**defaults, **fields})


def connection(protocol: str, *sessions: SessionView) -> ConnectionView:
    return ConnectionView(protocol, "guest", "/", "peer", 0, 131072, 60, {}, tuple(sessions))


def link(name: str, handle: int, role: str, coordinator: bool = False) -> LinkView:
    return LinkView(
        name=name,
        handle=handle,
        role=role,
        address=None if coordinator else "/queue/q",
        queue=None if coordinator else "q",
        exchange="" if role == "receiver" and not coordinator else None,
        credit=10,
        delivery_count=3,
        unsettled=1 if role == "sender" else 0,
        settle_mode="mixed",
        coordinator=coordinator,
    )


def test_1_0_transactions_are_listed_once_with_protocol_session_and_vhost():
    registry = TransactionRegistry(clock=iter(range(100)).__next__)
    first, second = registry.begin("a"), registry.begin("b", txn_id="txn-b")
    view = connection(
        "AMQP 1-0",
        session(0, transactions=(first, second)),
        session(1, transactions=(second,)),
    )
    listed = transactions_json([(view, ENDPOINT)], now=10.0)
    assert [(t["id"], t["channel"], t["protocol"]) for t in listed] == [
        (first.id, 0, "AMQP 1-0"),
        ("txn-b", 0, "AMQP 1-0"),
    ]
    assert {t["vhost"] for t in listed} == {"/"}
    assert listed[0]["connection"] == ENDPOINT.name


def test_a_channel_sums_the_work_of_its_transactions():
    registry = TransactionRegistry()
    view = connection("AMQP 1-0", session(2, transactions=(registry.begin("a"),)))
    doc = channel_json(view, view.sessions[0], ENDPOINT, Rates())
    assert (doc["messages_uncommitted"], doc["acks_uncommitted"]) == (0, 0)
    assert (doc["protocol"], doc["name"]) == ("AMQP 1-0", f"{ENDPOINT.name} (2)")
    idle = connection("AMQP 0-9-1", session(1, transactional=False))
    assert channel_json(idle, idle.sessions[0], ENDPOINT, Rates())["messages_uncommitted"] == 0


def test_a_session_splits_its_links_as_rabbitmq_4_does():
    links = (link("in", 0, "receiver"), link("out", 1, "sender"), link("txn", 2, "receiver", True))
    doc = session_json(session(0, unacked=1, links=links))
    assert [(x["handle"], x["link_name"]) for x in doc["incoming_links"]] == [(0, "in"), (2, "txn")]
    assert doc["incoming_links"][1]["coordinator"] is True
    [out] = doc["outgoing_links"]
    assert (out["link_name"], out["queue_name"], out["send_settled"]) == ("out", "q", False)
    assert doc["outgoing_unsettled_deliveries"] == 1
