"""exchange.declare and exchange.delete: equivalence, passive declares, reserved names, unknown
types, the default exchange that cannot be changed, if-unused deletes and names with CR/LF.
Every test runs against rabbitish and a real RabbitMQ (`amqp_url`)."""

from __future__ import annotations

from typing import Any

import aiormq
import aiormq.exceptions
import pika
import pika.exceptions
import pytest

from tests.support.clients import bodies, channel_error, temp_queue
from tests.support.clients import pika_channel as channel

NOT_DEFAULT = "ACCESS_REFUSED - operation not permitted on the default exchange"


# ---------------------------------------------------------------------- declare
@pytest.mark.parametrize(
    ("first", "second", "detail"),
    [
        (
            {"exchange_type": "direct"},
            {"exchange_type": "fanout"},
            "inequivalent arg 'type' for exchange '{x}' in vhost '/': "
            "received 'fanout' but current is 'direct'",
        ),
        (
            {"durable": False},
            {"durable": True},
            "inequivalent arg 'durable' for exchange '{x}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"auto_delete": True},
            {"auto_delete": False},
            "inequivalent arg 'auto_delete' for exchange '{x}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"internal": True},
            {"internal": False},
            "inequivalent arg 'internal' for exchange '{x}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"arguments": {"alternate-exchange": "ae1"}},
            {"arguments": {"alternate-exchange": "ae2"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received 'ae2' but current is 'ae1'",
        ),
        (
            {"arguments": {"alternate-exchange": "ae1"}},
            {},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received none but current is the value 'ae1' of type 'longstr'",
        ),
        (
            {},
            {"arguments": {"alternate-exchange": "ae1"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received the value 'ae1' of type 'longstr' but current is none",
        ),
        ({"arguments": {"x-other": 1}}, {"arguments": {"x-other": "2"}}, None),
    ],
)
def test_redeclare_equivalence(amqp_url, uid, first, second, detail):
    def declare(ch: Any, options: dict[str, Any]) -> None:
        options = {"exchange_type": "direct", "auto_delete": True, **options}
        ch.exchange_declare(uid, **options)

    with channel(amqp_url) as ch:
        declare(ch, first)
        declare(ch, first)  # the same declaration again is fine
        if detail is None:
            declare(ch, second)
        else:
            assert channel_error(lambda: declare(ch, second)) == (
                406,
                "PRECONDITION_FAILED - " + detail.format(x=uid),
            )
        ch.connection.channel().exchange_delete(uid)


def test_passive_declare_of_a_missing_exchange_404(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare(uid, passive=True)) == (
            404,
            f"NOT_FOUND - no exchange '{uid}' in vhost '/'",
        )


def test_passive_declare_ignores_type_and_flags(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid, "topic", auto_delete=True)
        ch.exchange_declare(uid, "no-such-type", passive=True, durable=True)
        ch.exchange_delete(uid)


def test_reserved_amq_prefix(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq." + uid, "direct")) == (
            403,
            f"ACCESS_REFUSED - exchange name 'amq.{uid}' contains reserved prefix 'amq.*'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq." + uid, passive=True)) == (
            404,
            f"NOT_FOUND - no exchange 'amq.{uid}' in vhost '/'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_declare("amq.direct", "fanout", durable=True)) == (
            406,
            "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'amq.direct' in vhost "
            "'/': received 'fanout' but current is 'direct'",
        )
    with channel(amqp_url) as ch:
        assert channel_error(lambda: ch.exchange_delete("amq.fanout")) == (
            403,
            "ACCESS_REFUSED - deletion of system exchange 'amq.fanout' in vhost '/' not allowed",
        )


@pytest.mark.parametrize(("type_", "adjective"), [("no-such-type", "unknown"), ("", "invalid")])
def test_unknown_exchange_type_closes_the_connection_503(amqp_url, uid, type_, adjective):
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
        ch.exchange_declare(uid, type_)
    assert (info.value.reply_code, info.value.reply_text) == (
        503,
        f"COMMAND_INVALID - {adjective} exchange type '{type_}'",
    )
    assert not conn.is_open


async def test_unknown_exchange_type_with_aiormq(amqp_url, uid):
    conn = await aiormq.connect(amqp_url)
    ch = await conn.channel()
    with pytest.raises(aiormq.exceptions.ConnectionCommandInvalid):
        await ch.exchange_declare(uid, exchange_type="x-no-such-type")
    assert conn.is_closed


def test_alternate_exchange_of_the_wrong_type_is_refused(amqp_url, uid):
    with channel(amqp_url) as ch:
        assert channel_error(
            lambda: ch.exchange_declare(uid, "direct", arguments={"alternate-exchange": 5})
        ) == (
            406,
            f"PRECONDITION_FAILED - invalid type 'signedint' for arg 'alternate-exchange' in "
            f"exchange '{uid}' in vhost '/'",
        )


# ---------------------------------------------------------------------- the default exchange
@pytest.mark.parametrize(
    "operation",
    [
        lambda ch, q: ch.exchange_declare("", "direct"),
        lambda ch, q: ch.exchange_declare("", "direct", passive=True),
        lambda ch, q: ch.exchange_delete(""),
        lambda ch, q: ch.queue_bind(q, "", q),
        lambda ch, q: ch.queue_unbind(q, "", q),
        lambda ch, q: ch.exchange_bind("", "amq.direct", "k"),
        lambda ch, q: ch.exchange_bind("amq.direct", "", "k"),
        lambda ch, q: ch.exchange_unbind("", "amq.direct", "k"),
    ],
    ids=[
        "declare",
        "passive",
        "delete",
        "queue-bind",
        "queue-unbind",
        "as-destination",
        "as-source",
        "e2e-unbind",
    ],
)
def test_default_exchange_cannot_be_changed(amqp_url, uid, operation):
    with channel(amqp_url) as ch:
        queue = temp_queue(ch)
        assert channel_error(lambda: operation(ch, queue)) == (403, NOT_DEFAULT)


# ---------------------------------------------------------------------- delete
def test_delete_if_unused_counts_only_bindings_from_the_exchange(amqp_url, uid):
    source, target = uid + "-src", uid + "-dst"
    with channel(amqp_url) as ch:
        ch.exchange_declare(source, "fanout")
        ch.exchange_declare(target, "fanout")
        ch.exchange_bind(target, source)
        assert channel_error(lambda: ch.exchange_delete(source, if_unused=True)) == (
            406,
            f"PRECONDITION_FAILED - exchange '{source}' in vhost '/' in use",
        )
    with channel(amqp_url) as ch:
        ch.exchange_delete(target, if_unused=True)  # only bound to: unused
        ch.exchange_delete(source, if_unused=True)  # its binding went with the target
        assert channel_error(lambda: ch.exchange_declare(source, passive=True))[0] == 404


def test_deleting_a_missing_exchange_succeeds(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_delete(uid)
        ch.exchange_delete(uid, if_unused=True)


def test_cr_and_lf_are_dropped_from_names(amqp_url, uid):
    with channel(amqp_url) as ch:
        ch.exchange_declare(uid + "\r\n", "fanout", auto_delete=True)
        ch.exchange_declare(uid, passive=True)
        queue = temp_queue(ch)
        ch.queue_bind(queue, "\n" + uid)
        ch.basic_publish(uid, "", b"m")
        assert bodies(ch, queue) == [b"m"]
