"""Prepared transactions with acks over TCP with pika: a tx channel's staged publishes and
settlements become a prepared transaction at its tx.commit; its acked messages stay locked
(not redelivered, not in basic.get, counted as messages_prepared) through the channel closing,
until a decision from any connection applies everything at once or puts them back in place."""

from __future__ import annotations

import urllib.request

import pika
import pika.exceptions
import pytest

from tests.support.clients import channel_error, pika_channel, pika_connection
from tests.support.half import (
    TXN_EXCHANGE,
    bodies,
    decide,
    half_transactions,
    prepare,
    queue_json,
    ready,
)


@pytest.fixture
def queues(broker_url, uid):
    names = (f"{uid}-in", f"{uid}-out")
    with pika_channel(broker_url) as ch:
        for name in names:
            ch.queue_declare(name, durable=True)
    return names


def _fill(url: str, queue: str, items: list[bytes]) -> None:
    with pika_channel(url) as ch:
        ch.confirm_delivery()
        for body in items:
            ch.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2))


def _consume_and_prepare(url: str, source: str, target: str, txn: str, acks: int) -> None:
    """Take `acks` messages of `source`, publish one to `target` and ack them in a tx, prepare
    it as `txn`, then close the connection (the locks must outlive it)."""
    with pika_connection(url) as conn:
        ch = conn.channel()
        ch.tx_select()
        tags = []
        for _ in range(acks):
            method, _props, _body = ch.basic_get(source)
            tags.append(method.delivery_tag)
        ch.basic_publish("", target, b"result", pika.BasicProperties(delivery_mode=2))
        for tag in tags:
            ch.basic_ack(tag)
        prepare(ch, txn)


def test_prepared_acks_stay_locked_and_commit_applies_all(
    broker_url, rabbitish_management_url, queues, uid
):
    source, target = queues
    _fill(broker_url, source, [b"m1", b"m2", b"m3"])
    _consume_and_prepare(broker_url, source, target, uid, acks=2)
    with pika_channel(broker_url) as ch:
        assert ready(ch, source) == 1 and ready(ch, target) == 0
        doc = queue_json(rabbitish_management_url, source)
        assert (doc["messages_ready"], doc["messages_unacknowledged"]) == (1, 0)
        assert doc["messages_prepared"] == 2
        assert queue_json(rabbitish_management_url, target)["messages_half"] == 1
        listed = half_transactions(rabbitish_management_url)[uid]
        assert (listed["messages"], listed["acks"], listed["prepared"]) == (1, 2, True)
        assert listed["queues"] == sorted([source, target])
        metrics = _metrics(rabbitish_management_url)
        assert metrics["rabbitish_half_transactions_prepared"] >= 1
        assert metrics["rabbitish_half_transactions_acks"] >= 2
        decide(ch, uid, "commit")
        assert bodies(ch, target) == [b"result"]
        assert bodies(ch, source) == [b"m3"]
        assert queue_json(rabbitish_management_url, source)["messages_prepared"] == 0


def test_rollback_puts_acked_messages_back_in_place_redelivered(broker_url, queues, uid):
    source, target = queues
    _fill(broker_url, source, [b"m1", b"m2", b"m3"])
    _consume_and_prepare(broker_url, source, target, uid, acks=2)
    with pika_channel(broker_url) as ch:
        decide(ch, uid, "rollback")
        got = []
        while (message := ch.basic_get(source, auto_ack=True))[0] is not None:
            got.append((message[2], message[0].redelivered))
        assert got == [(b"m1", True), (b"m2", True), (b"m3", False)]
        assert ready(ch, target) == 0


def test_locked_messages_are_not_given_to_other_consumers(broker_url, queues, uid):
    source, _target = queues
    _fill(broker_url, source, [b"m1", b"m2"])
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.tx_select()
        ch.basic_qos(prefetch_count=1)
        got: list[bytes] = []
        tags: list[int] = []

        def on_message(c, method, props, body):
            got.append(body)
            tags.append(method.delivery_tag)

        ch.basic_consume(source, on_message)
        conn.process_data_events(time_limit=0.2)
        assert got == [b"m1"]
        ch.basic_ack(tags[0])
        prepare(ch, uid)  # frees the prefetch: the next message comes
        while len(got) < 2:
            conn.process_data_events(time_limit=0.1)
        assert got == [b"m1", b"m2"]
    with pika_channel(broker_url) as ch:  # m2 was unacked: back; m1 stays locked
        assert bodies(ch, source) == [b"m2"]
        decide(ch, uid, "rollback")
        assert bodies(ch, source) == [b"m1"]


def test_nack_and_reject_are_applied_as_staged_at_commit(broker_url, uid):
    source, dlq = f"{uid}-src", f"{uid}-dlq"
    with pika_channel(broker_url) as ch:
        ch.queue_declare(dlq, durable=True)
        ch.queue_declare(
            source,
            durable=True,
            arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
        )
    _fill(broker_url, source, [b"dead", b"again", b"stay"])
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.tx_select()
        first = ch.basic_get(source)[0].delivery_tag
        second = ch.basic_get(source)[0].delivery_tag
        ch.basic_reject(first, requeue=False)
        ch.basic_nack(second, requeue=True)
        prepare(ch, uid)
    with pika_channel(broker_url) as ch:
        assert ready(ch, source) == 1 and ready(ch, dlq) == 0
        decide(ch, uid, "commit")
        assert bodies(ch, dlq) == [b"dead"]
        assert bodies(ch, source) == [b"again", b"stay"]


