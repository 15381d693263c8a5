"""Half messages over TCP with pika: held invisible until a decision on amq.rabbitish.txn
commits them (all at once, at the tail, in publish order) or rolls them back; decisions are
idempotent, unknown ids are unroutable; invalid headers are refused when they arrive."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from rabbitish.testing import call_in_loop
from tests.support.clients import channel_error, pika_channel, pika_connection
from tests.support.half import TXN_EXCHANGE, bodies, decide, half, queue_json, ready
from tests.support.waiting import wait_until


@pytest.fixture
def queues(broker_url, uid):
    names = (f"{uid}-a", f"{uid}-b")
    with pika_channel(broker_url) as ch:
        for name in names:
            ch.queue_declare(name, durable=True)
    return names


def test_half_messages_are_invisible_until_commit(
    broker_url, rabbitish_management_url, queues, uid
):
    a, b = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", a, b"plain-1")
        ch.basic_publish("", a, b"half-1", half(uid))
        ch.basic_publish("", b, b"half-2", half(uid))
        ch.basic_publish("", a, b"half-3", half(uid))
        ch.basic_publish("", a, b"plain-2")
        assert ready(ch, a) == 2 and ready(ch, b) == 0
        doc = queue_json(rabbitish_management_url, a)
        assert (doc["messages"], doc["messages_ready"], doc["messages_half"]) == (2, 2, 2)
        method, _props, body = ch.basic_get(a, auto_ack=False)
        assert body == b"plain-1"
        ch.basic_nack(method.delivery_tag, requeue=True)

        decide(ch, uid, "commit")
        assert bodies(ch, a) == [b"plain-1", b"plain-2", b"half-1", b"half-3"]
        assert bodies(ch, b) == [b"half-2"]
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 0


def test_a_consumer_gets_committed_messages_in_publish_order(broker_url, queues, uid):
    a, _ = queues
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        for n in range(5):
            ch.basic_publish("", a, str(n).encode(), half(uid))
        got: list[bytes] = []
        ch.basic_consume(a, lambda c, m, p, body: got.append(body), auto_ack=True)
        conn.process_data_events(time_limit=0.05)
        assert got == []
        decide(ch, uid)
        while len(got) < 5:
            conn.process_data_events(time_limit=0.05)
        assert got == [b"0", b"1", b"2", b"3", b"4"]


def test_rollback_discards_everything(broker_url, rabbitish_management_url, queues, uid):
    a, b = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", a, b"x", half(uid))
        ch.basic_publish("", b, b"y", half(uid))
        decide(ch, uid, "rollback")
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 0
        decide(ch, uid, "commit")  # too late: nothing to commit any more
        assert bodies(ch, a) == [] and bodies(ch, b) == []


def test_publishes_from_many_connections_share_an_id(broker_url, queues, uid):
    a, b = queues
    for queue in (a, b, a):
        with pika_channel(broker_url) as ch:
            ch.confirm_delivery()
            ch.basic_publish("", queue, queue.encode(), half(uid))
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        decide(ch, uid)
        assert bodies(ch, a) == [a.encode(), a.encode()] and bodies(ch, b) == [b.encode()]


def test_decisions_are_idempotent_and_unknown_ids_unroutable(broker_url, queues, uid):
    a, _ = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", a, b"once", half(uid))
        decide(ch, uid, "commit", mandatory=True)
        decide(ch, uid, "commit", mandatory=True)  # the same decision again: a no-op, routed
        assert bodies(ch, a) == [b"once"]
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, uid, "rollback", mandatory=True)  # nothing held any more
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, f"{uid}-never", "commit", mandatory=True)
        decide(ch, f"{uid}-never", "commit")  # not mandatory: dropped, still confirmed
        for key, props in (
            ("publish", pika.BasicProperties(headers={"x-half-txn": uid})),
            ("commit", pika.BasicProperties()),
        ):
            with pytest.raises(pika.exceptions.UnroutableError):
                ch.basic_publish(TXN_EXCHANGE, key, b"", props, mandatory=True)


def test_a_half_message_for_a_decided_id_is_refused(broker_url, rabbitish_broker, queues, uid):
    """A part of a transaction that arrives after a decision (a producer held up while a
    status check rolled its id back) is refused: held, it would start the id over."""
    a, _ = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", a, b"first", half(uid))
        decide(ch, uid, "rollback", mandatory=True)
        code, reply = channel_error(lambda: ch.basic_publish("", a, b"late", half(uid)))
    assert (code, reply) == (406, f"PRECONDITION_FAILED - transaction '{uid}' was already decided")
    node = rabbitish_broker.node
    assert call_in_loop(rabbitish_broker, node.vhosts["/"].half.get, uid) is None
    with pika_channel(broker_url) as ch:
        assert ready(ch, a) == 0


def test_an_unroutable_half_message_is_returned_and_holds_nothing(
    broker_url, rabbitish_broker, uid
):
    node = rabbitish_broker.node
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        with pytest.raises(pika.exceptions.UnroutableError):
            ch.basic_publish("", f"{uid}-missing", b"x", half(uid), mandatory=True)
        # What is held, asked directly (the confirm came after the publish was handled): no
        # transaction for this id, in this vhost or any other.
        assert call_in_loop(rabbitish_broker, node.vhosts["/"].half.get, uid) is None
        assert uid not in [v.id for v in call_in_loop(rabbitish_broker, node.half_transactions)]
        with pytest.raises(pika.exceptions.UnroutableError):
            decide(ch, uid, mandatory=True)


@pytest.mark.parametrize(
    ("headers", "text"),
    [
        ({"x-half-txn": ""}, "invalid x-half-txn header: expected a string of 1 to 255 bytes"),
        ({"x-half-txn": "x" * 256}, "got 256 bytes"),
        ({"x-half-txn": 7}, "got long"),
        ({"x-half-txn": "ok", "x-check-queue": ""}, "invalid x-check-queue header"),
        ({"x-half-txn": "ok", "x-check-immunity": "soon"}, "invalid x-check-immunity header"),
        ({"x-half-txn": "ok", "x-check-immunity": -1}, "a number of seconds >= 0"),
    ],
)
def test_invalid_half_headers_close_the_channel(broker_url, uid, headers, text):
    with pika_channel(broker_url) as ch:
        ch.queue_declare(uid, auto_delete=True)
        code, reply = channel_error(
            lambda: (
                ch.basic_publish("", uid, b"x", pika.BasicProperties(headers=headers)),
                ch.queue_declare(uid, passive=True),
            )
        )
    assert code == 406
    assert reply.startswith("PRECONDITION_FAILED - ") and text in reply


def test_an_invalid_id_on_a_decision_is_refused_too(broker_url):
    with pika_channel(broker_url) as ch:
        props = pika.BasicProperties(headers={"x-half-txn": ""})
        code, _ = channel_error(
            lambda: (
                ch.basic_publish(TXN_EXCHANGE, "commit", b"", props),
                ch.queue_declare("", exclusive=True),
            )
        )
    assert code == 406


@pytest.mark.parametrize("name", ["amq.direct", TXN_EXCHANGE])
def test_the_decision_exchange_answers_like_other_amq_exchanges(broker_url, uid, name):
    with pika_channel(broker_url) as ch:
        ch.exchange_declare(name, passive=True)
        ch.exchange_declare(name, "direct", durable=True)
        ch.queue_declare(uid, auto_delete=True)
        ch.queue_bind(uid, name, "commit")
        ch.queue_unbind(uid, name, "commit")
    with pika_channel(broker_url) as ch:
        code, text = channel_error(lambda: ch.exchange_declare(name, "fanout", durable=True))
    assert (code, text) == (
        406,
        f"PRECONDITION_FAILED - inequivalent arg 'type' for exchange '{name}' in vhost '/': "
        "received 'fanout' but current is 'direct'",
    )
    with pika_channel(broker_url) as ch:
        code, text = channel_error(lambda: ch.exchange_delete(name))
    assert (code, text) == (
        403,
        f"ACCESS_REFUSED - deletion of system exchange '{name}' in vhost '/' not allowed",
    )


def test_a_queue_bound_to_the_decision_exchange_gets_nothing(broker_url, queues, uid):
    a, b = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.queue_bind(b, TXN_EXCHANGE, "commit")
        ch.basic_publish("", a, b"x", half(uid))
        decide(ch, uid)
        assert bodies(ch, a) == [b"x"] and bodies(ch, b) == []


def test_ttl_counts_from_the_commit(broker_url, uid):
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.queue_declare(uid, auto_delete=True, arguments={"x-message-ttl": 1000})
        ch.basic_publish("", uid, b"x", half(uid))
        ch.basic_publish("", uid, b"control")  # not half: its TTL runs from now
        # Held longer than the TTL (the control message, published after it, has expired):
        # the clock starts at the commit, not at the publish.
        wait_until(
            lambda: ready(ch, uid) == 0, timeout=30, message="the control message never expired"
        )
        decide(ch, uid)
        assert bodies(ch, uid) == [b"x"]


def test_in_a_transaction_half_publishes_and_decisions_apply_at_commit(
    broker_url, rabbitish_management_url, queues, uid
):
    a, b = queues
    ids = [f"{uid}-{n}" for n in range(3)]
    with pika_channel(broker_url) as ch:
        ch.tx_select()
        for txn in ids:
            ch.basic_publish("", a, txn.encode(), half(txn))
            ch.basic_publish("", b, txn.encode(), half(txn))
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 0
        ch.tx_commit()
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 3
        for txn in ids:
            decide(ch, txn, "commit" if txn != ids[1] else "rollback")
        assert ready(ch, a) == 0
        ch.tx_rollback()  # the staged decisions are gone
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 3
        for txn in ids:
            decide(ch, txn, "commit" if txn != ids[1] else "rollback")
        ch.tx_commit()
        expected = [ids[0].encode(), ids[2].encode()]
        assert bodies(ch, a) == expected and bodies(ch, b) == expected
        assert queue_json(rabbitish_management_url, a)["messages_half"] == 0


def test_a_mandatory_decision_for_an_unknown_id_returns_at_commit(broker_url, uid):
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        returned: list[tuple[int, str]] = []
        ch.add_on_return_callback(lambda c, m, p, b: returned.append((m.reply_code, m.exchange)))
        ch.tx_select()
        decide(ch, uid, mandatory=True)
        conn.process_data_events(time_limit=0.05)
        assert returned == []
        ch.tx_commit()
        conn.process_data_events(time_limit=0.05)
        assert returned == [(312, TXN_EXCHANGE)]


def test_the_engine_api_lists_and_decides(rabbitish_broker, broker_url, queues, uid):
    a, b = queues
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        ch.basic_publish("", a, b"1", half(uid, **{"x-check-queue": b}))
        ch.basic_publish("", b, b"2", half(uid))
        vhost = rabbitish_broker.node.vhosts["/"]
        view = call_in_loop(rabbitish_broker, vhost.half.get, uid)
        assert (view.vhost, view.messages, view.queues) == ("/", 2, (a, b))
        assert (view.checks_sent, view.check_queue) == (0, b)
        assert uid in [
            v.id for v in call_in_loop(rabbitish_broker, rabbitish_broker.node.half_transactions)
        ]
        assert call_in_loop(rabbitish_broker, vhost.half.decide, uid, True) is True
        assert call_in_loop(rabbitish_broker, vhost.half.decide, uid, True) is True
        assert call_in_loop(rabbitish_broker, vhost.half.decide, f"{uid}-x", True) is False
        assert call_in_loop(rabbitish_broker, vhost.half.get, uid) is None
        assert bodies(ch, a) == [b"1"] and bodies(ch, b) == [b"2"]
