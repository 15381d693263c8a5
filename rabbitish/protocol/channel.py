"""One 0-9-1 channel: content assembly (method -> header -> body), method dispatch, channel
errors and close, unacked deliveries, prefetch and publisher confirms. Which frames each state
accepts is in states.py; the method handlers (wiring.py, basic.py, tx.py) come as one table from
dispatch.py, given by the connection."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import (
    INTERNAL_ERROR,
    AMQPError,
    ConnectionError_,
    command_invalid,
    message_too_large,
    syntax_error,
    unexpected_frame,
)
from rabbitish.engine.sessions import SessionView
from rabbitish.engine.transactions import Transaction
from rabbitish.protocol import outgoing
from rabbitish.protocol.ack_timeout import AckTimeout
from rabbitish.protocol.framing import (
    Chunk,
    decode_content_header,
    encode_close,
    encode_content,
    method_ids,
    method_index,
)
from rabbitish.protocol.states import (
    ChannelAction,
    ChannelEvent,
    ChannelState,
    Rule,
    channel_rule,
    next_channel_state,
)

if TYPE_CHECKING:
    from rabbitish.protocol.connection import Connection
    from rabbitish.protocol.consumers import Consumer091
    from rabbitish.protocol.dispatch import Routes

_OPEN = ChannelState.OPEN
_CLOSING = ChannelState.CLOSING
_CLOSED = ChannelState.CLOSED
_COMMITTING = ChannelState.COMMITTING
_CONTENT_METHOD = ChannelEvent.CONTENT_METHOD
_CONTENT_HEADER = ChannelEvent.CONTENT_HEADER
_CONTENT_DONE = ChannelEvent.CONTENT_DONE
_PUBLISH = (60, 40)  # the one method that carries content from a client
# A channel's statistics, as RabbitMQ's channel message_stats name them.
CHANNEL_STATS = (
    "publish",
    "confirm",
    "return_unroutable",
    "drop_unroutable",
    "deliver",
    "deliver_no_ack",
    "get",
    "get_no_ack",
    "get_empty",
    "redeliver",
    "ack",
)


class Channel:
    def __init__(self, conn: Connection, channel_id: int, routes: Routes) -> None:
        self.conn = conn
        self.id = channel_id
        assert conn.vhost is not None
        self.vhost = conn.vhost
        self.state = _OPEN  # states.py; closing, closed and commit_in_progress read it
        self.routes = routes  # method index -> handler (protocol.dispatch)
        self.mode: str | None = None  # None, "confirm" or "tx"
        self.consumers: dict[str, Consumer091] = {}
        self.unacked: dict[int, Delivery] = {}
        self.next_tag = 1
        self.prefetch_count = 0  # applies to consumers created after basic.qos(global=false)
        self.global_prefetch = 0
        self.flow_active = True
        self.last_queue = ""  # the 0-9-1 "most recently declared queue" shortcut
        self.reply_to_name: str | None = None
        # Exchanges this channel was allowed to publish to (RabbitMQ caches the check per
        # channel too: a permission change applies to channels opened after it).
        self.may_write: set[str] = set()
        self.reply_to_tag: str | None = None
        # publisher confirms
        self.publish_seq = 0
        self._confirm_upto = 0
        self._confirm_sent = 0
        # content assembly
        self._content_handler: Callable[..., None] | None = None
        self._content_fields: tuple[Any, ...] = ()
        self._body_size = 0
        self._raw_properties = b""
        self._body_parts: list[bytes] = []
        self._received = 0
        self.tx: Transaction | None = None  # the open engine transaction once tx.select was seen
        self._resume_from = 0  # rotates which blocked queue resumes first
        # the channel-wide (global) prefetch limiter, modelled on RabbitMQ's rabbit_limiter
        self.global_volume = 0
        self.dispatching = False  # inside a method handler
        self.after_reply: list[tuple[Channel, bytes]] = []
        self.stats = dict.fromkeys(CHANNEL_STATS, 0)
        self.ack_timeout = AckTimeout(self, conn.config.consumer_timeout)

    # ------------------------------------------------------------------ state
    def _advance(self, event: ChannelEvent) -> None:
        self.state = next_channel_state(self.state, event)

    @property
    def closing(self) -> bool:
        """We sent channel.close and wait for close-ok."""
        return self.state is _CLOSING

    @property
    def closed(self) -> bool:
        return self.state is _CLOSED

    @closed.setter
    def closed(self, value: bool) -> None:
        """Set by the channel.close handler once it answered close-ok."""
        if value:
            self._advance(ChannelEvent.CLOSED)

    @property
    def commit_in_progress(self) -> bool:
        return self.state is _COMMITTING

    @commit_in_progress.setter
    def commit_in_progress(self, value: bool) -> None:
        """Set by tx.commit until its effects are synced, cleared by finish_commit."""
        self._advance(ChannelEvent.COMMIT_STARTED if value else ChannelEvent.COMMIT_DONE)

    # ------------------------------------------------------------------ frames
    def handle_frame(self, ftype: int, payload: bytes) -> None:
        """A method, content header or body frame for this channel; the state's rule decides."""
        rule = channel_rule(self.state, ftype, payload)
        _ACTIONS[rule.action](self, rule, ftype, payload)

    def _dispatch(self, rule: Rule, ftype: int, payload: bytes) -> None:
        """Run the method's handler: a soft error closes the channel, a hard one the connection."""
        route = self.routes.get(method_index(payload))
        self.dispatching = True
        try:
            if route is None:
                self.conn._decode(payload)
                raise command_invalid("unimplemented method")
            if route.decode is None:
                route.handler(self, self.conn._decode(payload), payload)
            elif route.content:
                self._start_content(route.handler, self._fast(route.decode, payload))
            else:
                route.handler(self, *self._fast(route.decode, payload))
        except AMQPError as error:
            error.at(*method_ids(payload))
            if error.is_hard:
                self.after_reply.clear()
                raise
            self.close_with_error(error)
        except (IndexError, struct.error, UnicodeDecodeError) as err:
            ids = method_ids(payload)
            self.after_reply.clear()
            raise syntax_error(f"malformed method frame {ids[0]}/{ids[1]}").at(*ids) from err
        finally:
            self.dispatching = False
        if self.after_reply:
            self._send_after_reply()

    def _send_after_reply(self) -> None:
        """Frames that RabbitMQ sends only after the reply to the method being handled, e.g.
        the basic.cancel for a consumer whose queue this method deleted."""
        pending, self.after_reply = self.after_reply, []
        for channel, frame in pending:
            if not (channel.closing or channel.closed):
                self.conn.write(frame)

    def _fast(self, decode: Callable[[bytes], Any], payload: bytes) -> Any:
        """Hand-rolled decoding of a hot method; on anything odd the strict decoder runs, so a
        malformed frame gets exactly the error the general path gives."""
        try:
            return decode(payload)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError):
            self.conn._decode(payload)
            raise

    def _refuse(self, rule: Rule, ftype: int, payload: bytes) -> None:
        assert rule.error is not None
        raise rule.error.error(ftype, payload)

    def _ignore(self, rule: Rule, ftype: int, payload: bytes) -> None:
        return

    def _start_content(self, handler: Callable[..., None], fields: tuple[Any, ...]) -> None:
        self._content_handler = handler
        self._content_fields = fields
        self._raw_properties = b""
        self._body_parts = []
        self._received = 0
        self._advance(_CONTENT_METHOD)

    def _content_header(self, rule: Rule, ftype: int, payload: bytes) -> None:
        try:
            class_id, body_size, raw = decode_content_header(payload)
        except (ValueError, struct.error) as err:
            # RabbitMQ's assembler crashes on a header without property flags.
            raise ConnectionError_(541, "").at(0, 0) from err
        if class_id != 60:
            raise unexpected_frame(
                f"expected content header for class 60, got one for class {class_id} instead"
            ).at(*_PUBLISH)
        limit = self.conn.max_message_size
        if body_size > limit:
            # RabbitMQ refuses it once the whole body is in; the body frames still to come
            # are dropped by the closing channel instead of being gathered first.
            self._content_handler, self._content_fields = None, ()
            self._advance(_CONTENT_DONE)
            self.close_with_error(message_too_large(body_size, limit).at(*_PUBLISH))
            return
        self._body_size = body_size
        self._raw_properties = raw
        if body_size == 0:
            self._finish_content()
        else:
            self._advance(_CONTENT_HEADER)

    def _content_body(self, rule: Rule, ftype: int, payload: bytes) -> None:
        self._body_parts.append(payload)
        self._received += len(payload)
        if self._received == self._body_size:
            self._finish_content()

    def _finish_content(self) -> None:
        handler, fields = self._content_handler, self._content_fields
        assert handler is not None
        self._content_handler, self._content_fields = None, ()
        self._advance(_CONTENT_DONE)
        parts = self._body_parts
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        self._body_parts = []
        try:
            handler(self, *fields, self._raw_properties, body)
        except AMQPError as error:
            error.at(*_PUBLISH)
            if error.is_hard:
                raise
            self.close_with_error(error)

    def _answer_close(self, rule: Rule, ftype: int, payload: bytes) -> None:
        self.conn.send_method(self.id, commands.Channel.CloseOk())

    def _close_done(self, rule: Rule, ftype: int, payload: bytes) -> None:
        self.closed = True
        self.conn.channel_closed(self.id)

    # ------------------------------------------------------------------ errors and close
    def close_with_error(self, error: AMQPError) -> None:
        self.conn.write(
            encode_close(
                self.id,
                commands.Channel.Close.index,
                error.reply_code,
                error.reply_text,
                error.class_id,
                error.method_id,
            )
        )
        self.teardown()
        self._advance(ChannelEvent.CLOSE_SENT)

    def connection_closed(self) -> None:
        """The connection closed or went: release everything; nothing more goes out here (a
        commit in progress completes without its commit-ok)."""
        self.teardown()
        if not self.closed:
            self._advance(ChannelEvent.CONNECTION_CLOSED)

    def teardown(self) -> None:
        """Release what the channel holds: consumers, unacked deliveries (requeued in place),
        staged transaction work, direct reply-to registration."""
        if self.closed or self.closing:
            return
        self.ack_timeout.cancel()
        for consumer in list(self.consumers.values()):
            consumer.queue.remove_consumer(consumer)
        self.consumers.clear()
        deliveries = list(self.unacked.values())
        if self.tx is not None:
            # Acked-but-uncommitted deliveries go back too, in place, with the unacked ones.
            deliveries.extend(self.tx.rollback())
            self.tx = None
        settle(deliveries, Outcome.REQUEUE)
        self.unacked.clear()
        if self.reply_to_name is not None:
            self.vhost.reply_to_targets.pop(self.reply_to_name, None)
            self.reply_to_name = None

    # ------------------------------------------------------------------ deliveries
    @property
    def credit_used(self) -> int:
        """Deliveries counting against global prefetch. Like RabbitMQ's limiter this is a volume
        that starts at the number of unacked deliveries when the limit is set, grows with each
        consumer delivery that needs an ack and shrinks as consumer deliveries are settled
        (basic.get deliveries never count; settlements staged in a transaction count at
        commit)."""
        return self.global_volume

    def limit_global(self, prefetch_count: int) -> None:
        """basic.qos(global=true)."""
        if prefetch_count == 0:
            self.unlimit_global()
            return
        if self.global_prefetch == 0:
            self.global_volume = len(self.unacked)
        self.global_prefetch = prefetch_count

    def unlimit_global(self) -> None:
        """basic.qos(global=false) and a global limit of 0 both drop the channel limit."""
        self.global_prefetch = 0
        self.global_volume = 0

    def limiter_settled(self, count: int) -> None:
        """Consumer deliveries settled; RabbitMQ's limiter leaves a zero volume alone."""
        if self.global_prefetch and self.global_volume:
            self.global_volume -= count

    def begin_transaction(self) -> None:
        """tx.select, and after each commit or rollback: 0-9-1 starts the next transaction at
        once."""
        self.tx = self.conn.node.transactions.begin(self)

    def settle(self, deliveries: list[Delivery], outcome: Outcome) -> None:
        """Settle deliveries already taken out of the unacked set: staged in the open
        transaction, or at once."""
        if self.tx is not None:
            self.tx.stage_settle(deliveries, outcome)
            return
        settle(deliveries, outcome)
        self.resume_deliveries()

    def finish_commit(self) -> None:
        """The commit is complete: tell the client."""
        if self.state is _COMMITTING:  # not closed or closing meanwhile
            self._advance(ChannelEvent.COMMIT_DONE)
            self.conn.write(outgoing.commit_ok(self.id))

    def commit_failed(self, reason: str) -> None:
        """The store could not write the commit: it must not look committed, and its effects
        are already applied in memory, so the connection goes (as for an internal error)."""
        if self.state is _COMMITTING:
            self.conn.server_close(INTERNAL_ERROR, f"tx.commit not written to disk: {reason}")

    def deliver(self, consumer: Consumer091, delivery: Delivery) -> None:
        tag = self.next_tag
        self.next_tag = tag + 1
        stats = self.stats
        stats["deliver_no_ack" if delivery.settled else "deliver"] += 1
        if delivery.entry.delivery_count > 1:
            stats["redeliver"] += 1
        if not delivery.settled:
            delivery.tag = tag
            self.unacked[tag] = delivery
            self.ack_timeout.watch()
            if self.global_prefetch:
                self.global_volume += 1
        entry = delivery.entry
        message = entry.message
        parts: list[Chunk] = [
            outgoing.deliver(
                self.id,
                consumer.tag_bytes,
                tag,
                entry.delivery_count > 1,
                outgoing.names(message.exchange, message.routing_key),
            )
        ]
        encode_content(self.id, message.raw_properties, message.body, self.conn.frame_max, parts)
        self.conn.write_many(parts)

    def send_content(self, method_frame: bytes, raw_properties: bytes, body: bytes) -> None:
        parts: list[Chunk] = [method_frame]
        encode_content(self.id, raw_properties, body, self.conn.frame_max, parts)
        self.conn.write_many(parts)

    def resume_deliveries(self) -> None:
        """Credit freed up: let the consumed queues deliver again. The queue that goes first
        rotates, so queues blocked on the channel's global limit share it fairly."""
        queues = list({id(c.queue): c.queue for c in self.consumers.values()}.values())
        if len(queues) > 1:
            start = self._resume_from % len(queues)
            self._resume_from = start + 1
            queues = queues[start:] + queues[:start]
        for queue in queues:
            queue.dispatch()

    def view(self) -> SessionView:
        return SessionView(
            number=self.id,
            state="closing" if self.closing else "running",
            transactional=self.mode == "tx",
            confirm=self.mode == "confirm",
            consumer_count=len(self.consumers),
            prefetch_count=self.prefetch_count,
            global_prefetch_count=self.global_prefetch,
            unacked=len(self.unacked),
            transactions=(self.tx,) if self.tx is not None else (),
            unconfirmed=self.publish_seq - self._confirm_sent if self.mode == "confirm" else 0,
            message_stats=dict(self.stats),
        )

    def consumer_cancelled_by_broker(self, consumer: Consumer091) -> None:
        """The consumed queue went away. Clients that declared consumer_cancel_notify get a
        basic.cancel; when a method on this connection caused it (queue.delete), RabbitMQ's
        reply to that method comes first."""
        if self.consumers.get(consumer.tag) is consumer:
            del self.consumers[consumer.tag]
        if not self.conn.capabilities.get("consumer_cancel_notify"):
            return
        frame = outgoing.cancel(self.id, consumer.tag_bytes)
        busy = next((c for c in self.conn.channels.values() if c.dispatching), None)
        if busy is None:
            self.conn.write(frame)
        else:
            busy.after_reply.append((self, frame))

    # ------------------------------------------------------------------ confirms
    def confirm_published(self, seq: int, ok: bool) -> None:
        """Record the outcome of publish `seq`; acks are coalesced and sent per read batch."""
        if ok:
            self._confirm_upto = seq
            return
        self._confirm_upto = seq - 1
        self.flush_confirms()
        self.stats["confirm"] += 1
        nack = outgoing.nack(self.id, seq, False)
        self.after_sync(nack, nack)
        self._confirm_sent = self._confirm_upto = seq

    def flush_confirms(self) -> None:
        upto, sent = self._confirm_upto, self._confirm_sent
        if upto > sent:
            self.stats["confirm"] += upto - sent
            multiple = upto - sent > 1
            self.after_sync(
                outgoing.ack(self.id, upto, multiple), outgoing.nack(self.id, upto, multiple)
            )
            self._confirm_sent = upto

    def after_sync(self, frame: bytes, failed: bytes) -> None:
        """Send `frame` once everything journaled so far is on disk: a confirm promises
        durability. In :memory: mode, and when nothing durable is pending, at once. If the
        store cannot write it, send `failed` (a nack) instead."""
        journal = self.vhost.journal
        journal.when_synced(
            journal.position,
            lambda: self._send_if_open(frame),
            lambda _reason: self._send_if_open(failed),
        )

    def _send_if_open(self, frame: bytes) -> None:
        if not (self.closing or self.closed):
            self.conn.write(frame)


_ACTIONS: dict[ChannelAction, Callable[[Channel, Rule, int, bytes], None]] = {
    ChannelAction.IGNORE: Channel._ignore,
    ChannelAction.REFUSE: Channel._refuse,
    ChannelAction.DISPATCH: Channel._dispatch,
    ChannelAction.CONTENT_HEADER: Channel._content_header,
    ChannelAction.CONTENT_BODY: Channel._content_body,
    ChannelAction.ANSWER_CLOSE: Channel._answer_close,
    ChannelAction.CLOSE_DONE: Channel._close_done,
}
