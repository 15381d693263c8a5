"""GET /api/half-transactions[/{vhost}] and POST /api/half-transactions/{vhost}/{id}/commit or
/rollback (rabbitish's own resource): listing, deciding once durable, 404 for an unknown vhost
or ID, and vhost access."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rabbitish.app import Broker
from rabbitish.engine.auth import Permission
from rabbitish.testing import call_in_loop, running_broker
from tests.support.clients import pika_channel
from tests.support.half import half, ready
from tests.support.management import NOT_FOUND, Api


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    data = tmp_path_factory.mktemp("half-api")
    with running_broker(management=True, data_dir=str(data), vhosts=("/", "other")) as running:
        yield running


@pytest.fixture(scope="module")
def api(broker: Broker) -> Api:
    return Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")


@pytest.fixture
def channel(broker: Broker) -> Iterator[Any]:
    with pika_channel(broker.url) as ch:
        ch.confirm_delivery()
        yield ch


def _hold(ch: Any, txn: str, queues: list[str], count: int = 1, **headers: Any) -> None:
    for queue in queues:
        ch.queue_declare(queue, durable=True, auto_delete=True)
        for n in range(count):
            ch.basic_publish("", queue, b"m%d" % n, half(txn, **headers))


def test_listed_with_messages_queues_age_and_checks(api, channel, uid):
    _hold(channel, uid, [f"{uid}-b", f"{uid}-a"], count=2, **{"x-check-queue": f"{uid}-c"})
    [listed] = [t for t in api.ok("GET", "/api/half-transactions") if t["id"] == uid]
    assert listed["vhost"] == "/" and listed["messages"] == 4
    assert listed["queues"] == [f"{uid}-a", f"{uid}-b"]
    assert listed["checks_sent"] == 0 and listed["check_queue"] == f"{uid}-c"
    assert listed["age_seconds"] >= 0 and listed["created_at"] > 0
    assert uid in [t["id"] for t in api.ok("GET", "/api/half-transactions/%2F")]
    assert api.ok("GET", "/api/half-transactions/other") == []
    missing = api.call("GET", "/api/half-transactions/nope")
    assert (missing.status, missing.json) == (404, NOT_FOUND)
    api.ok("POST", f"/api/half-transactions/%2F/{uid}/rollback")


def test_commit_answers_once_durable(api, broker, channel, uid):
    _hold(channel, uid, [uid], count=3)
    assert ready(channel, uid) == 0
    decided = api.ok("POST", f"/api/half-transactions/%2F/{uid}/commit")
    assert decided == {
        "id": uid,
        "vhost": "/",
        "decision": "commit",
        "messages": 3,
        "queues": [uid],
    }
    journal = broker.node.vhosts["/"].journal
    assert call_in_loop(broker, lambda: journal.writer.synced >= journal.position)
    assert ready(channel, uid) == 3
    assert uid not in [t["id"] for t in api.ok("GET", "/api/half-transactions")]
    # Repeating the decision is a no-op; the opposite one is for an ID no longer held.
    again = api.ok("POST", f"/api/half-transactions/%2F/{uid}/commit")
    assert (again["decision"], again["messages"]) == ("commit", 0)
    late = api.call("POST", f"/api/half-transactions/%2F/{uid}/rollback")
    assert (late.status, late.json) == (404, NOT_FOUND)
    channel.queue_purge(uid)


def test_rollback_discards_and_unknown_ids_are_404(api, channel, uid):
    _hold(channel, f"{uid}/id with spaces", [uid], count=2)
    path = f"/api/half-transactions/%2F/{uid}%2Fid%20with%20spaces/rollback"
    assert api.ok("POST", path)["messages"] == 2
    assert ready(channel, uid) == 0
    for bad in (
        f"/api/half-transactions/%2F/{uid}-unknown/commit",
        f"/api/half-transactions/nope/{uid}/commit",
    ):
        reply = api.call("POST", bad)
        assert (reply.status, reply.json) == (404, NOT_FOUND)
    assert api.call("POST", f"/api/half-transactions/%2F/{uid}/decide").status == 404


def test_vhost_access_and_authentication(api, broker, channel, uid):
    _hold(channel, uid, [uid])

    def fence() -> None:
        broker.node.users.add_user("fenced", "pw", tags=("management",))
        broker.node.users.set_permissions("fenced", "other", Permission())

    call_in_loop(broker, fence)
    fenced = ("fenced", "pw")
    listed = api.call("GET", "/api/half-transactions", auth=fenced)
    assert listed.status == 200 and uid not in [t["id"] for t in listed.json]
    vhost_refused = {
        "error": "not_authorised",
        "reason": "User not authorised to access virtual host",
    }
    listed = api.call("GET", "/api/half-transactions/%2F", auth=fenced)
    assert (listed.status, listed.json) == (401, vhost_refused)
    refused = api.call("POST", f"/api/half-transactions/%2F/{uid}/commit", auth=fenced)
    assert (refused.status, refused.json) == (401, vhost_refused)
    assert api.call("POST", f"/api/half-transactions/%2F/{uid}/commit", auth=None).status == 401
    wrong = api.call("POST", f"/api/half-transactions/%2F/{uid}/commit", auth=("guest", "no"))
    assert wrong.status == 401
    assert ready(channel, uid) == 0  # none of those decided anything
    api.ok("POST", f"/api/half-transactions/%2F/{uid}/rollback")
