"""The `x-selector` consumer argument (rabbitish's own, docs/amqp10.md "Selectors"): a 0-9-1
consumer gets only the messages its JMS selector selects, read from the 0-9-1 properties and
headers; the others stay in the queue, in order; a malformed selector is refused with 406 and
the column of the fault. RabbitMQ has no such argument (it ignores it), so rabbitish only."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from tests.support.clients import bodies, pika_connection
from tests.support.clients import pika_wait as _wait


def _publish(ch, queue: str) -> None:
    for i, (colour, priority, kind) in enumerate(
        (("red", 1, "a"), ("green", 9, "b"), ("blue", 5, "a"), ("green", 0, None))
    ):
        ch.basic_publish(
            "",
            queue,
            f"{colour}{i}".encode(),
            pika.BasicProperties(headers={"colour": colour, "n": i}, priority=priority, type=kind),
        )


@pytest.mark.parametrize(
    ("selector", "selected", "left"),
    [
        ("colour = 'green'", [b"green1", b"green3"], [b"red0", b"blue2"]),
        ("JMSPriority > 4 AND JMSType = 'a'", [b"blue2"], [b"red0", b"green1", b"green3"]),
        ("n BETWEEN 1 AND 2 OR JMSType IS NULL", [b"green1", b"blue2", b"green3"], [b"red0"]),
    ],
)
def test_an_x_selector_consumer_gets_only_what_it_selects(
    broker_url, uid, selector, selected, left
):
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid)
        _publish(ch, uid)
        got: list[bytes] = []
        ch.basic_consume(
            uid,
            lambda _ch, method, _props, body: got.append(body),
            auto_ack=True,
            arguments={"x-selector": selector},
        )
        _wait(lambda: len(got) == len(selected), conn)
        conn.process_data_events(time_limit=0.2)  # nothing more arrives
        assert got == selected
        ch.basic_cancel(ch.consumer_tags[0])
        assert bodies(ch, uid) == left


def test_a_malformed_x_selector_is_refused_with_406(broker_url, uid):
    with pika_connection(broker_url) as conn:
        ch = conn.channel()
        ch.queue_declare(uid)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            ch.basic_consume(uid, lambda *a: None, arguments={"x-selector": "colour = 'a' OR"})
            conn.process_data_events(time_limit=0.5)
        assert closed.value.reply_code == 406
        assert closed.value.reply_text == (
            "PRECONDITION_FAILED - invalid x-selector \"colour = 'a' OR\": expected a value,"
            " an identifier or '(', found end of selector at column 16"
        )
