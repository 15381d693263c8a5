"""RabbitMQ 4's HTTP-over-AMQP management requests (the `/management` node): a request names its
method in `subject`, its path in `to` (percent-encoded segments) and carries a map body as an
amqp-value; the reply's `subject` is the status code, its `correlation-id` the request's
message-id, application-properties `http:response` "1.1", and its body an amqp-value (the
resource as a map, or the error's text).

Declaring, reading and deleting queues and exchanges, binding and unbinding, and purging go
through the vhost's topology calls with the connection's authorizer, so the checks, texts and
journal are the 0-9-1 ones; the status codes follow RabbitMQ 4 (200 read / existing queue, 201
created queue, 204 no body, 400 bad request, 403 refused, 404 missing, 409 inequivalent)."""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

from rabbitish.bridge.codec import UInt, ULong, decode, encode
from rabbitish.bridge.codec.definitions import AmqpValue, ApplicationProperties, Properties
from rabbitish.bridge.typed_values import from_field, to_field

from rabbitish.engine.auth import Authorize
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.message import FieldValue
from rabbitish.engine.queue import Queue
from rabbitish.engine.queue_args import queue_type_of
from rabbitish.engine.vhost import VirtualHost

HTTP_RESPONSE = {"http:response": "1.1"}
_SAFE = "-._~"  # unreserved characters (RFC 3986) stay as they are in a binding's location
_STATUS_OF_CODE = {403: "403", 404: "404", 405: "409", 406: "409"}  # engine reply code -> status


