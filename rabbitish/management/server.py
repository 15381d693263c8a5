"""The HTTP side of the management API: routes, Basic auth against the broker's users, JSON
bodies and RabbitMQ's status codes and error bodies, served by http_server on the listener's
port. Imported only when the API is enabled, after AMQP is served."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rabbitish.engine.auth import Peer, may_log_in_from
from rabbitish.management import definitions, listing, metrics, parameters, policies, ui
from rabbitish.management.access import AccessApi, admin_only
from rabbitish.management.api import Api
from rabbitish.management.errors import NOT_FOUND_BODY, ApiError, bad_request
from rabbitish.management.format import NODE
from rabbitish.management.http_server import HttpServer, Request, Response
from rabbitish.management.listener import EarlyListener
from rabbitish.management.routing import Handler, MethodNotAllowed, RouteNotFound, Router

if TYPE_CHECKING:
    from rabbitish.engine.sessions import FrontEndConnection

log = logging.getLogger("rabbitish.management")

REALM = 'Basic realm="RabbitMQ Management"'
# RabbitMQ's default order of /api/bindings (rabbit_mgmt_wm_bindings), applied after columns.
BINDINGS_SORT = ("vhost", "source", "destination", "routing_key", "properties_key")


def _json(data: Any, status: int = 200) -> Response:
    return Response(
        status=status,
        body=json.dumps(data, separators=(",", ":")).encode(),
        content_type="application/json",
        headers={"Cache-Control": "no-cache"},
    )


def _error(err: ApiError) -> Response:
    headers = (
        {"WWW-Authenticate": REALM} if err.status == 401 and err.error == "not_authorized" else {}
    )
    if err.body is None:
        return Response(status=err.status, headers=headers)
    response = _json(err.body, err.status)
    response.headers.update(headers)
    return response


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise bad_request("not_json") from None
    if not isinstance(body, dict):
        raise bad_request("not_json")
    return body


class ManagementServer:
    """The API on one TCP port; `start()` binds it, `stop()` closes it."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.port: int | None = None
        self.prometheus_port: int | None = None
        self._router = Router()
        self._servers: list[HttpServer] = []
        self._listeners: list[EarlyListener] = []

    async def start(self, listener: EarlyListener) -> int:
        """Serve the API on `listener`'s port (open already, over TLS when it was opened
        with a context)."""
        self._routes(self._router)
        self._serve(HttpServer(self._dispatch), listener)
        self.port = self.api.http_port = listener.port
        return self.port

    async def start_prometheus(self, listener: EarlyListener) -> int:
        """`/metrics` alone on a port of its own, as RabbitMQ's prometheus plugin serves it
        (15692 by default): no login, plain-text 404 and 405."""
        router = Router()
        metrics.add_routes(router, self.api.node)

        async def dispatch(request: Request) -> Response:
            try:
                return await router.resolve(request)(request)
            except RouteNotFound:
                return Response.text(404, "404: Not Found")
            except MethodNotAllowed as err:
                response = Response.text(405, "405: Method Not Allowed")
                response.headers["Allow"] = ",".join(sorted(err.allowed))
                return response

        self._serve(HttpServer(dispatch), listener)
        self.prometheus_port = listener.port
        return self.prometheus_port

    def _serve(self, server: HttpServer, listener: EarlyListener) -> None:
        """Serve on `listener`'s port: its waiting connections and every later one."""
        listener.serve(server.factory)
        self._servers.append(server)
        self._listeners.append(listener)

    async def stop(self) -> None:
        for listener in self._listeners:
            listener.stop_accepting()
        for server in self._servers:
            await server.close()
        for listener in self._listeners:
            await listener.close()
        self._servers = []
        self._listeners = []

    # ------------------------------------------------------------------ dispatch
    async def _dispatch(self, request: Request) -> Response:
        """Log in (under /api/), route, and turn errors into RabbitMQ's replies."""
        try:
            if request.path.startswith("/api/"):  # metrics and the web UI's files: no login
                refused = self._authenticate(request)
                if refused is not None:
                    return refused
            return await self._router.resolve(request)(request)
        except ApiError as err:
            return _error(err)
        except RouteNotFound:
            return _json(NOT_FOUND_BODY, 404)
        except MethodNotAllowed as err:
            allowed = ", ".join(sorted({*err.allowed, "HEAD", "OPTIONS"}))
            return Response(status=405, headers={"Allow": allowed})

    def _authenticate(self, request: Request) -> Response | None:
        """Basic auth against the broker's users: sets `request.authenticated`, or returns the
        401 for a request without credentials (raises ApiError for wrong ones)."""
        header = request.headers.get("Authorization") or ""
        if not header.lower().startswith("basic "):
            return Response(status=401, headers={"WWW-Authenticate": REALM})
        try:
            name, _, password = base64.b64decode(header[6:].strip()).decode().partition(":")
        except ValueError:  # not base64 (binascii.Error), not ASCII, not UTF-8: no login
            name, password = "", ""
        user = self.api.node.users.authenticate(name, password)
        if user is None:
            raise ApiError(401, "not_authorized", "Login failed")
        peer = Peer(request.remote)
        if not may_log_in_from(user.name, peer, self.api.config.loopback_users):
            log.warning("HTTP access denied: user '%s' - User can only log in via localhost", name)
            raise ApiError(401, "not_authorised", "User can only log in via localhost")
        if not user.may_use_management:
            raise ApiError(401, "not_authorised", "Not management user")
        request.authenticated = user
        return None

    # ------------------------------------------------------------------ routes
    def _routes(self, router: Router) -> None:
        a = self.api
        q, e = "/api/queues/{vhost}/{name}", "/api/exchanges/{vhost}/{name}"
        b = "/api/bindings/{vhost}/e/{source}/{kind:[qe]}/{destination}"
        get = router.add_get
        get("/api/overview", self._read(lambda r, u: a.overview(u)))
        get("/api/whoami", self._read(lambda r, u: a.whoami(u)))
        get("/api/nodes", self._list(lambda r, u: a.list_nodes(u)))
        get("/api/vhosts", self._list(lambda r, u: a.list_vhosts(u)))
        get("/api/vhosts/{vhost}", self._read(lambda r, u: a.list_vhosts(u, r["vhost"])))
        self._access_routes(router)
        get(
            "/api/vhosts/{vhost}/connections",
            self._list(lambda r, u: a.list_connections(u, r["vhost"])),
        )
        get("/api/vhosts/{vhost}/channels", self._list(lambda r, u: a.list_channels(u, r["vhost"])))
        get("/api/queues", self._list(lambda r, u: a.list_queues(u)))
        get("/api/queues/{vhost}", self._list(lambda r, u: a.list_queues(u, r["vhost"])))
        get(q, self._read(lambda r, u: a.get_queue(u, r["vhost"], r["name"])))
        router.add_put(q, self._put(a.put_queue))
        router.add_delete(q, self._delete_queue)
        router.add_delete(q + "/contents", self._purge)
        router.add_post(q + "/get", self._get_messages)
        get(q + "/bindings", self._list(lambda r, u: a.queue_bindings(u, r["vhost"], r["name"])))
        get("/api/exchanges", self._list(lambda r, u: a.list_exchanges(u)))
        get("/api/exchanges/{vhost}", self._list(lambda r, u: a.list_exchanges(u, r["vhost"])))
        get(e, self._read(lambda r, u: a.get_exchange(u, r["vhost"], r["name"])))
        router.add_put(e, self._put(a.put_exchange))
        router.add_delete(e, self._delete_exchange)
        router.add_post(e + "/publish", self._publish)
        get(
            e + "/bindings/{side:source|destination}",
            self._list(lambda r, u: a.exchange_bindings(u, r["vhost"], r["name"], r["side"])),
        )
        get("/api/bindings", self._list(lambda r, u: a.list_bindings(u), BINDINGS_SORT))
        get(
            "/api/bindings/{vhost}",
            self._list(lambda r, u: a.list_bindings(u, r["vhost"]), BINDINGS_SORT),
        )
        get(b, self._list(lambda r, u: a.bindings_between(u, *_binding_path(r))))
        router.add_post(b, self._bind)
        get(b + "/{props}", self._read(lambda r, u: a.binding(u, *_binding_path(r), r["props"])))
        router.add_delete(b + "/{props}", self._unbind)
        get("/api/connections", self._list(lambda r, u: a.list_connections(u)))
        get("/api/connections/{name}", self._read(lambda r, u: a.get_connection(u, r["name"])))
        router.add_delete("/api/connections/{name}", self._close_connection)
        get(
            "/api/connections/{name}/channels",
            self._list(lambda r, u: a.list_channels(u, connection=r["name"])),
        )
        get(
            "/api/connections/{name}/sessions",
            self._list(lambda r, u: a.connection_sessions(u, r["name"])),
        )
        get("/api/channels", self._list(lambda r, u: a.list_channels(u)))
        get("/api/channels/{name}", self._read(lambda r, u: a.get_channel(u, r["name"])))
        get("/api/consumers", self._list(lambda r, u: a.list_consumers(u)))
        get("/api/consumers/{vhost}", self._list(lambda r, u: a.list_consumers(u, r["vhost"])))
        get("/api/transactions", self._list(lambda r, u: a.list_transactions(u)))
        get(
            "/api/transactions/{vhost}",
            self._list(lambda r, u: a.list_transactions(u, r["vhost"])),
        )
        get("/api/half-transactions", self._list(lambda r, u: a.list_half_transactions(u)))
        get(
            "/api/half-transactions/{vhost}",
            self._list(lambda r, u: a.list_half_transactions(u, r["vhost"])),
        )
        router.add_post(
            "/api/half-transactions/{vhost}/{id}/{decision:commit|rollback}", self._decide_half
        )
        get("/api/links", self._list(lambda r, u: a.list_links(u)))
        get("/api/links/{vhost}", self._list(lambda r, u: a.list_links(u, r["vhost"])))
        get("/api/health/checks/alarms", self._alarm_check("in effect in the cluster"))
        get("/api/health/checks/local-alarms", self._alarm_check("in effect on the node"))
        policies.add_routes(router, a, _json, _body)
        parameters.add_routes(router, a, _json, _body)
        definitions.add_routes(router, a.node, _json, _body)
        metrics.add_routes(router, a.node)
        ui.add_routes(router)

    def _access_routes(self, router: Router) -> None:
        """Users, permissions, vhost changes: administrators only."""
        access = AccessApi(self.api.node)
        u, p = "/api/users/{user}", "/api/permissions/{vhost}/{user}"
        routes: list[tuple[str, str, Callable[..., Any], int]] = [
            ("GET", "/api/users", lambda r, b: access.list_users(), 200),
            ("GET", u, lambda r, b: access.get_user(r["user"]), 200),
            ("PUT", u, lambda r, b: access.put_user(r["user"], b), 0),
            ("DELETE", u, self._delete_user(access), 204),
            ("GET", u + "/permissions", lambda r, b: access.user_permissions(r["user"]), 200),
            ("GET", "/api/permissions", lambda r, b: access.list_permissions(), 200),
            ("GET", p, lambda r, b: access.get_permission(r["vhost"], r["user"]), 200),
            ("PUT", p, lambda r, b: access.put_permission(r["vhost"], r["user"], b), 0),
            ("DELETE", p, lambda r, b: access.delete_permission(r["vhost"], r["user"]), 204),
            (
                "GET",
                "/api/vhosts/{vhost}/permissions",
                lambda r, b: access.vhost_permissions(r["vhost"]),
                200,
            ),
            ("DELETE", "/api/vhosts/{vhost}", self._delete_vhost(access), 204),
            ("PUT", "/api/tracing/{vhost}", lambda r, b: access.set_tracing(r["vhost"], True), 204),
            (
                "DELETE",
                "/api/tracing/{vhost}",
                lambda r, b: access.set_tracing(r["vhost"], False),
                204,
            ),
        ]
        for method, path, fn, status in routes:
            router.add_route(method, path, self._admin(fn, status))
        router.add_put("/api/vhosts/{vhost}", self._put_vhost(access))

    @staticmethod
    def _admin(fn: Callable[[Any, dict[str, Any]], Any], status: int) -> Handler:
        """An administrators-only handler; status 0: `fn` returns the status (201 / 204)."""

        async def handler(request: Request) -> Response:
            admin_only(request.user)
            body = await _body(request) if request.method == "PUT" else {}
            result = fn(request.match_info, body)
            if status == 0:
                return Response(status=result)
            if status == 204:
                return Response(status=204)
            if isinstance(result, list):
                result = listing.apply(result, request.query)
            return _json(result)

        return handler

    @staticmethod
    def _put_vhost(access: AccessApi) -> Handler:
        """Create or update a vhost; the user who creates it gets full permissions on it."""

        async def handler(request: Request) -> Response:
            user = request.user
            admin_only(user)
            body = await _body(request)
            return Response(status=access.put_vhost(request.match_info["vhost"], body, user.name))

        return handler

    def _delete_vhost(self, access: AccessApi) -> Callable[[Any, dict[str, Any]], None]:
        """Delete a vhost and close its connections, as RabbitMQ does (320)."""

        def delete(info: Any, body: dict[str, Any]) -> None:
            name = info["vhost"]
            access.delete_vhost(name)
            self._close_connections(
                lambda conn: conn.vhost is not None and conn.vhost.name == name,
                f"vhost '{name}' is deleted",
            )

        return delete

    def _delete_user(self, access: AccessApi) -> Callable[[Any, dict[str, Any]], None]:
        """Delete a user and close its connections, as RabbitMQ does (320)."""

        def delete(info: Any, body: dict[str, Any]) -> None:
            name = info["user"]
            access.delete_user(name)
            self._close_connections(lambda conn: conn.user == name, f"user '{name}' is deleted")

        return delete

    def _close_connections(self, match: Callable[[FrontEndConnection], bool], text: str) -> None:
        for conn in list(self.api.node.connections):
            if match(conn):
                conn.server_close(320, text)

    # ------------------------------------------------------------------ handler factories
    def _alarm_check(self, where: str) -> Handler:
        """RabbitMQ's alarm health checks: 200 ok, or 503 with the alarms in effect: memory,
        disk, and a store whose writes fail, reported as RabbitMQ reports a disk alarm, each
        with its reason beside it."""
        alarms = self.api.node.alarms

        async def handler(request: Request) -> Response:
            if not alarms.active:
                return _json({"status": "ok"})
            body = {
                "status": "failed",
                "reason": f"resource alarm(s) {where}",
                "alarms": [
                    {"node": NODE, "resource": "memory" if source == "memory" else "disk"}
                    | {"reason": reason}
                    for source, reason in alarms.active.items()
                ],
            }
            return _json(body, status=503)

        return handler

    @staticmethod
    def _read(fn: Callable[[Any, Any], Any]) -> Handler:
        async def handler(request: Request) -> Response:
            return _json(fn(request.match_info, request.user))

        return handler

    @staticmethod
    def _list(
        fn: Callable[[Any, Any], list[dict[str, Any]]], default_sort: tuple[str, ...] = ()
    ) -> Handler:
        async def handler(request: Request) -> Response:
            items = fn(request.match_info, request.user)
            return _json(listing.apply(items, request.query, default_sort))

        return handler

    @staticmethod
    def _put(fn: Callable[..., int]) -> Handler:
        async def handler(request: Request) -> Response:
            body = await _body(request)
            info = request.match_info
            status = fn(request.user, info["vhost"], info["name"], body)
            return Response(status=status)

        return handler

    # ------------------------------------------------------------------ handlers
    async def _delete_queue(self, request: Request) -> Response:
        info = request.match_info
        self.api.delete_queue(request.user, info["vhost"], info["name"], request.query)
        return Response(status=204)

    async def _purge(self, request: Request) -> Response:
        info = request.match_info
        self.api.purge(request.user, info["vhost"], info["name"])
        return Response(status=204)

    async def _get_messages(self, request: Request) -> Response:
        info = request.match_info
        body = await _body(request)
        return _json(self.api.get(request.user, info["vhost"], info["name"], body))

    async def _delete_exchange(self, request: Request) -> Response:
        info = request.match_info
        self.api.delete_exchange(request.user, info["vhost"], info["name"], request.query)
        return Response(status=204)

    async def _publish(self, request: Request) -> Response:
        info = request.match_info
        body = await _body(request)
        return _json(self.api.publish(request.user, info["vhost"], info["name"], body))

    async def _bind(self, request: Request) -> Response:
        body = await _body(request)
        vhost, source, kind, destination = _binding_path(request.match_info)
        props = self.api.add_binding(request.user, vhost, source, kind, destination, body)
        location = f"{quote(destination, safe='')}/{quote(props, safe='~')}"
        return Response(status=201, headers={"Location": location})

    async def _unbind(self, request: Request) -> Response:
        info = request.match_info
        self.api.delete_binding(request.user, *_binding_path(info), info["props"])
        return Response(status=204)

    async def _decide_half(self, request: Request) -> Response:
        info = request.match_info
        commit = info["decision"] == "commit"
        return _json(await self.api.decide_half(request.user, info["vhost"], info["id"], commit))

    async def _close_connection(self, request: Request) -> Response:
        reason = request.headers.get("X-Reason")
        self.api.close_connection(request.user, request.match_info["name"], reason)
        return Response(status=204)


def _binding_path(info: Any) -> tuple[str, str, str, str]:
    kind = "queue" if info["kind"] == "q" else "exchange"
    return info["vhost"], info["source"], kind, info["destination"]
