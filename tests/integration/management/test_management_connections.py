"""Connections, channels and consumers as the management HTTP API lists them, and connections
closed through it (seen by pika and aiormq)."""

from __future__ import annotations

import re
import time
from typing import Any

import aiormq
import pika
import pika.exceptions
import pytest

from tests.support.management import (
    amqp_connection,
    q,
)
from tests.support.waiting import wait_until


# ---------------------------------------------------------------------- connections, channels
def test_connections_channels_and_forced_close(api, uid):
    connection = amqp_connection(api, name=uid)
    try:
        plain = connection.channel()
        plain.queue_declare(uid, exclusive=True)
        plain.basic_qos(prefetch_count=3)
        plain.basic_consume(uid, lambda *a: None, consumer_tag=f"{uid}-tag")
        transactional = connection.channel()
        transactional.tx_select()
        transactional.basic_publish("", uid, b"staged")
        connection.process_data_events(0)

        def ours() -> dict[str, Any] | None:
            for item in api.ok("GET", "/api/connections"):
                if item.get("client_properties", {}).get("connection_name") == uid:
                    return item if item.get("channels") == 2 else None
            return None

        doc = wait_until(ours)
        assert re.fullmatch(r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+", doc["name"])
        expected = {"user": "guest", "vhost": "/", "protocol": "AMQP 0-9-1", "channels": 2}
        assert {k: doc[k] for k in expected} == expected
        assert doc["peer_port"] == int(doc["name"].split(" ")[0].rsplit(":", 1)[1])
        assert api.ok("GET", f"/api/connections/{q(doc['name'])}")["name"] == doc["name"]

        def both_channels() -> list[dict[str, Any]] | None:
            found = api.ok("GET", f"/api/connections/{q(doc['name'])}/channels")
            tx = [c for c in found if c.get("transactional")]
            return found if len(found) == 2 and tx and tx[0]["messages_uncommitted"] == 1 else None

        channels = sorted(wait_until(both_channels), key=lambda c: c["number"])
        assert [c["name"] for c in channels] == [
            f"{doc['name']} ({plain.channel_number})",
            f"{doc['name']} ({transactional.channel_number})",
        ]
        assert (channels[0]["consumer_count"], channels[0]["prefetch_count"]) == (1, 3)
        assert (channels[1]["transactional"], channels[1]["confirm"]) == (True, False)
        assert api.ok("GET", f"/api/channels/{q(channels[1]['name'])}")["number"] == (
            transactional.channel_number
        )
        queue = api.ok("GET", f"/api/queues/%2F/{q(uid)}")
        consumer = queue["consumer_details"][0]
        assert (consumer["consumer_tag"], consumer["ack_required"], consumer["prefetch_count"]) == (
            f"{uid}-tag",
            True,
            3,
        )
        assert consumer["channel_details"]["connection_name"] == doc["name"]
        assert consumer["queue"] == {"name": uid, "vhost": "/"}
        assert any(c["consumer_tag"] == f"{uid}-tag" for c in api.ok("GET", "/api/consumers"))
        closed = api.call(
            "DELETE", f"/api/connections/{q(doc['name'])}", headers={"X-Reason": "bye"}
        )
        assert closed.status == 204
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                connection.process_data_events(time_limit=0.1)
        assert (info.value.reply_code, info.value.reply_text) == (320, "CONNECTION_FORCED - bye")
    finally:
        if connection.is_open:
            connection.close()
    # RabbitMQ's management statistics drop a closed connection a moment later: wait for it.
    path = f"/api/connections/{q(doc['name'])}"
    wait_until(lambda: api.call("GET", path).status == 404, message="closed connection listed")


async def test_forced_close_default_reason_reaches_aiormq(api, uid):
    connection = await aiormq.connect(f"{api.amqp_url}?name={uid}")
    try:

        def ours() -> str | None:
            for item in api.ok("GET", "/api/connections"):
                if item.get("client_properties", {}).get("connection_name") == uid:
                    return item["name"]
            return None

        name = wait_until(ours)
        assert api.call("DELETE", f"/api/connections/{q(name)}").status == 204
        with pytest.raises(aiormq.exceptions.ConnectionClosed) as info:
            await connection.closing
        assert info.value.args == (320, "CONNECTION_FORCED - Closed via management plugin")
    finally:
        await connection.close()
