"""The command line against a running rabbitish: typer's CliRunner for each command (state made
by pika, aio-pika and aiormq clients), one real `rabbitish` subprocess pair (serve + queues), the
exit codes and one-line errors, and docs/cli.md kept in step with the typer app."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import aio_pika
import aiormq
import pika
import pika.exceptions
import pytest
from rabbitish.cli import docs
from rabbitish.cli.commands import cli
from typer.testing import CliRunner

from tests.support.broker_process import SCRIPT, BrokerProcess
from tests.support.clients import blocking_connection as _pika
from tests.support.ports import ReservedPort


@pytest.fixture(scope="module")
def url(rabbitish_management_url) -> str:
    return rabbitish_management_url


def run(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=input)


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# ---------------------------------------------------------------------- listings
def test_queues_table_and_json(url, broker_url, uid):
    connection = _pika(broker_url)
    try:
        channel = connection.channel()
        channel.queue_declare(uid, durable=True, arguments={"x-max-length": 50})
        for i in range(3):
            channel.basic_publish("", uid, b"m%d" % i)
        channel.basic_get(uid)
        found = {q["name"]: q for q in run_json("queues", "--url", url)}
        assert (found[uid]["messages_ready"], found[uid]["messages_unacknowledged"]) == (2, 1)
        assert [q["name"] for q in run_json("queues", "--url", url, "--vhost", "/")].count(uid) == 1
        table = run("queues", "--url", url)
        assert table.exit_code == 0
        row = next(line for line in table.stdout.splitlines() if uid in line)
        assert row.split()[:5] == ["/", uid, "2", "1", "0"]
        assert "x-max-length=50" in row and " D " in row
    finally:
        connection.close()
    connection = _pika(broker_url)
    connection.channel().queue_delete(uid)
    connection.close()


async def test_exchanges_bindings_connections_channels(url, broker_url, uid):
    connection = await aio_pika.connect(broker_url, client_properties={"connection_name": uid})
    try:
        channel = await connection.channel()
        exchange = await channel.declare_exchange(uid, "topic", auto_delete=True)
        queue = await channel.declare_queue(uid, exclusive=True)
        await queue.bind(exchange, "a.#")
        await channel.set_qos(prefetch_count=7)

        async def ignore(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            pass

        await queue.consume(ignore)
        exchanges = {e["name"]: e for e in run_json("exchanges", "--url", url)}
        assert (exchanges[uid]["type"], exchanges[uid]["auto_delete"]) == ("topic", True)
        assert "(AMQP default)" in run("exchanges", "--url", url).stdout
        bindings = run_json("bindings", "--url", url)
        assert {"source": uid, "routing_key": "a.#", "destination": uid} in [
            {k: b[k] for k in ("source", "routing_key", "destination")} for b in bindings
        ]
        ours = [
            c
            for c in run_json("connections", "--url", url)
            if c["client_properties"].get("connection_name") == uid
        ]
        assert len(ours) == 1 and ours[0]["user"] == "guest"
        assert ours[0]["name"] in run("connections", "--url", url).stdout
        channels = [
            c
            for c in run_json("channels", "--url", url)
            if c["connection_details"]["name"] == ours[0]["name"]
        ]
        assert [(c["consumer_count"], c["prefetch_count"]) for c in channels] == [(1, 7)]
        peer = ours[0]["peer_port"]
        assert f"127.0.0.1:{peer} (" in run("channels", "--url", url).stdout
    finally:
        await connection.close()


# ---------------------------------------------------------------------- peek, publish, purge
async def test_peek_shows_messages_without_consuming(url, broker_url, uid):
    connection = await aiormq.connect(broker_url)
    try:
        channel = await connection.channel()
        await channel.queue_declare(uid, auto_delete=False)
        props = aiormq.spec.Basic.Properties
        await channel.basic_publish(
            b'{"order": 17, "items": ["tea"]}',
            routing_key=uid,
            properties=props(content_type="application/json", headers={"tenant": "acme"}),
        )
        await channel.basic_publish(b"plain text", routing_key=uid)
        await channel.basic_publish(bytes(range(20)), routing_key=uid)
        result = run("peek", uid, "-n", "2", "--url", url)
        assert result.exit_code == 0, result.stderr
        out = result.stdout
        assert "content_type" in out and "application/json" in out
        assert "tenant" in out and '"acme"' in out
        assert '"order": 17' in out  # JSON bodies are pretty-printed
        assert "plain text" in out
        assert "2 of 3 ready message(s)" in out and "none consumed" in out
        binary = run("peek", uid, "-n", "3", "--url", url).stdout
        assert "00000000  00 01 02 03" in binary  # a hex dump for bytes that are not text
        peeked = run_json("peek", uid, "--url", url)
        assert [m["payload_bytes"] for m in peeked] == [31, 10, 20]
        assert [m["redelivered"] for m in peeked] == [True, True, True]
        got = await channel.basic_get(uid, no_ack=True)
        assert got.body == b'{"order": 17, "items": ["tea"]}' and got.delivery.message_count == 2
        missing = run("peek", "no-such-queue", "--url", url)
        assert (missing.exit_code, missing.stderr) == (
            1,
            "error: no queue 'no-such-queue' in vhost '/'\n",
        )
    finally:
        await channel.queue_delete(uid)
        await connection.close()


def test_publish_with_headers_and_properties(url, broker_url, uid):
    connection = _pika(broker_url)
    try:
        channel = connection.channel()
        channel.queue_declare(uid, auto_delete=True)
        result = run(
            "publish", uid, "hello", "-H", "attempt=3", "-H", "who=me",
            "-p", "message_id=m-1", "-p", "content_type=text/plain", "--persistent",
            "--url", url,
        )  # fmt: skip
        assert (result.exit_code, result.stdout.strip()) == (
            0,
            f"published to the default exchange with routing key '{uid}'",
        )
        assert run("publish", uid, "--url", url, input="from stdin").exit_code == 0
        _method, props, body = channel.basic_get(uid, auto_ack=True)
        assert body == b"hello"
        assert props.headers == {"attempt": 3, "who": "me"}
        assert (props.message_id, props.content_type, props.delivery_mode) == (
            "m-1",
            "text/plain",
            2,
        )
        assert channel.basic_get(uid, auto_ack=True)[2] == b"from stdin"
        unrouted = run("publish", f"{uid}-nobody", "x", "--url", url)
        assert unrouted.exit_code == 1
        assert unrouted.stderr == (
            f"error: published to the default exchange but no queue matched '{uid}-nobody'\n"
        )
        bad_pair = run("publish", uid, "x", "-H", "novalue", "--url", url)
        assert bad_pair.exit_code == 2
        no_exchange = run("publish", "k", "x", "-e", "no-such-exchange", "--url", url)
        assert no_exchange.exit_code == 1
        assert "404 NOT_FOUND - no exchange 'no-such-exchange' in vhost '/'" in no_exchange.stderr
    finally:
        connection.close()


def test_purge_and_delete_report_counts(url, broker_url, uid):
    connection = _pika(broker_url)
    try:
        channel = connection.channel()
        channel.queue_declare(uid)
        channel.confirm_delivery()
        for _ in range(2000):
            channel.basic_publish("", uid, b"x")
        purged = run("purge", uid, "--url", url)
        assert (purged.exit_code, purged.stdout.strip()) == (
            0,
            f"purged 2000 message(s) from '{uid}'",
        )
        assert channel.queue_declare(uid, passive=True).method.message_count == 0
        channel.exchange_declare(uid, "fanout")
        assert run("delete", uid, "--exchange", "--url", url).stdout.strip() == (
            f"deleted exchange '{uid}'"
        )
        channel.basic_publish("", uid, b"x")
        not_empty = run("delete", uid, "--if-empty", "--url", url)
        assert not_empty.exit_code == 1
        assert not_empty.stderr == (
            f"error: 400 bad_request: queue '{uid}' in vhost '/' not empty\n"
        )
        assert run("delete", uid, "--url", url).exit_code == 0
        with pytest.raises(pika.exceptions.ChannelClosedByBroker):
            channel.queue_declare(uid, passive=True)
    finally:
        connection.close()
    gone = run("delete", uid, "--url", url)
    assert (gone.exit_code, gone.stderr) == (1, f"error: no queue '{uid}' in vhost '/'\n")


def test_tx_lists_open_transactions(url, broker_url, uid):
    connection = _pika(broker_url)
    try:
        channel = connection.channel()
        channel.queue_declare(uid, exclusive=True)
        channel.basic_publish("", uid, b"one")
        channel.tx_select()
        channel.basic_publish("", uid, b"staged")
        method, _props, _body = channel.basic_get(uid)
        channel.basic_ack(method.delivery_tag)
        connection.process_data_events(0)
        mine = [
            t
            for t in run_json("tx", "--url", url)
            if t["kind"] == "channel"
            and t["staged_publishes"] == 1
            and t["staged_settlements"] == 1
        ]
        assert len(mine) == 1 and mine[0]["state"] == "active"
        assert mine[0]["channel"] == channel.channel_number
        table = run("tx", "--url", url).stdout
        assert "open transaction(s)" in table and mine[0]["id"] in table and " active " in table
        channel.tx_commit()
        after = run_json("tx", "--url", url)
        assert mine[0]["id"] not in [t["id"] for t in after]  # committed: a new one is open
        assert all(t["staged_publishes"] == 0 for t in after if t["kind"] == "channel")
    finally:
        connection.close()


def test_watch_refreshes_a_queue_table(url, broker_url, uid):
    connection = _pika(broker_url)
    try:
        connection.channel().queue_declare(uid, exclusive=True)
        result = run("watch", "--url", url, "--iterations", "2", "--interval", "0.05")
        assert result.exit_code == 0
        assert result.stdout.count("Queues at") >= 1 and uid in result.stdout
    finally:
        connection.close()


# ---------------------------------------------------------------------- failures
def test_unreachable_broker_and_bad_credentials(url):
    with ReservedPort() as nothing_listens:  # bound but not listening: connections are refused
        port = nothing_listens.port
        result = run("queues", "--url", f"http://127.0.0.1:{port}")
        assert result.exit_code == 3
        assert result.stderr == (
            f"error: cannot reach the management API at http://127.0.0.1:{port} "
            "(connection refused); is the broker running with its management port?\n"
        )
        assert result.stdout == ""
        env = {"RABBITISH_URL": f"http://127.0.0.1:{port}"}
        assert CliRunner(env=env).invoke(cli, ["tx"]).exit_code == 3
    wrong = run("queues", "--url", url.replace("guest:guest", "guest:wrong"))
    assert (wrong.exit_code, wrong.stderr) == (4, "error: 401 not_authorized: Login failed\n")


def test_help_and_docs_are_current():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("serve", "queues", "peek", "publish", "purge", "delete", "tx", "watch"):
        assert command in result.stdout
    assert docs.main(["--check"]) == 0, "docs/cli.md is stale: python -m rabbitish.cli.docs"


# ---------------------------------------------------------------------- real processes
def test_serve_and_queues_as_processes(uid):
    with (
        ReservedPort() as http,
        BrokerProcess("--management-port", str(http.port), command=SCRIPT) as serve,
    ):
        assert serve.management_port == http.port
        connection = _pika(serve.url)
        connection.channel().queue_declare(uid)
        connection.close()
        env = {**os.environ, "RABBITISH_URL": f"http://guest:guest@127.0.0.1:{http.port}"}
        listed = subprocess.run(
            [*SCRIPT, "queues", "--json"], capture_output=True, text=True, env=env, timeout=30
        )
        assert listed.returncode == 0, listed.stderr
        assert [q["name"] for q in json.loads(listed.stdout)] == [uid]
        assert serve.stop() == 0
        assert f"management API on http://127.0.0.1:{http.port}" in serve.output()
        down = subprocess.run([*SCRIPT, "queues"], capture_output=True, text=True, env=env)
        assert down.returncode == 3 and down.stderr.startswith("error: cannot reach")


def test_serve_reports_recovery_progress(tmp_path):
    """A data dir with many persistent messages: serve logs how far recovery got."""
    from rabbitish.testing import running_broker

    with running_broker(data_dir=str(tmp_path), fsync="never") as broker:
        connection = _pika(broker.url)
        channel = connection.channel()
        channel.queue_declare("backlog", durable=True)
        channel.tx_select()
        persistent = pika.BasicProperties(delivery_mode=2)
        for _ in range(10_000):
            channel.basic_publish("", "backlog", b"x", persistent)
        channel.tx_commit()
        connection.close()
    with BrokerProcess(data_dir=tmp_path, command=SCRIPT) as serve:
        progress, ready = serve.output().splitlines()[:2]
        assert "recovering messages: 10000 of 10000" in progress
        assert f"accepting AMQP 0-9-1 connections on 127.0.0.1:{serve.port} " in ready
        connection = _pika(serve.url)
        count = connection.channel().queue_declare("backlog", passive=True).method.message_count
        assert count == 10_000
        connection.close()
        assert serve.stop() == 0
