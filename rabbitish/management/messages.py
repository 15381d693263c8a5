"""Getting and publishing messages over HTTP, the way RabbitMQ's management plugin does it: a
get takes messages with basic.get semantics and then settles them by `ackmode` (requeued ones go
back to their original place), and a publish is routed like basic.publish."""

from __future__ import annotations

import base64
import binascii
import itertools
from typing import TYPE_CHECKING, Any

from rabbitish.engine.delivery import Outcome, settle
from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.message import Message, PropertyCodec, PropertyError
from rabbitish.engine.tracing import TraceOrigin
from rabbitish.management.errors import bad_request
from rabbitish.management.format import jsonable
from rabbitish.wire_names import NODE_NAME

if TYPE_CHECKING:
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

ACKMODES = ("ack_requeue_true", "reject_requeue_true", "ack_requeue_false", "reject_requeue_false")
_requests = itertools.count(1)


def request_origin(user: str) -> TraceOrigin:
    """Who a get or publish over HTTP was, in a trace: RabbitMQ's management plugin opens a
    direct connection per request, named by its Erlang process id, and uses its channel 1."""
    return TraceOrigin(f"<{NODE_NAME}.1.{next(_requests)}.0>", 1, user)


_OUTCOMES = {
    "ack_requeue_true": Outcome.REQUEUE,
    "reject_requeue_true": Outcome.REQUEUE,
    "ack_requeue_false": Outcome.ACK,
    "reject_requeue_false": Outcome.DISCARD,
}


# ---------------------------------------------------------------------- get
def get_messages(
    queue: Queue, count: int, ackmode: str, encoding: str, truncate: int | None, user: str = ""
) -> list[dict[str, Any]]:
    """Take up to `count` messages, render them, then settle them all as `ackmode` says."""
    taken = []
    rendered = []
    origin = request_origin(user)
    for _ in range(max(count, 0)):
        delivery = queue.get(False, origin)
        if delivery is None:
            break
        taken.append(delivery)
        rendered.append(
            _render(
                delivery.entry.message,
                delivery.redelivered,
                queue.message_count,
                encoding,
                truncate,
            )
        )
    settle(taken, _OUTCOMES[ackmode])
    return rendered


def _render(
    message: Message, redelivered: bool, remaining: int, encoding: str, truncate: int | None
) -> dict[str, Any]:
    body = message.body
    payload = body if truncate is None else body[:truncate]
    props = jsonable(message.codec.to_json(message.raw_properties))
    return {
        "payload_bytes": len(body),
        "redelivered": redelivered,
        "exchange": message.exchange,
        "routing_key": message.routing_key,
        "message_count": remaining,
        # RabbitMQ renders "no properties" as an empty Erlang list, i.e. [].
        "properties": props or [],
        **encode_payload(payload, encoding),
    }


def encode_payload(payload: bytes, encoding: str) -> dict[str, str]:
    """`auto`: the text when the bytes are UTF-8, else base64 (as RabbitMQ decides)."""
    if encoding == "auto":
        try:
            return {"payload": payload.decode("utf-8"), "payload_encoding": "string"}
        except UnicodeDecodeError:
            pass
    return {"payload": base64.b64encode(payload).decode(), "payload_encoding": "base64"}


# ---------------------------------------------------------------------- publish
def publish(
    vhost: VirtualHost,
    codec: PropertyCodec,
    exchange_name: str,
    routing_key: str,
    props: dict[str, Any],
    payload: bytes,
    user: str,
) -> bool:
    """Route one message like basic.publish; True when it reached at least one queue."""
    exchange = vhost.publish_exchange(exchange_name)
    try:
        raw = codec.from_json(props)
    except PropertyError as err:
        raise bad_request(err.reason) from None
    user_id = props.get("user_id")
    if user_id is not None and str(user_id) != user:
        raise precondition_failed(
            f"user_id property set to '{user_id}' but authenticated user was '{user}'"
        )
    message = codec.new_message(exchange_name, routing_key, raw, payload)
    return vhost.publish(exchange, routing_key, message, source=request_origin(user)).routed


def decode_payload(payload: Any, encoding: Any) -> bytes:
    if encoding == "string":
        return str(payload).encode()
    if encoding == "base64":
        try:
            return base64.b64decode(str(payload), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(["not_base64", payload]) from None
    raise bad_request(["unsupported_encoding", encoding])
