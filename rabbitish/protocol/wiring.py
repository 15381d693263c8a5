"""Handlers for channel, exchange, queue and confirm methods: the wiring a client declares."""

from __future__ import annotations

from pamqp import commands

from rabbitish.engine.errors import (
    ChannelError,
    channel_error,
    not_found,
    not_implemented,
    precondition_failed,
)
from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.queue import Queue
from rabbitish.protocol.channel import Channel, handles
from rabbitish.protocol.codec import argument_types


# ---------------------------------------------------------------------- channel class
@handles("Channel.Open")
def channel_open(ch: Channel, method: commands.Channel.Open, payload: bytes) -> None:
    raise channel_error("second 'channel.open' seen")


@handles("Channel.Close")
def channel_close(ch: Channel, method: commands.Channel.Close, payload: bytes) -> None:
    ch.teardown()
    ch.closed = True
    ch.conn.channel_closed(ch.id)
    ch.conn.send_method(ch.id, commands.Channel.CloseOk())


@handles("Channel.CloseOk")
def channel_close_ok(ch: Channel, method: commands.Channel.CloseOk, payload: bytes) -> None:
    return  # only meaningful while closing, handled there


@handles("Channel.Flow")
def channel_flow(ch: Channel, method: commands.Channel.Flow, payload: bytes) -> None:
    if not method.active:
        raise not_implemented("active=false")
    ch.flow_active = True
    ch.conn.send_method(ch.id, commands.Channel.FlowOk(active=True))
    ch.resume_deliveries()


@handles("Channel.FlowOk")
def channel_flow_ok(ch: Channel, method: commands.Channel.FlowOk, payload: bytes) -> None:
    return


# ---------------------------------------------------------------------- exchange class
@handles("Exchange.Declare")
def exchange_declare(ch: Channel, method: commands.Exchange.Declare, payload: bytes) -> None:
    ch.vhost.declare_exchange(
        method.exchange,
        method.exchange_type,
        passive=method.passive,
        durable=method.durable,
        auto_delete=method.auto_delete,
        internal=method.internal,
        arguments=method.arguments or {},
        arg_types=argument_types(payload),
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.DeclareOk())


@handles("Exchange.Delete")
def exchange_delete(ch: Channel, method: commands.Exchange.Delete, payload: bytes) -> None:
    try:
        ch.vhost.delete_exchange(method.exchange, if_unused=method.if_unused)
    except ChannelError as error:
        if error.reply_code != 404:
            raise
        # Deleting a missing exchange succeeds in RabbitMQ.
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.DeleteOk())


def _exchange_destination(ch: Channel, name: str) -> Exchange:
    return ch.vhost.exchange(name)


@handles("Exchange.Bind")
def exchange_bind(ch: Channel, method: commands.Exchange.Bind, payload: bytes) -> None:
    destination = _exchange_destination(ch, method.destination)
    ch.vhost.bind(destination, method.source, method.routing_key, method.arguments or {})
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.BindOk())


@handles("Exchange.Unbind")
def exchange_unbind(ch: Channel, method: commands.Exchange.Unbind, payload: bytes) -> None:
    destination = _exchange_destination(ch, method.destination)
    ch.vhost.unbind(destination, method.source, method.routing_key, method.arguments or {})
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Exchange.UnbindOk())


# ---------------------------------------------------------------------- queue class
def queue_name(ch: Channel, name: str) -> str:
    """The empty name means the channel's most recently declared queue."""
    if name:
        return name
    if not ch.last_queue:
        raise not_found("no previously declared queue")
    return ch.last_queue


def queue_for(ch: Channel, name: str) -> Queue:
    return ch.vhost.queue(queue_name(ch, name), ch.conn)


@handles("Queue.Declare")
def queue_declare(ch: Channel, method: commands.Queue.Declare, payload: bytes) -> None:
    name = method.queue
    if method.passive and not name:
        name = queue_name(ch, name)
    queue = ch.vhost.declare_queue(
        name,
        owner=ch.conn,
        passive=method.passive,
        durable=method.durable,
        exclusive=method.exclusive,
        auto_delete=method.auto_delete,
        arguments=method.arguments or {},
        arg_types=argument_types(payload),
    )
    ch.last_queue = queue.name
    if not method.nowait:
        ch.conn.send_method(
            ch.id,
            commands.Queue.DeclareOk(
                queue=queue.name,
                message_count=queue.message_count,
                consumer_count=queue.consumer_count,
            ),
        )


@handles("Queue.Bind")
def queue_bind(ch: Channel, method: commands.Queue.Bind, payload: bytes) -> None:
    queue = queue_for(ch, method.queue)
    routing_key = method.routing_key or (queue.name if not method.queue else "")
    ch.vhost.bind(queue, method.exchange, routing_key, method.arguments or {})
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.BindOk())


@handles("Queue.Unbind")
def queue_unbind(ch: Channel, method: commands.Queue.Unbind, payload: bytes) -> None:
    queue = queue_for(ch, method.queue)
    ch.vhost.unbind(queue, method.exchange, method.routing_key, method.arguments or {})
    ch.conn.send_method(ch.id, commands.Queue.UnbindOk())


@handles("Queue.Purge")
def queue_purge(ch: Channel, method: commands.Queue.Purge, payload: bytes) -> None:
    queue = queue_for(ch, method.queue)
    count = queue.purge()
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.PurgeOk(message_count=count))


@handles("Queue.Delete")
def queue_delete(ch: Channel, method: commands.Queue.Delete, payload: bytes) -> None:
    count = ch.vhost.delete_queue(
        queue_name(ch, method.queue),
        owner=ch.conn,
        if_unused=method.if_unused,
        if_empty=method.if_empty,
    )
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Queue.DeleteOk(message_count=count))


# ---------------------------------------------------------------------- confirm class
@handles("Confirm.Select")
def confirm_select(ch: Channel, method: commands.Confirm.Select, payload: bytes) -> None:
    if ch.mode == "tx":
        raise precondition_failed("cannot switch from tx to confirm mode")
    ch.mode = "confirm"
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Confirm.SelectOk())