def test_decisions_on_a_tx_channel_apply_at_its_commit(broker_url, queues, uid):
    source, target = queues
    _fill(broker_url, source, [b"m1"])
    _consume_and_prepare(broker_url, source, target, uid, acks=1)
    with pika_channel(broker_url) as ch:
        ch.tx_select()
        decide(ch, uid, "commit")
        assert ready(ch, target) == 0
        ch.tx_commit()
        assert bodies(ch, target) == [b"result"]
        assert ready(ch, source) == 0


def test_tx_rollback_drops_a_staged_prepare_with_the_rest(broker_url, queues, uid):
    source, _target = queues
    _fill(broker_url, source, [b"m1"])
    with pika_channel(broker_url) as ch:
        ch.tx_select()
        tag = ch.basic_get(source)[0].delivery_tag
        ch.basic_ack(tag)
        ch.basic_publish(
            TXN_EXCHANGE, "prepare", b"", pika.BasicProperties(headers={"x-half-txn": uid})
        )
        ch.tx_rollback()
        ch.basic_ack(tag)
        ch.tx_commit()
        assert ready(ch, source) == 0
    assert _held(broker_url, uid) is False


def _metrics(management_url: str) -> dict[str, float]:
    """The unlabelled samples of /metrics (served on the management port too, no login)."""
    base = "http://" + management_url.split("@", 1)[1]
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as reply:
        lines = reply.read().decode().splitlines()
    return {
        name: float(value)
        for name, value in (line.split(" ", 1) for line in lines if line and line[0] != "#")
        if "{" not in name
    }


def _held(url: str, txn: str) -> bool:
    with pika_channel(url) as ch:
        ch.confirm_delivery()
        try:
            decide(ch, txn, "rollback", mandatory=True)
        except pika.exceptions.UnroutableError:
            return False
        return True


@pytest.mark.parametrize(
    ("setup", "text"),
    [
        ("no-tx", "prepare needs a transaction"),
        ("no-id", "prepare needs an x-half-txn header"),
        ("held", "is already held"),
    ],
)
def test_refused_prepares(broker_url, queues, uid, setup, text):
    source, _ = queues
    with pika_channel(broker_url) as ch:
        if setup == "held":
            ch.confirm_delivery()
            ch.basic_publish("", source, b"h", pika.BasicProperties(headers={"x-half-txn": uid}))
            ch = ch.connection.channel()
        if setup != "no-tx":
            ch.tx_select()
        headers = {} if setup == "no-id" else {"x-half-txn": uid}
        code, reply = channel_error(
            lambda: (
                ch.basic_publish(
                    TXN_EXCHANGE, "prepare", b"", pika.BasicProperties(headers=headers)
                ),
                ch.tx_commit() if setup != "no-tx" else ch.basic_qos(prefetch_count=1),
            )
        )
        assert code == 406 and text in reply


def test_read_copies_what_a_prepared_transaction_locks(broker_url, queues, uid):
    """A publish to amq.rabbitish.txn with routing key `read` and reply_to puts copies of the
    locked messages on that queue, in order, and decides nothing; an unknown ID is returned."""
    source, target = queues
    _fill(broker_url, source, [b"a", b"b", b"c"])
    _consume_and_prepare(broker_url, source, target, uid, acks=2)
    with pika_channel(broker_url) as ch:
        ch.confirm_delivery()
        copies = ch.queue_declare("", exclusive=True).method.queue
        read = pika.BasicProperties(headers={"x-half-txn": uid}, reply_to=copies)
        ch.basic_publish(TXN_EXCHANGE, "read", b"", read, mandatory=True)
        assert bodies(ch, copies) == [b"a", b"b"]
        assert ready(ch, source) == 1  # still locked: nothing was decided
        unknown = pika.BasicProperties(headers={"x-half-txn": f"{uid}-none"}, reply_to=copies)
        with pytest.raises(pika.exceptions.UnroutableError):
            ch.basic_publish(TXN_EXCHANGE, "read", b"", unknown, mandatory=True)
        decide(ch, uid, "rollback")


@pytest.mark.parametrize(
    ("headers", "reply_to", "code", "text"),
    [
        ({}, "copies", 406, "PRECONDITION_FAILED - read needs an x-half-txn header"),
        ({"x-half-txn": "x"}, None, 406, "read needs a reply_to property naming a queue"),
        ({"x-half-txn": "x"}, "nowhere", 404, "NOT_FOUND - no queue 'nowhere' in vhost '/'"),
    ],
)
def test_refused_reads(broker_url, headers, reply_to, code, text):
    with pika_channel(broker_url) as ch:
        if reply_to == "copies":  # a queue that exists: the header is what is missing
            reply_to = ch.queue_declare("", exclusive=True).method.queue
        props = pika.BasicProperties(headers=headers, reply_to=reply_to)
        got = channel_error(
            lambda: (
                ch.basic_publish(TXN_EXCHANGE, "read", b"", props),
                ch.basic_qos(prefetch_count=1),
            )
        )
        assert got[0] == code and text in got[1]
