"""Handlers for the basic class: publish (routing, mandatory returns, confirms, direct reply-to),
consume / cancel / get, ack / nack / reject, qos and recover."""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING

from pamqp import commands

from rabbitish.engine.consumer import Selection
from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import (
    INTERNAL_ERROR,
    ConnectionError_,
    not_implemented,
    precondition_failed,
)
from rabbitish.engine.message import Message
from rabbitish.engine.reply_to import REPLY_TO, new_reply_to_name
from rabbitish.engine.selector import MessageSelector, SelectorError, parse
from rabbitish.protocol import outgoing, properties
from rabbitish.protocol.codec import message_from_properties
from rabbitish.protocol.consumers import Consumer091
from rabbitish.protocol.wiring import authorize, queue_for

if TYPE_CHECKING:
    from rabbitish.protocol.channel import Channel

MAX_MESSAGE_SIZE = 134217728  # RabbitMQ's default max_message_size (128 MiB)


def _token() -> str:
    """A generated consumer tag suffix: RabbitMQ's rabbit_guid format (url-safe, no padding)."""
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


# ---------------------------------------------------------------------- publish
def publish(
    ch: Channel,
    exchange_name: str,
    routing_key: str,
    mandatory: bool,
    immediate: bool,
    raw_properties: bytes,
    body: bytes,
) -> None:
    if immediate:  # checked before anything else, as RabbitMQ does
        raise not_implemented("immediate=true")
    if len(body) > MAX_MESSAGE_SIZE:
        raise precondition_failed(
            f"message size {len(body)} is larger than configured max size {MAX_MESSAGE_SIZE}"
        )
    vhost = ch.vhost
    if exchange_name not in ch.may_write:
        authorize(ch, "write", "exchange", exchange_name)
        ch.may_write.add(exchange_name)
    exchange = vhost.publish_exchange(exchange_name)
    try:
        found = properties.validate(raw_properties)
    except (ValueError, IndexError) as err:
        # RabbitMQ's channel crashes decoding them: 541 with no method named.
        raise ConnectionError_(INTERNAL_ERROR, "").at(0, 0) from err
    info = properties.PropertyInfo(raw_properties, found)
    user_id = _user_id(raw_properties, found)
    if info.reply_to == REPLY_TO:
        if ch.reply_to_name is None:
            raise precondition_failed("fast reply consumer does not exist")
        raw_properties = properties.with_shortstr(
            raw_properties, properties.REPLY_TO, ch.reply_to_name
        )
    if user_id is not None and user_id != ch.conn.user:
        raise precondition_failed(
            f"user_id property set to '{user_id}' but authenticated user was '{ch.conn.user}'"
        )
    message = message_from_properties(exchange_name, routing_key, raw_properties, body, info)
    seq = 0
    if ch.mode == "confirm":
        confirms = ch.confirms
        confirms.published += 1
        seq = confirms.published
    result = vhost.publish(exchange, routing_key, message, mandatory, ch.tx, ch.session)
    stats = ch.stats
    stats["publish"] += 1
    if not result.routed:
        stats["return_unroutable" if mandatory else "drop_unroutable"] += 1
    if result.returned:
        _return(ch, message)
    if seq:
        ch.confirms.outcome(seq, result.accepted)


def _return(ch: Channel, message: Message) -> None:
    ch.send_content(
        outgoing.basic_return(ch.id, 312, "NO_ROUTE", message.exchange, message.routing_key),
        message.raw_properties,
        message.body,
    )


def _user_id(raw_properties: bytes, found: dict[int, tuple[int, int]]) -> str | None:
    if properties.USER_ID not in found:
        return None
    start, end = found[properties.USER_ID]
    return raw_properties[start + 1 : end].decode("utf-8", "replace")


# ---------------------------------------------------------------------- settlement
def _collect(ch: Channel, tag: int, multiple: bool) -> list[Delivery]:
    """The deliveries an ack/nack/reject names; 406 for a tag that is not outstanding."""
    unacked = ch.unacked
    if multiple:
        if tag == 0:
            found = list(unacked.values())
        else:
            if tag not in unacked:
                raise precondition_failed(f"unknown delivery tag {tag}")
            found = [d for t, d in unacked.items() if t <= tag]
        for delivery in found:
            del unacked[delivery.tag]
        return found
    single = unacked.pop(tag, None)
    if single is None:
        raise precondition_failed(f"unknown delivery tag {tag}")
    return [single]


def ack(ch: Channel, tag: int, multiple: bool) -> None:
    deliveries = _collect(ch, tag, multiple)
    ch.stats["ack"] += len(deliveries)
    ch.settle(deliveries, Outcome.ACK)


def basic_reject(ch: Channel, method: commands.Basic.Reject, payload: bytes) -> None:
    # pamqp types decoded arguments as optional; a decoded frame always carries them.
    deliveries = _collect(ch, method.delivery_tag, False)  # type: ignore[arg-type]
    ch.settle(deliveries, Outcome.REQUEUE if method.requeue else Outcome.DISCARD)


def basic_nack(ch: Channel, method: commands.Basic.Nack, payload: bytes) -> None:
    deliveries = _collect(ch, method.delivery_tag, method.multiple)
    ch.settle(deliveries, Outcome.REQUEUE if method.requeue else Outcome.DISCARD)


