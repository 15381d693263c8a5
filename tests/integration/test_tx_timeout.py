"""--transaction-timeout on AMQP 0-9-1 with pika: a tx channel whose uncommitted work stays
idle past the timeout is closed with 406 and the text of protocol/tx_timeout.py; its staged
publishes are dropped and its staged acks go back, as on any channel close. A tx channel with
nothing staged is never closed for it."""

from __future__ import annotations

import time

import pika
import pytest

from rabbitish.testing import running_broker

TIMEOUT = 0.3  # seconds


@pytest.fixture(scope="module")
def broker():
    with running_broker(transaction_timeout=TIMEOUT) as made:
        yield made


@pytest.fixture
def conn(broker):
    made = pika.BlockingConnection(pika.URLParameters(broker.url))
    yield made
    if made.is_open:
        made.close()


def closes(ch) -> list[tuple[int, str]]:
    closed: list[tuple[int, str]] = []
    ch._impl.add_on_close_callback(
        lambda _ch, reason: closed.append((reason.reply_code, reason.reply_text))
    )
    return closed


def pump_until(conn: pika.BlockingConnection, predicate, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        conn.process_data_events(time_limit=0.05)


def timed_out(channel_number: int) -> tuple[int, str]:
    return (
        406,
        f"PRECONDITION_FAILED - transaction on channel {channel_number} timed out: idle with "
        f"uncommitted work. Timeout value used: {round(TIMEOUT * 1000)} ms. This timeout value "
        "can be configured with --transaction-timeout",
    )


def test_an_idle_transaction_with_publishes_closes_its_channel(conn, uid):
    setup = conn.channel()
    setup.queue_declare(uid)
    ch = conn.channel()
    closed = closes(ch)
    ch.tx_select()
    ch.basic_publish("", uid, b"staged")
    pump_until(conn, lambda: closed)
    assert closed == [timed_out(ch.channel_number)]
    assert setup.queue_declare(uid, passive=True).method.message_count == 0  # dropped
    assert conn.is_open  # only the channel goes


def test_an_idle_transaction_with_acks_gives_the_messages_back(conn, uid):
    setup = conn.channel()
    setup.queue_declare(uid)
    setup.basic_publish("", uid, b"acked in the transaction")
    ch = conn.channel()
    closed = closes(ch)
    ch.tx_select()
    method, _props, _body = ch.basic_get(uid)
    ch.basic_ack(method.delivery_tag)
    pump_until(conn, lambda: closed)
    assert closed == [timed_out(ch.channel_number)]
    method, _props, body = setup.basic_get(uid, auto_ack=True)
    assert (body, method.redelivered) == (b"acked in the transaction", True)


def test_a_transaction_committed_in_time_and_an_empty_one_stay_open(conn, uid):
    setup = conn.channel()
    setup.queue_declare(uid)
    committed = conn.channel()
    committed.tx_select()
    committed.basic_publish("", uid, b"in time")
    committed.tx_commit()
    empty = conn.channel()
    empty.tx_select()
    # A channel whose work stays idle, as the witness that the timeout has passed.
    witness = conn.channel()
    witness.tx_select()
    witness.basic_publish("", uid, b"idle")
    pump_until(conn, lambda: not witness.is_open)
    assert committed.is_open and empty.is_open
    committed.basic_publish("", uid, b"later")
    committed.tx_commit()
    assert setup.queue_declare(uid, passive=True).method.message_count == 2
