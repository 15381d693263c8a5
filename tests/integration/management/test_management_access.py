"""Users, permissions and vhosts through the management API, compared with a real RabbitMQ:
JSON shapes, status codes, error bodies; tags decide who may use the API at all and who may
manage users, permissions decide what a management user may touch. Password hashes are
RabbitMQ's: a hash made by either broker logs in on the other."""

from __future__ import annotations

import pika
import pika.exceptions
import pytest

from rabbitish.engine.auth import check_password, hash_password
from tests.support.management import Api, get_body, publish_body
from tests.support.waiting import wait_until

PASSWORD = "s3cret"
NOT_MANAGEMENT = {"error": "not_authorised", "reason": "Not management user"}
NOT_ADMIN = {"error": "not_authorised", "reason": "Not administrator user"}
ACCESS_REFUSED = {"error": "not_authorised", "reason": "Access refused."}


def _user(api: Api, name: str, tags: str, **permissions: str) -> tuple[str, str]:
    api.ok("PUT", f"/api/users/{name}", {"password": PASSWORD, "tags": tags})
    if permissions:
        api.ok("PUT", f"/api/permissions/%2F/{name}", permissions)
    return name, PASSWORD


def _closed_by_broker(conn: pika.BlockingConnection) -> pika.exceptions.ConnectionClosedByBroker:
    """Wait until the broker closes `conn`; its close."""
    closed: list[pika.exceptions.ConnectionClosedByBroker] = []

    def gone() -> bool:
        try:
            conn.process_data_events(0.05)
        except pika.exceptions.ConnectionClosedByBroker as err:
            closed.append(err)
        return bool(closed)

    wait_until(gone, timeout=10)
    return closed[0]


def test_user_document_and_hash_format(api: Api) -> None:
    """RabbitMQ's shape; the stored hash is base64(salt + sha256(salt + password))."""
    _user(api, "acc-shape", "management,policymaker")
    doc = api.ok("GET", "/api/users/acc-shape")
    assert list(doc) == ["name", "password_hash", "hashing_algorithm", "tags", "limits"]
    assert doc["hashing_algorithm"] == "rabbit_password_hashing_sha256"
    assert doc["tags"] == ["management", "policymaker"]
    assert doc["limits"] == {}
    assert check_password(PASSWORD, doc["password_hash"])
    assert not check_password("other", doc["password_hash"])
    assert doc in api.ok("GET", "/api/users")


def test_a_hash_made_here_logs_in_on_both_brokers(api: Api) -> None:
    """A definitions-style user (password_hash, no password) made with rabbitish's hashing."""
    api.ok(
        "PUT",
        "/api/users/acc-hashed",
        {"password_hash": hash_password("from-hash"), "tags": "administrator"},
    )
    api.ok("PUT", "/api/permissions/%2F/acc-hashed", {"configure": "", "write": "", "read": ""})
    reply = api.call("GET", "/api/whoami", auth=("acc-hashed", "from-hash"))
    assert (reply.status, reply.json) == (200, {"name": "acc-hashed", "tags": ["administrator"]})
    url = api.amqp_url.replace("guest:guest", "acc-hashed:from-hash")
    pika.BlockingConnection(pika.URLParameters(url)).close()


def test_tags_decide_api_access(api: Api) -> None:
    plain = _user(api, "acc-plain", "")
    assert api.call("GET", "/api/whoami", auth=plain).json == NOT_MANAGEMENT
    assert api.call("GET", "/api/overview", auth=plain).status == 401
    monitor = _user(api, "acc-monitor", "monitoring")
    assert api.call("GET", "/api/whoami", auth=monitor).json == {
        "name": "acc-monitor",
        "tags": ["monitoring"],
    }
    reply = api.call("GET", "/api/users", auth=monitor)
    assert (reply.status, reply.json) == (401, NOT_ADMIN)
    management = _user(api, "acc-manager", "management")
    for method, path in (
        ("GET", "/api/users"),
        ("GET", "/api/permissions"),
        ("PUT", "/api/users/acc-x"),
        ("DELETE", "/api/users/acc-plain"),
        ("PUT", "/api/vhosts/acc-v"),
    ):
        reply = api.call(method, path, {} if method == "PUT" else None, auth=management)
        assert (reply.status, reply.json) == (401, NOT_ADMIN), (method, path)


