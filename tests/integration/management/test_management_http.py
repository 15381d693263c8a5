"""The management HTTP API itself over real HTTP: authentication, unknown paths and methods,
the overview, listing parameters (columns, sorting, pages), rates and the listener port."""

from __future__ import annotations

import socket

import aio_pika
import aiohttp

import rabbitish
from tests.support.management import (
    GUEST,
    NOT_FOUND,
    amqp_connection,
    publish_body,
    q,
)
from tests.support.waiting import wait_until


# ---------------------------------------------------------------------- auth, routing
def test_basic_auth_and_whoami(api):
    anonymous = api.call("GET", "/api/overview", auth=None)
    assert anonymous.status == 401
    assert anonymous.headers["www-authenticate"] == 'Basic realm="RabbitMQ Management"'
    assert anonymous.text == ""
    wrong = api.call("GET", "/api/queues", auth=("guest", "nope"))
    assert wrong.status == 401
    assert wrong.json == {"error": "not_authorized", "reason": "Login failed"}
    assert api.call("GET", "/api/whoami", auth=("nobody", "x")).status == 401
    assert api.ok("GET", "/api/whoami") == {"name": "guest", "tags": ["administrator"]}


def test_unknown_paths_and_methods(api):
    missing = api.call("GET", "/api/nonexistent")
    assert (missing.status, missing.json) == (404, NOT_FOUND)
    wrong_method = api.call("PATCH", "/api/queues/%2F/anything", {})
    assert wrong_method.status == 405
    allowed = {m.strip() for m in wrong_method.headers["allow"].split(",")}
    assert {"GET", "PUT", "DELETE"} <= allowed
    assert api.call("DELETE", "/api/overview").status == 405
    assert api.call("GET", "/api/queues/no-such-vhost").status == 404
    assert api.call("GET", "/api/queues/no-such-vhost/x").json == NOT_FOUND
    assert api.ok("GET", "/api/health/checks/alarms") == {"status": "ok"}


def test_one_trailing_slash_is_the_same_path(api, uid):
    """RabbitMQ's router ignores one trailing slash (RabbitMQ's 4.x AMQP client's own tests
    delete vhosts at `/api/vhosts/NAME/`)."""
    assert api.call("PUT", f"/api/vhosts/{uid}/", {}).status == 201
    assert uid in [v["name"] for v in api.ok("GET", "/api/vhosts/")]
    assert api.ok("GET", f"/api/queues/{uid}/") == []
    assert api.call("DELETE", f"/api/vhosts/{uid}/").status == 204
    assert api.call("GET", f"/api/vhosts/{uid}/").status == 404


def test_overview_vhosts_and_listeners(api):
    connection = amqp_connection(api)
    try:
        version = connection._impl.server_properties["version"]
        version = version.decode() if isinstance(version, bytes) else version
        overview = api.ok("GET", "/api/overview")
        assert overview["rabbitmq_version"] == version
        amqp_port = int(api.amqp_url.rsplit(":", 1)[1].split("/")[0])
        listeners = {item["protocol"]: item["port"] for item in overview["listeners"]}
        assert listeners["amqp"] == amqp_port
        assert listeners["http"] == int(api.base.rsplit(":", 1)[1])
        assert set(overview["object_totals"]) >= {
            "channels",
            "connections",
            "consumers",
            "exchanges",
            "queues",
        }
        assert {t["name"] for t in overview["exchange_types"]} >= {"direct", "fanout", "topic"}
    finally:
        connection.close()
    vhosts = api.ok("GET", "/api/vhosts")
    default = next(v for v in vhosts if v["name"] == "/")
    assert default["description"] == "Default virtual host"
    assert default["tracing"] is False
    assert api.ok("GET", "/api/vhosts/%2F")["name"] == "/"
    assert api.call("GET", "/api/vhosts/nope").json == NOT_FOUND


# ---------------------------------------------------------------------- listing parameters
def test_columns_sort_and_pagination(api, uid):
    for suffix in ("b", "a", "c"):
        api.ok("PUT", f"/api/queues/%2F/{q(uid)}-{suffix}", {})
    try:
        query = f"?page=1&page_size=2&name={q(uid)}-&columns=name,durable&sort=name"
        page = api.ok("GET", "/api/queues/%2F" + query)
        assert {k: v for k, v in page.items() if k != "total_count"} == {
            "filtered_count": 3,
            "item_count": 2,
            "items": [
                {"name": f"{uid}-a", "durable": False},
                {"name": f"{uid}-b", "durable": False},
            ],
            "page": 1,
            "page_count": 2,
            "page_size": 2,
        }
        names = [x["name"] for x in api.ok("GET", "/api/queues?sort=name&sort_reverse=true")]
        ours = [n for n in names if n.startswith(f"{uid}-")]
        assert ours == [f"{uid}-c", f"{uid}-b", f"{uid}-a"]
        out_of_range = api.call("GET", f"/api/queues?page=99&page_size=2&name={q(uid)}-")
        assert (out_of_range.status, out_of_range.json) == (
            400,
            {
                "error": "page_out_of_range",
                "reason": "Page out of range, page: 99 page size: 2, len: 3",
            },
        )
    finally:
        for suffix in ("a", "b", "c"):
            api.ok("DELETE", f"/api/queues/%2F/{q(uid)}-{suffix}")


# ---------------------------------------------------------------------- rabbitish only
def test_rates_follow_traffic(rabbitish_api, uid):
    path = f"/api/queues/%2F/{q(uid)}"
    rabbitish_api.ok("PUT", path, {})
    body = publish_body(uid, "x")
    publish = "/api/exchanges/%2F/amq.default/publish"

    def rate() -> float:
        rabbitish_api.ok("POST", publish, body)
        stats = rabbitish_api.ok("GET", path)["message_stats"]
        return stats["publish_details"]["rate"]

    assert wait_until(rate) > 0
    rabbitish_api.ok("DELETE", path)


async def test_management_port_choices():
    async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=0) as broker:
        assert broker.management_port is None and broker.management is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=taken) as broker:
            assert broker.management_port is None  # logged, and the broker runs without it
            connection = await aio_pika.connect(broker.url)
            await connection.close()
    async with rabbitish.Broker(port=0, data_dir=":memory:", management_port=0) as broker:
        port = await broker.start_management()
        assert port == broker.management_port == await broker.start_management()
        async with (
            aiohttp.ClientSession(headers=GUEST) as http,
            http.get(f"http://127.0.0.1:{port}/api/overview") as response,
        ):
            assert (await response.json())["listeners"][0]["port"] == broker.port