def basic_recover(ch: Channel, method: commands.Basic.Recover, payload: bytes) -> None:
    if not method.requeue:
        raise not_implemented("requeue=false")
    # recover-ok goes out before the redeliveries, as in RabbitMQ.
    if method.name == "Basic.Recover":
        ch.conn.send_method(ch.id, commands.Basic.RecoverOk())
    deliveries = list(ch.unacked.values())
    ch.unacked.clear()
    settle(deliveries, Outcome.REQUEUE)
    ch.resume_deliveries()


# ---------------------------------------------------------------------- consume / get
def basic_qos(ch: Channel, method: commands.Basic.Qos, payload: bytes) -> None:
    if method.prefetch_size:
        raise not_implemented(f"prefetch_size!=0 ({method.prefetch_size})")
    if method.global_:
        ch.limiter.limit(method.prefetch_count, len(ch.unacked))
    else:
        # Applies to consumers created from now on and, as in RabbitMQ, drops the channel limit.
        ch.prefetch_count = method.prefetch_count
        ch.limiter.unlimit()
    ch.conn.send_method(ch.id, commands.Basic.QosOk())
    ch.resume_deliveries()


def basic_consume(ch: Channel, method: commands.Basic.Consume, payload: bytes) -> None:
    tag = method.consumer_tag or "amq.ctag-" + _token()
    if tag in ch.consumers:
        raise ConnectionError_(530, f"attempt to reuse consumer tag '{tag}'")
    if method.queue == REPLY_TO:
        _consume_reply_to(ch, method, tag)
        return
    queue = queue_for(ch, method.queue, "read")
    arguments = method.arguments or {}
    selection = _selection(arguments.get(SELECTOR_ARGUMENT))
    consumer = Consumer091(
        ch,
        queue,
        tag,
        no_ack=method.no_ack,
        exclusive=method.exclusive,
        prefetch=ch.prefetch_count,
        arguments=arguments,
    )
    consumer.selection = selection
    queue.check_can_consume(consumer)
    ch.consumers[tag] = consumer
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Basic.ConsumeOk(consumer_tag=tag))
    queue.add_consumer(consumer)


SELECTOR_ARGUMENT = "x-selector"  # rabbitish's own: a JMS selector for a 0-9-1 consumer


def _selection(text: object) -> Selection | None:
    """The consumer's selection from its `x-selector` argument (docs/amqp10.md "Selectors");
    406 for a selector that does not parse, with the column of the fault."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        raise precondition_failed(f"invalid x-selector: expected a string, got {text!r}")
    try:
        selector = parse(text)
    except SelectorError as err:
        raise precondition_failed(f"invalid x-selector {text!r}: {err}") from None
    return Selection(MessageSelector(selector))


def _consume_reply_to(ch: Channel, method: commands.Basic.Consume, tag: str) -> None:
    if not method.no_ack:
        raise precondition_failed("reply consumer cannot acknowledge")
    if ch.reply_to_name is not None:
        raise precondition_failed("reply consumer already set")
    name = new_reply_to_name()
    ch.reply_to_name = name
    tag_bytes = outgoing.shortstr(tag)

    def deliver(message: Message) -> None:
        if ch.closing or ch.closed:
            return
        # RabbitMQ 3.10 stamps replies with the channel's next delivery tag without using it
        # up (they are never acked).
        ch.send_content(
            outgoing.deliver(
                ch.id,
                tag_bytes,
                ch.next_tag,
                False,
                outgoing.names(message.exchange, message.routing_key),
            ),
            message.raw_properties,
            message.body,
        )

    ch.vhost.reply_to_targets[name] = deliver
    ch.reply_to_tag = tag
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Basic.ConsumeOk(consumer_tag=tag))


def basic_cancel(ch: Channel, method: commands.Basic.Cancel, payload: bytes) -> None:
    consumer = None
    if ch.reply_to_name is not None and ch.reply_to_tag == method.consumer_tag:
        # the direct reply-to consumer is looked at first, as in RabbitMQ
        ch.vhost.reply_to_targets.pop(ch.reply_to_name, None)
        ch.reply_to_name = None
    else:
        consumer = ch.consumers.pop(method.consumer_tag, None)  # type: ignore[arg-type]
    if not method.nowait:
        ch.conn.send_method(ch.id, commands.Basic.CancelOk(consumer_tag=method.consumer_tag))
    if consumer is not None:
        consumer.queue.remove_consumer(consumer)


def basic_get(ch: Channel, method: commands.Basic.Get, payload: bytes) -> None:
    queue = queue_for(ch, method.queue, "read")
    delivery = queue.get(method.no_ack, ch.session)
    stats = ch.stats
    if delivery is None:
        stats["get_empty"] += 1
        ch.conn.send_method(ch.id, commands.Basic.GetEmpty())
        return
    stats["get_no_ack" if method.no_ack else "get"] += 1
    if delivery.redelivered:
        stats["redeliver"] += 1
    tag = ch.next_tag
    ch.next_tag += 1
    if not method.no_ack:
        delivery.tag = tag
        ch.unacked[tag] = delivery
        ch.ack_timeout.watch()
    message = delivery.entry.message
    raw_properties = message.raw_properties
    if queue.args.counts_returns:
        raw_properties = properties.with_delivery_count(raw_properties, delivery.delivery_count - 1)
    ch.send_content(
        outgoing.get_ok(
            ch.id,
            tag,
            delivery.redelivered,
            message.exchange,
            message.routing_key,
            queue.message_count,
        ),
        raw_properties,
        message.body,
    )
