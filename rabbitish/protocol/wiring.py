"""Handlers for channel, exchange, queue and confirm methods: the wiring a client declares."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from pamqp import commands

from rabbitish.engine.auth import Access
from rabbitish.engine.errors import (
    channel_error,
    command_invalid,
    not_found,
    not_implemented,
    precondition_failed,
)
from rabbitish.engine.queue import Queue
from rabbitish.engine.reply_to import REPLY_TO
from rabbitish.protocol.codec import argument_types
from rabbitish.protocol.framing import encode_method_payload

if TYPE_CHECKING:
    from rabbitish.protocol.channel import Channel

_DECLARE_OK = struct.pack(">HH", 50, 11)


# ---------------------------------------------------------------------- channel class
def channel_open(ch: Channel, method: commands.Channel.Open, payload: bytes) -> None:
    raise channel_error("second 'channel.open' seen")


def channel_close(ch: Channel, method: commands.Channel.Close, payload: bytes) -> None:
    ch.teardown()
    ch.closed = True
    ch.conn.channel_closed(ch.id)
    ch.conn.send_method(ch.id, commands.Channel.CloseOk())


def channel_close_ok(ch: Channel, method: commands.Channel.CloseOk, payload: bytes) -> None:
    return  # only meaningful while closing, handled there


def channel_flow(ch: Channel, method: commands.Channel.Flow, payload: bytes) -> None:
    if not method.active:
        raise not_implemented("active=false")
    ch.flow_active = True
    ch.conn.send_method(ch.id, commands.Channel.FlowOk(active=True))
    ch.resume_deliveries()


def channel_flow_ok(ch: Channel, method: commands.Channel.FlowOk, payload: bytes) -> None:
    # The broker never sends channel.flow, so a flow-ok is unsolicited.
    raise command_invalid("unimplemented method")


# ---------------------------------------------------------------------- exchange class
def strip_cr_lf(name: str) -> str:
    """RabbitMQ drops CR and LF from exchange and queue names before using them."""
    return name.replace("\r", "").replace("\n", "") if "\r" in name or "\n" in name else name


def exchange_declare(ch: Channel, method: commands.Exchange.Declare, payload: bytes) -> None:
    ch.vhost.declare_exchange(
        strip_cr_lf(method.exchange),
        method.exchange_type,
        passive=method.passive,
        durable=method.durable,
        auto_delete=method.auto_delete,
        internal=method.internal,
        arguments=method.arguments or {},
        arg_types=argument_types(payload),
        authorize=ch.conn.authorize,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.DeclareOk())


def exchange_delete(ch: Channel, method: commands.Exchange.Delete, payload: bytes) -> None:
    ch.vhost.delete_exchange(
        strip_cr_lf(method.exchange), if_unused=method.if_unused, authorize=ch.conn.authorize
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.DeleteOk())


def exchange_bind(ch: Channel, method: commands.Exchange.Bind, payload: bytes) -> None:
    ch.vhost.add_binding(
        "exchange",
        strip_cr_lf(method.destination),
        strip_cr_lf(method.source),
        method.routing_key,
        method.arguments or {},
        argument_types(payload),
        ch.conn,
        ch.conn.authorize,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.BindOk())


def exchange_unbind(ch: Channel, method: commands.Exchange.Unbind, payload: bytes) -> None:
    ch.vhost.remove_binding(
        "exchange",
        strip_cr_lf(method.destination),
        strip_cr_lf(method.source),
        method.routing_key,
        method.arguments or {},
        ch.conn,
        ch.conn.authorize,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.UnbindOk())


# ---------------------------------------------------------------------- queue class
def queue_name(ch: Channel, name: str) -> str:
    """The empty name means the channel's most recently declared queue."""
    name = strip_cr_lf(name)
    if name:
        return name
    if not ch.last_queue:
        raise not_found("no previously declared queue")
    return ch.last_queue


