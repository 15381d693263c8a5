"""`rabbitish tx` with half transactions: listed beside open channel transactions (table and
--json), `tx commit ID` / `tx rollback ID` (--vhost, --json), exit 1 for an unknown ID."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rabbitish.cli.commands import cli
from typer.testing import CliRunner

from rabbitish.app import Broker
from rabbitish.testing import management_url, running_broker
from tests.support.clients import pika_channel
from tests.support.half import half, prepare, ready


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with running_broker(management=True, vhosts=("/", "other")) as running:
        yield running


@pytest.fixture(scope="module")
def url(broker: Broker) -> str:
    return management_url(broker)


@pytest.fixture
def channel(broker: Broker) -> Iterator[Any]:
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        yield ch


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_tx_lists_half_transactions_beside_open_ones(url, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    channel.basic_publish("", uid, b"a", half(uid, **{"x-check-queue": "chk"}))
    channel.basic_publish("", uid, b"b", half(uid))
    other = channel.connection.channel()
    other.tx_select()
    other.basic_publish("", uid, b"staged")
    listed = run_json("tx", "--url", url)
    [mine] = [t for t in listed if t["kind"] == "half"]
    assert (mine["id"], mine["state"], mine["vhost"], mine["messages"]) == (uid, "prepared", "/", 2)
    assert (mine["queues"], mine["checks_sent"]) == ([uid], 0)
    [open_tx] = [t for t in listed if t["kind"] == "channel"]
    assert open_tx["staged_publishes"] == 1 and open_tx["channel"] == other.channel_number
    table = run("tx", "--url", url)
    assert table.exit_code == 0
    row = next(line for line in table.stdout.splitlines() if line.split()[:1] == [uid])
    cells = row.split()
    assert cells[:4] == [uid, "/", "2", uid] and cells[4].endswith("s")
    assert cells[5:] == ["0", "chk"]
    assert "1 open transaction(s), 1 staged operation(s)" in table.stdout
    assert "1 half transaction(s), 2 held message(s)" in table.stdout
    other.tx_rollback()
    other.close()
    assert run("tx", "rollback", uid, "--url", url).exit_code == 0
    quiet = run("tx", "--url", url).stdout
    assert "no half transactions" in quiet and "open transaction(s)" not in quiet


def test_commit_and_rollback_by_id(url, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    for txn in (f"{uid}-1", f"{uid}-2"):
        channel.basic_publish("", uid, txn.encode(), half(txn))
    done = run("tx", "commit", f"{uid}-1", "--url", url)
    assert (done.exit_code, done.stdout.strip()) == (
        0,
        f"committed half transaction '{uid}-1' in vhost '/': 1 message(s) made visible on {uid}",
    )
    assert ready(channel, uid) == 1
    dropped = run_json("tx", "rollback", f"{uid}-2", "--url", url, "--vhost", "/")
    assert dropped == {
        "id": f"{uid}-2",
        "vhost": "/",
        "decision": "rollback",
        "messages": 1,
        "queues": [uid],
    }
    assert ready(channel, uid) == 1
    assert uid not in json.dumps(run_json("tx", "--url", url))


def test_unknown_ids_and_vhosts_exit_1(url, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    channel.basic_publish("", uid, b"x", half(uid))
    elsewhere = run("tx", "commit", uid, "--url", url, "--vhost", "other")
    assert (elsewhere.exit_code, elsewhere.stderr) == (
        1,
        f"error: no half transaction '{uid}' in vhost 'other'\n",
    )
    assert run("tx", "rollback", f"{uid}-nope", "--url", url, "--json").exit_code == 1
    assert run("tx", "commit", uid, "--url", url, "--vhost", "nope").exit_code == 1
    assert ready(channel, uid) == 0
    assert run("tx", "commit", uid, "--url", url).exit_code == 0
    assert run("tx", "rollback", uid, "--url", url).exit_code == 1  # committed already
    assert ready(channel, uid) == 1


def test_prepared_transactions_listed_with_their_acks_and_decided(url, channel, uid):
    channel.queue_declare(uid, durable=True, auto_delete=True)
    channel.basic_publish("", uid, b"job")
    tx = channel.connection.channel()
    tx.tx_select()
    tx.basic_ack(tx.basic_get(uid)[0].delivery_tag)
    prepare(tx, f"{uid}-xa")
    [mine] = [t for t in run_json("tx", "--url", url) if t["id"] == f"{uid}-xa"]
    assert (mine["kind"], mine["prepared"], mine["messages"], mine["acks"]) == (
        "half",
        True,
        0,
        1,
    )
    table = run("tx", "--url", url).stdout
    row = next(line for line in table.splitlines() if line.split()[:1] == [f"{uid}-xa"])
    assert row.split()[:5] == [f"{uid}-xa", "/", "0", "1", uid]
    assert "1 half transaction(s), 0 held message(s); 1 prepared, 1 locked ack(s)" in table
    done = run("tx", "rollback", f"{uid}-xa", "--url", url)
    assert done.stdout.strip() == (
        f"rolled back half transaction '{uid}-xa' in vhost '/': "
        "0 message(s) discarded; 1 ack(s) put back, redelivered"
    )
    assert ready(channel, uid) == 1
    tx.close()