class RequestFailed(Exception):
    """A request answered with an error status and its text as the body."""

    def __init__(self, status: str, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class ManagementRequests:
    """Answers the requests of one connection's management link pairs."""

    def __init__(self, vhost: VirtualHost, owner: object, authorize: Authorize | None) -> None:
        self.vhost = vhost
        self.owner = owner  # the connection: owner of the exclusive queues it declares
        self.authorize = authorize

    def handle(self, payload: bytes) -> bytes:
        """One request message -> the encoded reply message."""
        props, body = _request_sections(payload)
        message_id = props.message_id if props is not None else None
        try:
            if props is None or not isinstance(props.to, str) or props.subject is None:
                raise RequestFailed("400", "request needs properties 'to' and 'subject'")
            status, reply = self._dispatch(str(props.subject), str(props.to), body)
        except RequestFailed as err:
            status, reply = err.status, err.text
        except AMQPError as err:
            status, reply = _STATUS_OF_CODE.get(err.reply_code, "400"), err.reply_text
        return (
            encode(Properties(subject=status, correlation_id=message_id))
            + encode(ApplicationProperties(value=HTTP_RESPONSE))
            + encode(AmqpValue(value=reply))
        )

    def _dispatch(self, method: str, target: str, body: Any) -> tuple[str, Any]:
        path, _, query = target.partition("?")
        segments = path.split("/")[1:] if path.startswith("/") else []
        route = (method, segments[0] if segments else "", len(segments))
        handler = _ROUTES.get(route)
        if handler is None:
            raise RequestFailed("400", f"unsupported request {method} {path}")
        args = segments[1:]
        if route[1] != "bindings":  # a binding's segment is split before it is decoded
            args = [_decode_segment(s) for s in args]
        return handler(self, args, query, body)

    # ------------------------------------------------------------------ queues
    def get_queue(self, args: list[str], _query: str, _body: Any) -> tuple[str, Any]:
        queue = self.vhost.queues.get(args[0])
        if queue is None:
            raise RequestFailed("404", f"{self.vhost.rs('queue', args[0])} not found")
        return "200", _queue_map(queue, self.vhost.name)

    def put_queue(self, args: list[str], _query: str, body: Any) -> tuple[str, Any]:
        name = args[0]
        fields = _fields(body, "queue", {"durable", "exclusive", "auto_delete", "arguments"})
        if not name:
            raise RequestFailed("400", "declare queue with empty name not allowed")
        _no_cr_lf(name)
        if name.startswith("amq."):
            raise RequestFailed(
                "403", f"{self.vhost.rs('queue', name)} starts with reserved prefix 'amq.'"
            )
        existed = name in self.vhost.queues
        arguments, arg_types = _arguments(fields.get("arguments"))
        queue = self.vhost.declare_queue(
            name,
            owner=self.owner,
            durable=bool(fields.get("durable", True)),
            exclusive=bool(fields.get("exclusive", False)),
            auto_delete=bool(fields.get("auto_delete", False)),
            arguments=arguments,
            arg_types=arg_types,
            authorize=self.authorize,
        )
        return ("200" if existed else "201"), _queue_map(queue, self.vhost.name)

    def delete_queue(self, args: list[str], _query: str, _body: Any) -> tuple[str, Any]:
        name = args[0]
        _no_cr_lf(name)
        if self.authorize is not None:
            self.authorize("configure", "queue", name)
        count = self.vhost.delete_queue(name, owner=self.owner)
        return "200", {"message_count": ULong(count)}

    def purge_queue(self, args: list[str], _query: str, _body: Any) -> tuple[str, Any]:
        if args[1] != "messages":
            raise RequestFailed("400", f"unsupported request DELETE /queues/{args[0]}/{args[1]}")
        if self.authorize is not None:
            self.authorize("read", "queue", args[0])
        try:
            queue = self.vhost.queue(args[0], self.owner)
        except AMQPError as err:
            if err.reply_code == 404:
                raise RequestFailed("404", err.reply_text) from None
            raise RequestFailed("400", err.reply_text) from None
        return "200", {"message_count": ULong(queue.purge())}

    # ------------------------------------------------------------------ exchanges
    def put_exchange(self, args: list[str], _query: str, body: Any) -> tuple[str, Any]:
        name = args[0]
        known = {"type", "durable", "auto_delete", "internal", "arguments"}
        fields = _fields(body, "exchange", known)
        if name == "":
            raise RequestFailed("403", "operation not permitted on the default exchange")
        if name not in self.vhost.exchanges:
            _no_cr_lf(name)
            if name.startswith("amq."):
                text = f"{self.vhost.rs('exchange', name)} starts with reserved prefix 'amq.'"
                raise RequestFailed("403", text)
        arguments, arg_types = _arguments(fields.get("arguments"))
        try:
            self.vhost.declare_exchange(
                name,
                str(fields.get("type", "direct")),
                durable=bool(fields.get("durable", True)),
                auto_delete=bool(fields.get("auto_delete", False)),
                internal=bool(fields.get("internal", False)),
                arguments=arguments,
                arg_types=arg_types,
                authorize=self.authorize,
            )
        except AMQPError as err:
            if err.reply_code in (503, 540):  # an unknown exchange type: a command invalid
                raise RequestFailed("400", err.reply_text) from None
            raise
        return "204", None

    def delete_exchange(self, args: list[str], _query: str, _body: Any) -> tuple[str, Any]:
        name = args[0]
        _no_cr_lf(name)
        if name == "":
            raise RequestFailed("403", "operation not permitted on the default exchange")
        if name.startswith("amq."):
            text = f"{self.vhost.rs('exchange', name)} starts with reserved prefix 'amq.'"
            raise RequestFailed("403", text)
        self.vhost.delete_exchange(name, authorize=self.authorize)
        return "204", None

    # ------------------------------------------------------------------ bindings
    def post_binding(self, _args: list[str], _query: str, body: Any) -> tuple[str, Any]:
        known = {"source", "destination_queue", "destination_exchange", "binding_key", "arguments"}
        fields = _fields(body, "binding", known)
        if "destination_queue" in fields:
            kind, destination = "queue", str(fields["destination_queue"])
        elif "destination_exchange" in fields:
            kind, destination = "exchange", str(fields["destination_exchange"])
        else:
            raise RequestFailed(
                "400", "binding needs 'destination_queue' or 'destination_exchange'"
            )
        source = str(fields.get("source", ""))
        arguments, arg_types = _arguments(fields.get("arguments"))
        self._binding_checks(source, kind, destination)
        try:
            self.vhost.add_binding(
                kind,
                destination,
                source,
                str(fields.get("binding_key", "")),
                arguments,
                arg_types,
                self.owner,
                self.authorize,
            )
        except AMQPError as err:
            if err.reply_code == 403:
                raise
            raise RequestFailed("400", err.reply_text) from None
        return "204", None

    def delete_binding(self, args: list[str], _query: str, _body: Any) -> tuple[str, Any]:
        source, kind, destination, key, args_hash = _binding_segment(args[0])
        self._binding_checks(source, kind, destination)
        for binding_args in self._bindings(source, kind, destination, key):
            if _args_hash(binding_args) == args_hash:
                self.vhost.remove_binding(
                    kind, destination, source, key, binding_args, self.owner, self.authorize
                )
                break
        return "204", None

    def get_bindings(self, _args: list[str], query: str, _body: Any) -> tuple[str, Any]:
        params = {k: unquote(v) for k, _, v in (p.partition("=") for p in query.split("&") if p)}
        if "src" not in params or "key" not in params:
            raise RequestFailed("400", f"unsupported request GET /bindings?{query}")
        if "dste" in params:
            kind, destination = "exchange", params["dste"]
        elif "dstq" in params:
            kind, destination = "queue", params["dstq"]
        else:
            raise RequestFailed("400", f"missing 'dste' or 'dstq' in query: {query}")
        source, key = params["src"], params["key"]
        self._binding_checks(source, kind, destination)
        found = []
        for binding_args in self._bindings(source, kind, destination, key):
            found.append(
                {
                    "source": source,
                    f"destination_{kind}": destination,
                    "binding_key": key,
                    "arguments": _arguments_map(binding_args),
                    "location": _location(source, kind, destination, key, binding_args),
                }
            )
        return "200", found

    def _binding_checks(self, source: str, kind: str, destination: str) -> None:
        for name in (source, destination):
            _no_cr_lf(name)
        if source == "" or (kind == "exchange" and destination == ""):
            raise RequestFailed("403", "operation not permitted on the default exchange")

    def _bindings(self, source: str, kind: str, destination: str, key: str) -> list[dict[str, Any]]:
        """The arguments of each binding from `source` to `destination` with `key`."""
        exchange = self.vhost.exchanges.get(source)
        target = (self.vhost.queues if kind == "queue" else self.vhost.exchanges).get(destination)
        if exchange is None or target is None:
            return []
        return [b.arguments for b in exchange.bindings_to(target) if b.routing_key == key]


Handler = Callable[[ManagementRequests, list[str], str, Any], tuple[str, Any]]
_ROUTES: dict[tuple[str, str, int], Handler] = {
    ("GET", "queues", 2): ManagementRequests.get_queue,
    ("PUT", "queues", 2): ManagementRequests.put_queue,
    ("DELETE", "queues", 2): ManagementRequests.delete_queue,
    ("DELETE", "queues", 3): ManagementRequests.purge_queue,
    ("PUT", "exchanges", 2): ManagementRequests.put_exchange,
    ("DELETE", "exchanges", 2): ManagementRequests.delete_exchange,
    ("POST", "bindings", 1): ManagementRequests.post_binding,
    ("DELETE", "bindings", 2): ManagementRequests.delete_binding,
    ("GET", "bindings", 1): ManagementRequests.get_bindings,
}


def _request_sections(payload: bytes) -> tuple[Properties | None, Any]:
    props: Properties | None = None
    body: Any = None
    pos = 0
    while pos < len(payload):
        section, pos = decode(payload, pos)
        if isinstance(section, Properties):
            props = section
        elif isinstance(section, AmqpValue):
            body = section.value
    return props, body


def _decode_segment(segment: str) -> str:
    """A path segment percent-decoded (RFC 3986), as RabbitMQ 4 reads it."""
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise RequestFailed("400", f"failed to decode path segment '{segment}'") from None


def _fields(body: Any, what: str, known: set[str]) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise RequestFailed("400", f"bad {what} body {body!r}")
    for key in body:
        if str(key) not in known:
            raise RequestFailed("400", f"bad {what} property {key!r}")
    return {str(k): v for k, v in body.items()}


def _no_cr_lf(name: str) -> None:
    if "\n" in name or "\r" in name:
        raise RequestFailed(
            "400", f"Bad name '{name}': line feed and carriage return characters not allowed"
        )


def _arguments(value: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """1.0 argument values as the engine's arguments and their 0-9-1 wire types."""
    if value is None:
        return {}, {}
    if not isinstance(value, dict):
        raise RequestFailed("400", f"unsupported argument {value!r}")
    arguments: dict[str, Any] = {}
    arg_types: dict[str, str] = {}
    for key, item in value.items():
        field = to_field(item)
        arg_types[str(key)] = field.kind
        arguments[str(key)] = _plain(field)
    return arguments, arg_types


def _plain(field: FieldValue) -> Any:
    """A field value as the engine holds an argument (text as str, tables as dicts)."""
    if field.kind == "longstr":
        raw: bytes = field.value
        return raw.decode(errors="replace")
    if field.kind == "table":
        return {k: _plain(v) for k, v in field.value.items()}
    if field.kind == "array":
        return [_plain(v) for v in field.value]
    return field.value


def _arguments_map(arguments: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v.decode() if isinstance(v, bytes) else v for k, v in arguments.items()}


def _queue_map(queue: Queue, vhost: str) -> dict[str, Any]:
    """A queue as RabbitMQ 4's management node describes it (one node: no leader, itself as
    the only replica)."""
    queue_type = queue_type_of(queue.arguments)
    return {
        "message_count": ULong(queue.message_count),
        "consumer_count": UInt(queue.consumer_count),
        "name": queue.name,
        "vhost": vhost,
        "durable": queue.durable,
        "auto_delete": queue.auto_delete,
        "exclusive": queue.exclusive_owner is not None,
        "type": queue_type,
        "arguments": {str(k): from_field(to_field(v)) for k, v in queue.arguments.items()},
        "replicas": ["rabbitish@localhost"],
        "leader": "rabbitish@localhost",
    }


def _args_hash(arguments: dict[str, Any]) -> str:
    """The `args=` of a binding's location: empty without arguments, else a stable hash of
    them (RabbitMQ hashes its Erlang terms; any client reads it back from `location`)."""
    if not arguments:
        return ""
    digest = zlib.crc32(repr(sorted(arguments.items())).encode()).to_bytes(4, "big")
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _location(source: str, kind: str, destination: str, key: str, arguments: dict[str, Any]) -> str:
    char = "q" if kind == "queue" else "e"
    return (
        f"/bindings/src={quote(source, safe=_SAFE)};dst{char}={quote(destination, safe=_SAFE)};"
        f"key={quote(key, safe=_SAFE)};args={_args_hash(arguments)}"
    )


def _binding_segment(segment: str) -> tuple[str, str, str, str, str]:
    """`src=S;dstq=Q;key=K;args=H` (or `dste=X`) -> source, kind, destination, key, hash."""
    parts = dict(part.partition("=")[::2] for part in segment.split(";"))
    kinds = [k for k in ("dstq", "dste") if k in parts]
    if set(parts) - {"src", "dstq", "dste", "key", "args"} or len(kinds) != 1 or "src" not in parts:
        raise RequestFailed("400", f"bad binding path segment '{segment}'")
    kind = "queue" if kinds[0] == "dstq" else "exchange"
    return (
        unquote(parts["src"]),
        kind,
        unquote(parts[kinds[0]]),
        unquote(parts.get("key", "")),
        parts.get("args", ""),
    )