def queue_for(ch: Channel, name: str, access: Access | None = None) -> Queue:
    """The queue a method names, after checking the user's `access` to it (RabbitMQ checks
    before looking the queue up)."""
    name = queue_name(ch, name)
    if access is not None:
        authorize(ch, access, "queue", name)
    return ch.vhost.queue(name, ch.conn)


def authorize(ch: Channel, access: Access, kind: str, name: str) -> None:
    if ch.conn.authorize is not None:
        ch.conn.authorize(access, kind, name)


def _binding_key(ch: Channel, queue: str, routing_key: str) -> str:
    """Empty queue and routing key: the key is the most recently declared queue's name."""
    if not queue and not routing_key:
        return ch.last_queue
    return routing_key


def queue_declare(ch: Channel, method: commands.Queue.Declare, payload: bytes) -> None:
    name = strip_cr_lf(method.queue)
    if name.startswith(REPLY_TO):
        _declare_reply_to(ch, method, name)
        return
    queue = ch.vhost.declare_queue(
        name,
        owner=ch.conn,
        passive=method.passive,
        durable=method.durable,
        exclusive=method.exclusive,
        auto_delete=method.auto_delete,
        arguments=method.arguments or {},
        arg_types=argument_types(payload),
        authorize=ch.conn.authorize,
    )
    ch.last_queue = queue.name
    if not method.nowait:
        _declare_ok(ch, queue.name, queue.message_count, queue.consumer_count)


def _declare_ok(ch: Channel, name: str, messages: int, consumers: int) -> None:
    """queue.declare-ok, encoded here: pamqp refuses names RabbitMQ accepts (spaces, commas)."""
    data = name.encode()
    payload = _DECLARE_OK + bytes([len(data)]) + data + struct.pack(">II", messages, consumers)
    ch.conn.write(encode_method_payload(ch.id, payload))


def _declare_reply_to(ch: Channel, method: commands.Queue.Declare, name: str) -> None:
    """A declare of a direct reply-to name (passive or not, flags ignored): one consumer,
    never any messages; 404 for a name that is not a live reply-to queue."""
    if not ch.vhost.reply_to_exists(name):
        raise not_found(f"no {ch.vhost.rs('queue', name)}")
    if not method.nowait:
        _declare_ok(ch, name, 0, 1)


def queue_bind(ch: Channel, method: commands.Queue.Bind, payload: bytes) -> None:
    ch.vhost.add_binding(
        "queue",
        queue_name(ch, method.queue),
        strip_cr_lf(method.exchange),
        _binding_key(ch, method.queue, method.routing_key),
        method.arguments or {},
        argument_types(payload),
        ch.conn,
        ch.conn.authorize,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.BindOk())


def queue_unbind(ch: Channel, method: commands.Queue.Unbind, payload: bytes) -> None:
    ch.vhost.remove_binding(
        "queue",
        queue_name(ch, method.queue),
        strip_cr_lf(method.exchange),
        _binding_key(ch, method.queue, method.routing_key),
        method.arguments or {},
        ch.conn,
        ch.conn.authorize,
    )
    ch.conn.send_method(ch.id, commands.Queue.UnbindOk())


def queue_purge(ch: Channel, method: commands.Queue.Purge, payload: bytes) -> None:
    queue = queue_for(ch, method.queue, "read")
    count = queue.purge()
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.PurgeOk(message_count=count))


def queue_delete(ch: Channel, method: commands.Queue.Delete, payload: bytes) -> None:
    name = queue_name(ch, method.queue)
    authorize(ch, "configure", "queue", name)
    count = ch.vhost.delete_queue(
        name,
        owner=ch.conn,
        if_unused=method.if_unused,
        if_empty=method.if_empty,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.DeleteOk(message_count=count))


# ---------------------------------------------------------------------- confirm class
def confirm_select(ch: Channel, method: commands.Confirm.Select, payload: bytes) -> None:
    if ch.mode == "tx":
        raise precondition_failed("cannot switch from tx to confirm mode")
    ch.mode = "confirm"
    ch.conn.confirming[ch.id] = ch.flush_confirms
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Confirm.SelectOk())
