"""Definitions in RabbitMQ's JSON format: export (GET /api/definitions[/{vhost}], `rabbitish
definitions export`) and import (POST, `rabbitish definitions import`, `serve --definitions`).
The shape and the order of import are RabbitMQ 3.10's: users, vhosts, permissions, topic
permissions, parameters, global parameters, policies, queues, exchanges, bindings. Users and
permissions go through definitions_access (the adapter to the user model)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rabbitish import __version__
from rabbitish.engine.auth import parse_tags
from rabbitish.engine.errors import REPLY_NAMES, AMQPError
from rabbitish.engine.policies import PolicyError, make_policy
from rabbitish.management import definitions_access as access
from rabbitish.management.access import grant_creator
from rabbitish.management.errors import ApiError, bad_request
from rabbitish.management.format import RABBITMQ_VERSION, jsonable
from rabbitish.management.parameters import OPERATOR_POLICY, unknown_component, vhost_parameters

if TYPE_CHECKING:
    from rabbitish.engine.node import Node
    from rabbitish.engine.vhost import VirtualHost
    from rabbitish.management.http_server import Request, Response
    from rabbitish.management.routing import Router


# ---------------------------------------------------------------------- export
def _queues(vhost: VirtualHost) -> list[dict[str, Any]]:
    return [
        {
            "name": q.name,
            "vhost": vhost.name,
            "durable": q.durable,
            "auto_delete": q.auto_delete,
            "arguments": jsonable(q.arguments),
        }
        for _, q in sorted(vhost.queues.items())
        if not q.exclusive
    ]


def _exchanges(vhost: VirtualHost) -> list[dict[str, Any]]:
    return [
        {
            "name": e.name,
            "vhost": vhost.name,
            "type": e.type_name,
            "durable": e.durable,
            "auto_delete": e.auto_delete,
            "internal": e.internal,
            "arguments": jsonable(e.arguments),
        }
        for name, e in sorted(vhost.exchanges.items())
        if name and not name.startswith("amq.")
    ]


def _bindings(vhost: VirtualHost) -> list[dict[str, Any]]:
    from rabbitish.engine.queue import Queue

    found = []
    for name, exchange in sorted(vhost.exchanges.items()):
        if not name:
            continue
        for b in exchange.bindings.values():
            queue = isinstance(b.destination, Queue)
            if queue and b.destination.exclusive:
                continue
            found.append(
                {
                    "source": name,
                    "vhost": vhost.name,
                    "destination": b.destination.name,
                    "destination_type": "queue" if queue else "exchange",
                    "routing_key": b.routing_key,
                    "arguments": jsonable(b.arguments),
                }
            )
    found.sort(key=lambda b: (b["destination_type"], b["destination"], b["routing_key"]))
    return found


def export(node: Node, vhost_name: str | None = None) -> dict[str, Any]:
    """The broker's definitions; with `vhost_name`, that vhost's only, without vhost fields in
    queues, exchanges and bindings (as RabbitMQ writes a vhost's)."""
    vhosts = [v for _, v in sorted(node.vhosts.items()) if vhost_name in (None, v.name)]
    objects = {
        "parameters": [p for v in vhosts for p in vhost_parameters(v)],
        "policies": [p.as_json() for v in vhosts for p in v.policies.listed(operator=False)],
        "queues": [q for v in vhosts for q in _queues(v)],
        "exchanges": [e for v in vhosts for e in _exchanges(v)],
        "bindings": [b for v in vhosts for b in _bindings(v)],
    }
    if vhost_name is not None:
        for kind in ("queues", "exchanges", "bindings"):
            for item in objects[kind]:
                del item["vhost"]
        return {"rabbit_version": RABBITMQ_VERSION, **objects}
    return {
        "rabbit_version": RABBITMQ_VERSION,
        "rabbitmq_version": RABBITMQ_VERSION,
        "product_name": "rabbitish",
        "product_version": __version__,
        "users": access.export_users(node),
        "vhosts": [{"name": v.name} for v in vhosts],
        "permissions": access.export_permissions(node),
        "topic_permissions": access.export_topic_permissions(node),
        "parameters": objects["parameters"],
        "global_parameters": access.export_global_parameters(node),
        "policies": objects["policies"],
        "queues": objects["queues"],
        "exchanges": objects["exchanges"],
        "bindings": objects["bindings"],
    }


# ---------------------------------------------------------------------- import
def _amqp_error(err: AMQPError) -> ApiError:
    """RabbitMQ reports a declare that fails during an import as its Erlang error term."""
    name = REPLY_NAMES.get(err.reply_code, "internal_error").lower()
    return bad_request(["amqp_error", name, list(err.text.encode()), "none"])


def _vhost(node: Node, name: str) -> VirtualHost:
    vhost = node.vhosts.get(name)
    if vhost is None:
        raise bad_request(["no_such_vhost", name])
    return vhost


def _policy(node: Node, item: dict[str, Any], operator: bool) -> None:
    vhost, name = str(item.get("vhost")), str(item.get("name"))
    try:
        policy = make_policy(vhost, name, item, operator)
    except PolicyError as err:
        raise bad_request(
            f"Validation failed\n\n{html.escape(str(err), quote=False)}\n ({vhost}/{name})"
        ) from None
    except TypeError:
        raise ApiError(500) from None
    _vhost(node, vhost).policies.put(policy)


def _parameter(node: Node, item: dict[str, Any]) -> None:
    component = item.get("component")
    if component != OPERATOR_POLICY:
        where = f" ({item.get('vhost')}/{item.get('name')})"
        raise bad_request(unknown_component(str(component)) + where)
    value = item.get("value")
    if not isinstance(value, dict):
        raise ApiError(500)
    _policy(node, {**value, "vhost": item.get("vhost"), "name": item.get("name")}, True)


def _queue(node: Node, item: dict[str, Any]) -> None:
    vhost = _vhost(node, str(item.get("vhost")))
    vhost.declare_queue(
        str(item["name"]),
        owner=None,
        durable=bool(item.get("durable", True)),
        auto_delete=bool(item.get("auto_delete", False)),
        arguments=dict(item.get("arguments") or {}),
    )


def _exchange(node: Node, item: dict[str, Any]) -> None:
    vhost = _vhost(node, str(item.get("vhost")))
    name = str(item["name"])
    if name == "" or name.startswith("amq."):
        return  # RabbitMQ skips the default exchange and amq.* ones (amq.rabbitmq.trace...)
    vhost.declare_exchange(
        name,
        str(item.get("type") or "direct"),
        durable=bool(item.get("durable", True)),
        auto_delete=bool(item.get("auto_delete", False)),
        internal=bool(item.get("internal", False)),
        arguments=dict(item.get("arguments") or {}),
    )


def _binding(node: Node, item: dict[str, Any]) -> None:
    vhost = _vhost(node, str(item.get("vhost")))
    kind = "queue" if item.get("destination_type", "queue") == "queue" else "exchange"
    source, destination = str(item.get("source", "")), str(item.get("destination", ""))
    if source not in vhost.exchanges or destination not in (
        vhost.queues if kind == "queue" else vhost.exchanges
    ):
        return  # RabbitMQ skips a binding whose ends do not exist
    arguments = dict(item.get("arguments") or {})
    routing_key = str(item.get("routing_key", ""))
    vhost.add_binding(kind, destination, source, routing_key, arguments, {}, None)


def _vhost_item(node: Node, item: dict[str, Any], creator: str | None = None) -> None:
    name = str(item["name"])
    existed = name in node.vhosts
    vhost = node.add_vhost(name)
    metadata = item.get("metadata") or {}
    vhost.description = str(metadata.get("description", item.get("description", "")) or "")
    vhost.tags = parse_tags(metadata.get("tags", item.get("tags")) or ())
    node.vhost_changed(name)
    if "tracing" in item:  # RabbitMQ's put_vhost: true or false, anything else fails after
        tracing = item["tracing"]
        if not isinstance(tracing, bool):
            raise bad_request(["case_clause", tracing])
        node.set_tracing(name, tracing)
    if not existed:
        grant_creator(node, name, creator)


Step = tuple[str, Callable[..., None]]
STEPS: tuple[Step, ...] = (
    ("users", access.import_user),
    ("vhosts", _vhost_item),
    ("permissions", access.import_permission),
    ("topic_permissions", access.import_topic_permission),
    ("parameters", _parameter),
    ("global_parameters", access.import_global_parameter),
    ("policies", lambda node, item: _policy(node, item, False)),
    ("queues", _queue),
    ("exchanges", _exchange),
    ("bindings", _binding),
)
VHOST_SCOPED = frozenset({"parameters", "policies", "queues", "exchanges", "bindings"})


def apply(node: Node, body: Any, vhost_name: str | None = None, creator: str | None = None) -> None:
    """Import `body`; with `vhost_name`, only its vhost-scoped sections, into that vhost.
    `creator`, the user importing, gets full permissions on each vhost the import creates.
    Raises ApiError with RabbitMQ's reply for the first item it refuses (items before it stay
    applied, as in RabbitMQ)."""
    if not isinstance(body, dict):
        raise bad_request("failed_to_parse_json")
    if vhost_name is not None and vhost_name not in node.vhosts:
        raise ApiError(404, "not_found", "vhost_not_found")
    for section, step in STEPS:
        if vhost_name is not None and section not in VHOST_SCOPED:
            continue
        items = body.get(section) or []
        if not isinstance(items, list):
            raise bad_request("failed_to_parse_json")
        for item in items:
            if not isinstance(item, dict):
                raise bad_request("failed_to_parse_json")
            if vhost_name is not None:
                item = {**item, "vhost": vhost_name}
            try:
                if section == "vhosts":
                    _vhost_item(node, item, creator)
                else:
                    step(node, item)
            except AMQPError as err:
                raise _amqp_error(err) from None
            except KeyError as err:
                raise bad_request(f"[{{key_missing,{err.args[0]}}}]") from None


class DefinitionsError(Exception):
    """A definitions file that cannot be read or applied; the message names the file."""


def load_file(node: Node, path: str) -> None:
    """RabbitMQ's `load_definitions`: apply a file at start; any failure stops the start."""
    try:
        with open(path, encoding="utf-8") as file:
            body = json.load(file)
    except (OSError, ValueError) as err:
        raise DefinitionsError(f"definitions file {path}: {err}") from None
    try:
        apply(node, body)
    except ApiError as err:
        raise DefinitionsError(f"definitions file {path}: {err.reason}") from None


def add_routes(router: Router, node: Node, reply: Callable[[Any], Any], read_body: Any) -> None:
    """GET and POST /api/definitions[/{vhost}] on the management server's `router`."""
    from rabbitish.management.http_server import Response  # the API's only: not load_file's

    async def get(request: Request) -> Response:
        vhost = request.match_info.get("vhost")
        if vhost is not None and vhost not in node.vhosts:
            raise bad_request("vhost_not_found")
        return reply(export(node, vhost))

    async def post(request: Request) -> Response:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except (ValueError, UnicodeDecodeError):
            raise bad_request("failed_to_parse_json") from None
        apply(node, body, request.match_info.get("vhost"), request.user.name)
        return Response(status=204)

    for path in ("/api/definitions", "/api/definitions/{vhost}"):
        router.add_get(path, get)
        router.add_post(path, post)
