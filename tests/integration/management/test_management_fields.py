"""The management documents carry the fields RabbitMQ 3.10 returns (key sets compared with a
recording from RabbitMQ: rabbitmq_3_10_fields.json, tests/support/management_fields.py), with
real values: the same figures as RabbitMQ for the same traffic."""

from __future__ import annotations

import json
from contextlib import ExitStack

from rabbitish.testing import management_url, running_broker
from tests.support.management import NOT_FOUND, Api, q
from tests.support.management_fields import RECORDING, key_paths, scenario
from tests.support.waiting import wait_until

# Fields that describe Erlang processes, clustering, TLS options or the HTTP server's internals:
# rabbitish has none of these to report.
NOT_APPLICABLE = (
    "backing_queue_status",
    "garbage_collection",
    "memory",
    "reductions",
    "reductions_details",
    "recoverable_slaves",
    "user_who_performed_action",
    "contexts[].",
    "listeners[].socket_opts",
    "erlang_full_version",
    "erlang_version",
    "enable_queue_totals",
    "release_series_support_status",
    "sample_retention_policies",
    "statistics_db_event_queue",
    "message_stats.disk_reads",
    "message_stats.disk_writes",
)
RABBITISH_ONLY = {"queue": {"messages_half", "messages_prepared"}, "channel": {"protocol"}}


def _applicable(path: str) -> bool:
    return not any(path == p or path.startswith((p + ".", p + "_", p)) for p in NOT_APPLICABLE)


def test_documents_have_rabbitmq_fields(uid):
    recorded = json.loads(RECORDING.read_text())
    with running_broker(management=True) as broker, ExitStack() as stack:
        api = Api(broker.url, management_url(broker).replace("guest:guest@", ""), "rabbitish")
        docs = scenario(api, uid, stack)
    for kind, doc in docs.items():
        mine = key_paths(doc)
        missing = sorted(p for p in set(recorded[kind]) - mine if _applicable(p))
        assert missing == [], kind
        extra = mine - set(recorded[kind]) - RABBITISH_ONLY.get(kind, set())
        assert sorted(extra) == [], kind


def test_not_found_body(api):
    for path in ("/api/queues/%2F/nope", "/api/exchanges/%2F/nope", "/api/no-such-thing"):
        reply = api.call("GET", path)
        assert (reply.status, reply.json) == (404, NOT_FOUND)


def test_figures_match_rabbitmq(api, uid):
    """Four messages (two persistent) through a confirm channel, two held unacknowledged by a
    consumer with prefetch 2: the counters RabbitMQ shows, rabbitish shows."""
    with ExitStack() as stack:
        docs = scenario(api, uid, stack)

        def settled() -> dict | None:
            queue = api.ok("GET", f"/api/queues/%2F/{q(uid + '-q')}")
            exchange = api.ok("GET", f"/api/exchanges/%2F/{q(uid + '-x')}")
            channel = api.ok("GET", f"/api/channels/{q(docs['channel']['name'])}")
            wanted = (  # RabbitMQ's figures arrive in parts: wait for the last of each
                queue.get("message_stats", {}).get("deliver") == 2
                and queue.get("message_bytes") == 40
                and exchange.get("message_stats", {}).get("publish_out") == 4
                and channel.get("message_stats", {}).get("confirm") == 4
            )
            return {"queue": queue, "exchange": exchange, "channel": channel} if wanted else None

        found = wait_until(settled, timeout=30)
    queue = found["queue"]
    assert {k: queue[k] for k in FIGURES} == FIGURES
    assert queue["message_stats"]["publish"] == 4
    assert 0 <= queue["consumer_utilisation"] <= 1  # RabbitMQ averages it over time
    stats = found["exchange"]["message_stats"]
    assert (stats["publish_in"], stats["publish_out"]) == (4, 4)
    channel = found["channel"]
    assert channel["messages_unconfirmed"] == 0
    assert {k: channel["message_stats"][k] for k in ("publish", "confirm", "deliver")} == {
        "publish": 4,
        "confirm": 4,
        "deliver": 2,
    }
    connection = docs["connection"]
    assert connection["auth_mechanism"] == "PLAIN"
    assert connection["recv_oct"] > 0 and connection["send_oct"] > 0
    assert connection["recv_cnt"] > 0 and connection["send_cnt"] > 0
    assert isinstance(connection["connected_at"], int)
    assert docs["overview"]["churn_rates"]["connection_created"] >= 1
    assert docs["overview"]["churn_rates"]["queue_declared"] >= 1


FIGURES = {
    "messages": 4,
    "messages_ready": 2,
    "messages_unacknowledged": 2,
    "messages_persistent": 2,
    "message_bytes": 40,
    "message_bytes_ready": 20,
    "message_bytes_unacknowledged": 20,
    "message_bytes_persistent": 20,
    "messages_paged_out": 0,
    "head_message_timestamp": None,
}
