"""GET /api/transactions: the node's open transactions as the engine's registry holds them
(rabbitish's own endpoint; RabbitMQ has no transaction listing)."""

from __future__ import annotations

import pika

from rabbitish.testing import running_broker
from tests.support.management import Api


def test_open_transactions_are_listed_with_what_they_staged(uid):
    with running_broker(management=True) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        assert api.ok("GET", "/api/transactions") == []
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        try:
            ch = conn.channel()
            ch.queue_declare(uid, exclusive=True)
            ch.basic_publish("", uid, b"one")
            ch.tx_select()
            ch.basic_publish("", uid, b"staged")
            method, _props, _body = ch.basic_get(uid)
            ch.basic_ack(method.delivery_tag)
            [listed] = api.ok("GET", "/api/transactions")
            assert listed["state"] == "active" and listed["channel"] == ch.channel_number
            assert (listed["staged_publishes"], listed["staged_settlements"]) == (1, 1)
            assert listed["staged_acquisitions"] == 0
            assert [t["id"] for t in api.ok("GET", "/api/transactions/%2F")] == [listed["id"]]
            ch.tx_commit()
            [fresh] = api.ok("GET", "/api/transactions")
            assert fresh["id"] != listed["id"]  # committed; the channel's next one is open
            assert (fresh["staged_publishes"], fresh["staged_settlements"]) == (0, 0)
        finally:
            conn.close()
        assert api.ok("GET", "/api/transactions") == []
