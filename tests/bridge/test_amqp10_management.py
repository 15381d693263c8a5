"""AMQP 1.0 clients in the management API and the CLI, beside 0-9-1 ones: the connection (protocol
"AMQP 1-0"), its session listed as a channel, its links (`/api/links`, RabbitMQ 4.x's
`/api/connections/{name}/sessions`, `rabbitish links`) and open 1.0 transactions
(`/api/transactions`, `rabbitish tx`). Real clients over TCP: qpid-proton, pika and raw frames."""

from __future__ import annotations

import json
from typing import Any

import pika
import pytest
from rabbitish.bridge.codec import Symbol, UInt, encode, encode_frame
from rabbitish.bridge.codec.definitions import (
    AmqpValue,
    Attach,
    Begin,
    Coordinator,
    Declare,
    Declared,
    Disposition,
    Flow,
    Source,
    Transfer,
)
from rabbitish.bridge.links import CREDIT
from rabbitish.cli.commands import cli
from typer.testing import CliRunner

from tests.support.amqp10 import Raw
from tests.support.management import Api, q
from tests.support.raw_amqp import host_port
from tests.support.waiting import wait_until

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message, symbol  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

WINDOWS = {"incoming_window": UInt(100), "outgoing_window": UInt(100)}


@pytest.fixture
def api(rabbitish_broker, rabbitish_management_url) -> Api:
    return Api(rabbitish_broker.url, f"http://127.0.0.1:{rabbitish_broker.management_port}", "")