def test_permissions_decide_resource_access(api: Api) -> None:
    manager = _user(api, "acc-limited", "management", configure="^ac-", write="^aw-", read="^ar-")
    api.ok("PUT", "/api/queues/%2F/acc-q", {})
    reply = api.call("PUT", "/api/queues/%2F/acc-q", {}, auth=manager)
    assert (reply.status, reply.json) == (401, ACCESS_REFUSED)
    assert api.call("PUT", "/api/queues/%2F/ac-q", {}, auth=manager).status in (201, 204)
    assert api.call("DELETE", "/api/queues/%2F/ac-q", auth=manager).status == 204
    reply = api.call("PUT", "/api/exchanges/%2F/acc-x", {"type": "direct"}, auth=manager)
    assert (reply.status, reply.json) == (401, ACCESS_REFUSED)
    reply = api.call(
        "POST", "/api/exchanges/%2F/amq.default/publish", publish_body("acc-q", "m"), auth=manager
    )
    assert (reply.status, reply.json) == (
        400,
        {
            "error": "bad_request",
            "reason": "403 ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' "
            "refused for user 'acc-limited'",
        },
    )
    reply = api.call("POST", "/api/queues/%2F/acc-q/get", get_body(1), auth=manager)
    assert (reply.status, reply.json) == (
        401,
        {
            "error": "not_authorised",
            "reason": "ACCESS_REFUSED - access to queue 'acc-q' in vhost '/' refused for user "
            "'acc-limited'",
        },
    )


def test_permission_documents(api: Api) -> None:
    _user(api, "acc-perm", "", configure="^c", write="^w", read="^r")
    expected = {"user": "acc-perm", "vhost": "/", "configure": "^c", "write": "^w", "read": "^r"}
    assert api.ok("GET", "/api/permissions/%2F/acc-perm") == expected
    assert api.ok("GET", "/api/users/acc-perm/permissions") == [expected]
    assert expected in api.ok("GET", "/api/permissions")
    by_vhost = [p for p in api.ok("GET", "/api/vhosts/%2F/permissions") if p["user"] == "acc-perm"]
    assert [list(p) for p in by_vhost] == [["vhost", "user", "configure", "write", "read"]]
    assert api.call("PUT", "/api/permissions/%2F/acc-perm", expected).status == 204
    assert api.call("DELETE", "/api/permissions/%2F/acc-perm").status == 204
    assert api.call("GET", "/api/permissions/%2F/acc-perm").status == 404
    assert api.call("DELETE", "/api/permissions/%2F/acc-perm").status == 404


def test_permission_errors(api: Api) -> None:
    _user(api, "acc-errors", "")
    reply = api.call("PUT", "/api/permissions/%2F/acc-errors", {"configure": ".*"})
    assert (reply.status, reply.json) == (
        400,
        {"error": "bad_request", "reason": "[{key_missing,write},{key_missing,read}]"},
    )
    full = {"configure": ".*", "write": ".*", "read": ".*"}
    for path in ("/api/permissions/acc-no-vhost/acc-errors", "/api/permissions/%2F/acc-nobody"):
        reply = api.call("PUT", path, full)
        assert (reply.status, reply.json) == (
            400,
            {"error": "bad_request", "reason": "vhost_or_user_not_found"},
        )
    reply = api.call("PUT", "/api/permissions/%2F/acc-errors", {**full, "configure": "("})
    assert reply.status == 400 and reply.json["reason"][0] == "invalid_regexp"
    assert api.call("DELETE", "/api/users/acc-nobody").status == 404
    assert api.call("GET", "/api/users/acc-nobody").status == 404


def test_vhosts_are_created_described_and_deleted(api: Api) -> None:
    assert api.call("PUT", "/api/vhosts/acc-vhost", {"description": "d", "tags": "a,b"}).status in (
        201,
        204,
    )
    doc = api.ok("GET", "/api/vhosts/acc-vhost")
    assert (doc["name"], doc["description"], doc["tags"]) == ("acc-vhost", "d", ["a", "b"])
    assert doc["metadata"] == {"description": "d", "tags": ["a", "b"]}
    assert api.call("PUT", "/api/vhosts/acc-vhost", {}).status == 204
    assert api.call("DELETE", "/api/vhosts/acc-vhost").status == 204
    assert api.call("DELETE", "/api/vhosts/acc-vhost").status == 404
    assert api.call("GET", "/api/vhosts/acc-vhost").status == 404


