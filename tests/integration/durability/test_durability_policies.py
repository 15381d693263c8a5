"""Policies and operator policies survive a restart and act on the queues that come back with
them; a cleared policy stays cleared."""

from __future__ import annotations

from rabbitish.testing import management_url, running_broker
from tests.support.management import Api


def _api(broker) -> Api:
    return Api(broker.url, management_url(broker).replace("guest:guest@", ""), "rabbitish")


def test_policies_survive_a_restart(data, uid):
    body = {"pattern": f"^{uid}", "definition": {"max-length": 2}, "apply-to": "queues"}
    operator = {"pattern": f"^{uid}", "definition": {"message-ttl": 60000}, "priority": 1.5}
    with running_broker(management=True, data_dir=data) as broker:
        api = _api(broker)
        assert api.call("PUT", f"/api/policies/%2F/{uid}", body).status == 201
        assert api.call("PUT", f"/api/policies/%2F/{uid}-gone", body).status == 201
        assert api.call("PUT", f"/api/operator-policies/%2F/{uid}", operator).status == 201
        assert api.call("DELETE", f"/api/policies/%2F/{uid}-gone").status == 204
        assert api.call("PUT", f"/api/queues/%2F/{uid}", {"durable": True}).status == 201
    with running_broker(management=True, data_dir=data) as broker:
        api = _api(broker)
        assert [p["name"] for p in api.ok("GET", "/api/policies")] == [uid]
        assert api.ok("GET", f"/api/policies/%2F/{uid}")["definition"] == {"max-length": 2}
        assert api.ok("GET", f"/api/operator-policies/%2F/{uid}")["priority"] == 1.5
        doc = api.ok("GET", f"/api/queues/%2F/{uid}")
        assert (doc["policy"], doc["operator_policy"]) == (uid, uid)
        assert doc["effective_policy_definition"] == {"max-length": 2, "message-ttl": 60000}
        assert broker.node.vhosts["/"].queues[uid].args.max_length == 2
