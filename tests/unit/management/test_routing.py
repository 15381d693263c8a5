"""The management router: patterns over decoded segments (`%2F` inside one), HEAD for GET,
the one trailing slash RabbitMQ's router takes under /api/, and 404 against 405."""

from __future__ import annotations

import pytest

from rabbitish.management.http_server import Headers, ParsedRequest, Request, Response
from rabbitish.management.routing import MethodNotAllowed, RouteNotFound, Router


def request(method: str, target: str) -> Request:
    return Request.from_parsed(ParsedRequest(method, target, "HTTP/1.1", Headers()), "::1")


def handler(name: str):
    async def answer(request: Request) -> Response:
        return Response(200, name.encode())

    answer.__name__ = name
    return answer


@pytest.fixture
def router() -> Router:
    routes = Router()
    routes.add_get("/", handler("index"))
    routes.add_get("/ui/{name}", handler("asset"))
    routes.add_get("/api/queues/{vhost}/{name}", handler("queue"))
    routes.add_put("/api/queues/{vhost}/{name}", handler("put_queue"))
    routes.add_get("/api/exchanges/{vhost}/{name}/bindings/{side:source|destination}", handler("x"))
    return routes


def resolve(router: Router, method: str, target: str) -> tuple[str, dict[str, str]]:
    req = request(method, target)
    found = router.resolve(req)
    return found.__name__, req.match_info


def test_segments_match_decoded_with_2f_inside_one(router):
    assert resolve(router, "GET", "/api/queues/%2F/a%2Fb%20c") == (
        "queue",
        {"vhost": "/", "name": "a/b c"},
    )
    assert resolve(router, "PUT", "/api/queues/v/%7Bq%7D") == (
        "put_queue",
        {"vhost": "v", "name": "{q}"},
    )


def test_head_answers_get_and_api_routes_take_one_trailing_slash(router):
    assert resolve(router, "HEAD", "/api/queues/v/q")[0] == "queue"
    assert resolve(router, "GET", "/api/queues/v/q/")[0] == "queue"
    assert resolve(router, "GET", "/")[0] == "index"
    with pytest.raises(RouteNotFound):
        resolve(router, "GET", "/api/queues/v/q//")
    with pytest.raises(RouteNotFound):
        resolve(router, "GET", "/ui/")  # an empty segment is no name
    with pytest.raises(RouteNotFound):
        resolve(router, "GET", "/ui/app.js/")  # outside /api/ no trailing slash


def test_regex_segments_must_match_whole(router):
    target = "/api/exchanges/v/x/bindings/source"
    assert resolve(router, "GET", target) == ("x", {"vhost": "v", "name": "x", "side": "source"})
    with pytest.raises(RouteNotFound):
        resolve(router, "GET", target + "s")


def test_a_known_path_with_another_method_is_405_with_what_it_allows(router):
    with pytest.raises(MethodNotAllowed) as caught:
        resolve(router, "DELETE", "/api/queues/v/q")
    assert caught.value.allowed == {"GET", "HEAD", "PUT"}
    with pytest.raises(RouteNotFound):
        resolve(router, "DELETE", "/api/nothing")