def test_creating_a_vhost_grants_its_creator_full_permissions(api: Api) -> None:
    """PUT /api/vhosts/V and a definitions import that brings a new vhost grant the user making
    the request '.*' three times on it, so its next declaration there succeeds; updating a
    vhost that exists grants nothing."""
    admin, _ = _user(api, "acc-creator", "administrator")
    full = {"configure": ".*", "write": ".*", "read": ".*"}
    try:
        assert api.call("PUT", "/api/vhosts/acc-made", auth=(admin, PASSWORD)).status == 201
        assert api.ok("GET", "/api/vhosts/acc-made/permissions") == [
            {"vhost": "acc-made", "user": admin, **full}
        ]
        queue = {"durable": False, "auto_delete": False, "arguments": {}}
        reply = api.call("PUT", "/api/queues/acc-made/q", queue, auth=(admin, PASSWORD))
        assert reply.status == 201
        api.ok("DELETE", f"/api/permissions/acc-made/{admin}")
        assert api.call("PUT", "/api/vhosts/acc-made", auth=(admin, PASSWORD)).status == 204
        assert api.ok("GET", "/api/vhosts/acc-made/permissions") == []
        definitions = {"vhosts": [{"name": "acc-made"}, {"name": "acc-imported"}]}
        reply = api.call("POST", "/api/definitions", definitions, auth=(admin, PASSWORD))
        assert reply.status in (200, 201, 204)
        assert api.ok("GET", "/api/vhosts/acc-made/permissions") == []
        assert api.ok("GET", "/api/vhosts/acc-imported/permissions") == [
            {"vhost": "acc-imported", "user": admin, **full}
        ]
    finally:
        for vhost in ("acc-made", "acc-imported"):
            api.call("DELETE", f"/api/vhosts/{vhost}")
        api.call("DELETE", f"/api/users/{admin}")


@pytest.mark.parametrize("tags", ["administrator", "monitoring", "policymaker", "management"])
def test_every_management_tag_opens_the_api(api: Api, tags: str) -> None:
    user = _user(api, f"acc-tag-{tags}", tags)
    assert api.call("GET", "/api/whoami", auth=user).json == {"name": user[0], "tags": [tags]}


def test_deleting_a_vhost_closes_its_connections(api: Api) -> None:
    api.ok("PUT", "/api/vhosts/acc-doomed", {})
    api.ok(
        "PUT", "/api/permissions/acc-doomed/guest", {"configure": ".*", "write": ".*", "read": ".*"}
    )
    conn = pika.BlockingConnection(
        pika.URLParameters(api.amqp_url.rsplit("/", 1)[0] + "/acc-doomed")
    )
    conn.channel().queue_declare("acc-doomed-q", durable=True)
    assert api.call("DELETE", "/api/vhosts/acc-doomed").status == 204
    closed = [_closed_by_broker(conn)]
    # RabbitMQ says "is deleted", or "is down" when the vhost's processes stopped first (a race
    # inside RabbitMQ); rabbitish always says "is deleted".
    texts = {f"CONNECTION_FORCED - vhost 'acc-doomed' is {how}" for how in ("deleted", "down")}
    if api.kind == "rabbitish":
        texts = {"CONNECTION_FORCED - vhost 'acc-doomed' is deleted"}
    assert closed[0].reply_code == 320 and closed[0].reply_text in texts
    assert api.call("GET", "/api/queues/acc-doomed").status == 404


def test_deleting_a_user_closes_its_connections(api: Api) -> None:
    _user(api, "acc-leaving", "", configure=".*", write=".*", read=".*")
    url = api.amqp_url.replace("guest:guest", f"acc-leaving:{PASSWORD}")
    conn = pika.BlockingConnection(pika.URLParameters(url))
    assert api.call("DELETE", "/api/users/acc-leaving").status == 204
    closed = [_closed_by_broker(conn)]
    assert (closed[0].reply_code, closed[0].reply_text) == (
        320,
        "CONNECTION_FORCED - user 'acc-leaving' is deleted",
    )


def test_management_users_see_only_their_vhosts(api: Api) -> None:
    api.ok("PUT", "/api/vhosts/acc-hidden", {})
    user = _user(api, "acc-narrow", "management", configure=".*", write=".*", read=".*")
    refused = {"error": "not_authorised", "reason": "User not authorised to access virtual host"}
    for method, path in (
        ("GET", "/api/queues/acc-hidden"),
        ("GET", "/api/exchanges/acc-hidden"),
        ("PUT", "/api/queues/acc-hidden/q"),
    ):
        reply = api.call(method, path, {} if method == "PUT" else None, auth=user)
        assert (reply.status, reply.json) == (401, refused), path
    assert api.call("GET", "/api/queues/acc-no-such-vhost", auth=user).status == 404
    reply = api.call("PUT", "/api/queues/acc-no-such-vhost/q", {}, auth=user)
    assert (reply.status, reply.json) == (404, {"error": "not_found", "reason": "vhost_not_found"})
    for path in ("/api/vhosts/acc-hidden", "/api/vhosts/acc-no-such-vhost"):
        reply = api.call("GET", path, auth=user)
        assert (reply.status, reply.json) == (401, NOT_ADMIN), path
    names = [v["name"] for v in api.call("GET", "/api/vhosts", auth=user).json]
    assert "/" in names and "acc-hidden" not in names
