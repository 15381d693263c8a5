"""/api/policies and /api/operator-policies: list, read, set and clear a vhost's policies with
RabbitMQ's replies. Its validation texts follow "Validation failed"; the policies resource sends
them HTML-escaped, the operator-policies one as they are (as RabbitMQ's two resources do)."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rabbitish.engine.policies import PolicyError, make_policy
from rabbitish.management import errors
from rabbitish.management.errors import ApiError, bad_request, not_found
from rabbitish.management.http_server import Response

if TYPE_CHECKING:
    from rabbitish.engine.auth import User
    from rabbitish.management.api import Api
    from rabbitish.management.http_server import Request
    from rabbitish.management.routing import Router

RESOURCES = {"policies": False, "operator-policies": True}


def list_policies(api: Api, user: User, operator: bool, vhost: str | None = None) -> list[Any]:
    return [p.as_json() for v in api.vhosts(user, vhost) for p in v.policies.listed(operator)]


def get_policy(api: Api, user: User, operator: bool, vhost: str, name: str) -> dict[str, Any]:
    policy = api.vhost(user, vhost).policies.get(name, operator)
    if policy is None:
        raise not_found()
    return policy.as_json()


def put_policy(
    api: Api, user: User, operator: bool, vhost_name: str, name: str, body: dict[str, Any]
) -> int:
    """Set a policy; 201 when new, 204 when replaced."""
    vhost = api.node.vhosts.get(vhost_name)
    if vhost is None or not api.node.users.may_access(user, vhost_name):
        raise ApiError(404, "not_found", "vhost_not_found")
    missing = [key for key in ("pattern", "definition") if key not in body]
    if missing:
        raise errors.key_missing(missing)
    try:
        policy = make_policy(vhost_name, name, body, operator)
    except PolicyError as err:
        text = str(err) if operator else html.escape(str(err), quote=False)
        raise bad_request(f"Validation failed\n\n{text}\n") from None
    except TypeError:
        raise ApiError(500) from None  # RabbitMQ crashes on these bodies too
    return 201 if vhost.policies.put(policy) else 204


def delete_policy(api: Api, user: User, operator: bool, vhost: str, name: str) -> None:
    if not api.vhost(user, vhost).policies.delete(name, operator):
        raise not_found()


Handler = Callable[["Request"], Awaitable["Response"]]


def add_routes(
    router: Router,
    api: Api,
    reply: Callable[[Any], Response],
    read_body: Callable[[Request], Awaitable[dict[str, Any]]],
) -> None:
    """The routes of both resources; `reply` and `read_body` are the server's JSON helpers."""

    def handlers(operator: bool) -> tuple[Handler, Handler, Handler, Handler]:
        async def listing(request: Request) -> Response:
            vhost = request.match_info.get("vhost")
            return reply(list_policies(api, request.user, operator, vhost))

        async def read(request: Request) -> Response:
            info = request.match_info
            return reply(get_policy(api, request.user, operator, info["vhost"], info["name"]))

        async def put(request: Request) -> Response:
            info = request.match_info
            body = await read_body(request)
            status = put_policy(api, request.user, operator, info["vhost"], info["name"], body)
            return Response(status=status)

        async def delete(request: Request) -> Response:
            info = request.match_info
            delete_policy(api, request.user, operator, info["vhost"], info["name"])
            return Response(status=204)

        return listing, read, put, delete

    for resource, operator in RESOURCES.items():
        listing, read, put, delete = handlers(operator)
        base = f"/api/{resource}"
        router.add_get(base, listing)
        router.add_get(base + "/{vhost}", listing)
        router.add_get(base + "/{vhost}/{name}", read)
        router.add_put(base + "/{vhost}/{name}", put)
        router.add_delete(base + "/{vhost}/{name}", delete)