def cli_json(url: str, *args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--url", url, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def cli_table(url: str, *args: str) -> str:
    """The table, wide enough that long test names stay on one line."""
    result = CliRunner(env={"COLUMNS": "400"}).invoke(cli, [*args, "--url", url])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def connection_named(api: Api, uid: str) -> dict[str, Any]:
    """The connection whose client called itself `uid` (0-9-1 client property or 1.0 open
    property `connection_name`)."""
    return wait_until(
        lambda: next(
            (
                c
                for c in api.ok("GET", "/api/connections")
                if c["client_properties"].get("connection_name") == uid
            ),
            None,
        )
    )


def row_of(table: str, text: str) -> str:
    return next(line for line in table.splitlines() if text in line)


def test_a_1_0_connection_with_its_session_and_links_beside_a_0_9_1_one(
    api, rabbitish_management_url, broker_url, uid
):
    url = rabbitish_management_url
    host, port = host_port(broker_url)
    params = pika.URLParameters(broker_url)
    params.client_properties = {"connection_name": f"{uid}-091"}
    classic = pika.BlockingConnection(params)
    conn = BlockingConnection(
        f"amqp://guest:guest@{host}:{port}",
        timeout=5,
        properties={symbol("connection_name"): uid},
    )
    try:
        sender = conn.create_sender(f"/queue/{uid}", name=f"{uid}-sender")
        for body in (b"one", b"two"):
            sender.send(Message(body=body, inferred=True))  # returns once settled
        receiver = conn.create_receiver(f"/queue/{uid}", credit=5, name=f"{uid}-receiver")
        got = []
        for _ in range(2):
            message = receiver.receive(timeout=5)  # a view into proton's buffer: copy it now
            got.append(bytes(message.body))
        assert got == [b"one", b"two"]  # and neither settled yet

        # connections: both protocols, side by side
        mine = connection_named(api, uid)
        other = connection_named(api, f"{uid}-091")
        assert (mine["protocol"], other["protocol"]) == ("AMQP 1-0", "AMQP 0-9-1")
        assert (mine["user"], mine["vhost"], mine["channels"]) == ("guest", "/", 1)
        name = mine["name"]
        assert api.ok("GET", "/api/overview")["object_totals"]["connections"] >= 2

        # the session, listed as a channel
        [channel] = api.ok("GET", f"/api/connections/{q(name)}/channels")
        assert channel["protocol"] == "AMQP 1-0" and channel["name"] == f"{name} (0)"
        assert (channel["consumer_count"], channel["messages_unacknowledged"]) == (1, 2)
        assert channel["transactional"] is False
        assert channel in api.ok("GET", "/api/channels")
        single = api.ok("GET", f"/api/channels/{q(channel['name'])}")
        assert {k: single[k] for k in channel} == channel
        assert [c["consumer_tag"] for c in single["consumer_details"]] == [f"{uid}-receiver"]
        [consumer] = [c for c in api.ok("GET", "/api/consumers") if c["queue"]["name"] == uid]
        assert consumer["channel_details"]["name"] == channel["name"]
        assert consumer["consumer_tag"] == f"{uid}-receiver"

        # the links, flat (rabbitish's /api/links) and by session (RabbitMQ 4.x's shape)
        links = [link for link in api.ok("GET", "/api/links") if link["connection"] == name]
        assert [(link["name"], link["role"], link["direction"]) for link in links] == [
            (f"{uid}-sender", "receiver", "incoming"),
            (f"{uid}-receiver", "sender", "outgoing"),
        ]
        incoming, outgoing = links
        assert incoming["address"] == outgoing["address"] == f"/queue/{uid}"
        assert (incoming["queue"], incoming["exchange"]) == (uid, "")
        assert (outgoing["queue"], outgoing["exchange"]) == (uid, None)
        assert (incoming["delivery_count"], incoming["credit"]) == (2, CREDIT - 2)
        assert (outgoing["delivery_count"], outgoing["unsettled"]) == (2, 2)
        assert not incoming["coordinator"] and not outgoing["coordinator"]
        assert incoming["channel"] == channel["name"] and incoming["session"] == 0
        assert [link["name"] for link in api.ok("GET", "/api/links/%2F")].count(f"{uid}-sender")
        [session] = api.ok("GET", f"/api/connections/{q(name)}/sessions")
        assert (session["channel_number"], session["outgoing_unsettled_deliveries"]) == (0, 2)
        assert [link["link_name"] for link in session["incoming_links"]] == [f"{uid}-sender"]
        [out] = session["outgoing_links"]
        assert (out["link_name"], out["queue_name"], out["source_address"]) == (
            f"{uid}-receiver",
            uid,
            f"/queue/{uid}",
        )
        refused = api.call("GET", f"/api/connections/{q(other['name'])}/sessions")
        assert refused.status == 400
        assert refused.json == {
            "error": "bad_request",
            "reason": "connection does not use AMQP 1.0",
        }

        # the command line
        assert "AMQP 1-0" in row_of(cli_table(url, "connections"), name)
        assert "AMQP 0-9-1" in row_of(cli_table(url, "connections"), other["name"])
        assert "AMQP 1-0" in row_of(cli_table(url, "channels"), f":{mine['peer_port']} (0)")
        table = cli_table(url, "links")
        assert f"/queue/{uid}" in row_of(table, f"{uid}-sender")
        assert " in " in row_of(table, f"{uid}-sender")
        assert " out " in row_of(table, f"{uid}-receiver")
        listed = [link for link in cli_json(url, "links") if link["connection"] == name]
        assert listed == links
    finally:
        conn.close()
        classic.close()
    wait_until(lambda: not [link for link in api.ok("GET", "/api/links") if uid in link["name"]])
    api.ok("DELETE", f"/api/queues/%2F/{q(uid)}")


def next_frame(client: Raw, kind: type, limit: int = 10) -> Any:
    """The next frame body of this kind (flows and other frames before it are skipped)."""
    for _ in range(limit):
        body = client.frame().body
        if isinstance(body, kind):
            return body
    raise AssertionError(f"no {kind.__name__} in {limit} frames")


def test_an_open_1_0_transaction_is_listed_with_its_protocol(
    api, rabbitish_management_url, broker_url, uid
):
    url = rabbitish_management_url
    client = Raw(broker_url)
    try:
        client.sasl_plain()
        client.open(properties={Symbol("connection_name"): uid})
        client.send(encode_frame(0, Begin(next_outgoing_id=UInt(0), **WINDOWS)))
        assert isinstance(client.frame().body, Begin)
        attach = Attach(
            name=f"{uid}-txn",
            handle=UInt(0),
            role=False,
            source=Source(),
            target=Coordinator(),
        )
        client.send(encode_frame(0, attach))
        answer = next_frame(client, Attach)
        if answer.target is None:
            pytest.skip("needs the 1.0 coordinator")
        next_frame(client, Flow)  # credit for declares
        declare = Transfer(
            handle=UInt(0), delivery_id=UInt(0), delivery_tag=b"\x00", message_format=UInt(0)
        )
        client.send(encode_frame(0, declare, encode(AmqpValue(Declare()))))
        declared = next_frame(client, Disposition).state
        assert isinstance(declared, Declared)

        name = connection_named(api, uid)["name"]
        [listed] = [t for t in api.ok("GET", "/api/transactions") if t["connection"] == name]
        assert (listed["protocol"], listed["channel"], listed["state"]) == ("AMQP 1-0", 0, "active")
        assert listed["vhost"] == "/"
        [coordinator] = [link for link in api.ok("GET", "/api/links") if link["connection"] == name]
        assert (coordinator["coordinator"], coordinator["role"]) == (True, "receiver")
        [channel] = api.ok("GET", f"/api/connections/{q(name)}/channels")
        assert channel["transactional"] is True
        assert listed["id"] in [t["id"] for t in cli_json(url, "tx")]
        assert "AMQP 1-0" in row_of(cli_table(url, "tx"), listed["id"])
        assert "(transaction coordinator)" in row_of(cli_table(url, "links"), f"{uid}-txn")
    finally:
        client.close()
