"""/api/parameters: RabbitMQ's runtime parameters. The only component rabbitish has is
`operator_policy` (operator policies are runtime parameters in RabbitMQ, listed here as it lists
them, value without vhost and name); the others belong to plugins rabbitish does not have
(shovel, federation), so setting one gets RabbitMQ's answer for a component it does not know,
and the lists of any other component are empty. /api/vhost-limits lists none: rabbitish has no
vhost limits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rabbitish.management import listing
from rabbitish.management.errors import bad_request, not_found

if TYPE_CHECKING:
    from rabbitish.engine.auth import User
    from rabbitish.engine.vhost import VirtualHost
    from rabbitish.management.api import Api
    from rabbitish.management.http_server import Request, Response
    from rabbitish.management.routing import Router

OPERATOR_POLICY = "operator_policy"  # the component operator policies are kept under


def vhost_parameters(vhost: VirtualHost) -> list[dict[str, Any]]:
    """A vhost's runtime parameters as RabbitMQ lists and exports them."""
    found = []
    for policy in vhost.policies.listed(operator=True):
        doc = policy.as_json()
        value = {k: doc[k] for k in ("pattern", "definition", "priority", "apply-to")}
        found.append(
            {"value": value, "vhost": vhost.name, "component": OPERATOR_POLICY, "name": policy.name}
        )
    return found


def unknown_component(component: str) -> str:
    """RabbitMQ's reason when a parameter names a component no plugin registered."""
    return f"Validation failed\n\ncomponent {component} not found\n"


def list_parameters(
    api: Api, user: User, component: str | None = None, vhost: str | None = None
) -> list[dict[str, Any]]:
    return [
        p
        for v in api.vhosts(user, vhost)
        for p in vhost_parameters(v)
        if component in (None, p["component"])
    ]


def add_routes(
    router: Router,
    api: Api,
    reply: Callable[[Any], Response],
    read_body: Callable[[Request], Awaitable[dict[str, Any]]],
) -> None:
    """GET the lists and one parameter; PUT answers as RabbitMQ does for a component without
    its plugin (operator policies are set through /api/operator-policies); DELETE finds none."""
    base = "/api/parameters"

    async def lists(request: Request) -> Response:
        info = request.match_info
        found = list_parameters(api, request.user, info.get("component"), info.get("vhost"))
        return reply(listing.apply(found, request.query))

    async def read(request: Request) -> Response:
        info = request.match_info
        for parameter in list_parameters(api, request.user, info["component"], info["vhost"]):
            if parameter["name"] == info["name"]:
                return reply(parameter)
        raise not_found()

    async def put(request: Request) -> Response:
        info = request.match_info
        api.vhost(request.user, info["vhost"])
        await read_body(request)
        raise bad_request(unknown_component(info["component"]))

    async def delete(request: Request) -> Response:
        raise not_found()

    async def no_limits(request: Request) -> Response:
        api.vhosts(request.user, request.match_info.get("vhost"))
        return reply([])

    router.add_get("/api/vhost-limits", no_limits)  # rabbitish has no vhost limits
    router.add_get("/api/vhost-limits/{vhost}", no_limits)
    router.add_get(base, lists)
    router.add_get(base + "/{component}", lists)
    router.add_get(base + "/{component}/{vhost}", lists)
    router.add_get(base + "/{component}/{vhost}/{name}", read)
    router.add_put(base + "/{component}/{vhost}/{name}", put)
    router.add_delete(base + "/{component}/{vhost}/{name}", delete)
