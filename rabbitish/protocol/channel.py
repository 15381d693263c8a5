"""One 0-9-1 channel: method dispatch, channel errors and close, unacked deliveries and their
tags, the transaction glue and direct reply-to. It composes content assembly (content.py),
publisher confirms (confirms.py) and the global prefetch limiter (consumers.py). Which frames
each state accepts is in states.py; the method handlers (wiring.py, basic.py, tx.py) come as one
table from dispatch.py, given by the connection."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands

from rabbitish.engine.delivery import Delivery, Outcome, settle
from rabbitish.engine.errors import (
    INTERNAL_ERROR,
    AMQPError,
    command_invalid,
    precondition_failed,
    syntax_error,
)
from rabbitish.engine.sessions import SessionRef, SessionView
from rabbitish.engine.transactions import Transaction
from rabbitish.protocol import outgoing, properties
from rabbitish.protocol.ack_timeout import AckTimeout
from rabbitish.protocol.confirms import PublisherConfirms
from rabbitish.protocol.consumers import GlobalLimiter
from rabbitish.protocol.content import ContentAssembly
from rabbitish.protocol.framing import (
    Chunk,
    Payload,
    encode_close,
    encode_content,
    method_ids,
    method_index,
)
from rabbitish.protocol.states import (
    ChannelAction,
    ChannelEvent,
    ChannelState,
    ConnectionAction,
    Rule,
    channel_rule,
    next_channel_state,
)
from rabbitish.protocol.tx_timeout import idle_transaction_text

if TYPE_CHECKING:
    from rabbitish.protocol.connection import Connection
    from rabbitish.protocol.consumers import Consumer091
    from rabbitish.protocol.dispatch import Routes

FrameAction = Callable[[Rule, int, Payload], None]  # what a channel state does with a frame

_OPEN = ChannelState.OPEN
_CLOSING = ChannelState.CLOSING
_CLOSED = ChannelState.CLOSED
_COMMITTING = ChannelState.COMMITTING
_AWAIT_BODY = ChannelState.AWAIT_BODY
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
        # The channel as the engine names it: its consumers' session, and who published or
        # received a message in a trace (engine/tracing.py).
        self.session = SessionRef(conn, channel_id, conn.user)
        self.state = _OPEN  # states.py; closing, closed and commit_in_progress read it
        self.routes = routes  # method index -> handler (protocol.dispatch)
        self.mode: str | None = None  # None, "confirm" or "tx"
        self.consumers: dict[str, Consumer091] = {}
        self.unacked: dict[int, Delivery] = {}
        self.next_tag = 1
        self.prefetch_count = 0  # applies to consumers created after basic.qos(global=false)
        self.limiter = GlobalLimiter()  # basic.qos(global=true)
        self.flow_active = True
        self.last_queue = ""  # the 0-9-1 "most recently declared queue" shortcut
        self.reply_to_name: str | None = None
        # Exchanges this channel was allowed to publish to (RabbitMQ caches the check per
        # channel too: a permission change applies to channels opened after it).
        self.may_write: set[str] = set()
        self.reply_to_tag: str | None = None
        self.tx: Transaction | None = None  # the open engine transaction once tx.select was seen
        self._resume_from = 0  # rotates which blocked queue resumes first
        self.dispatching = False  # inside a method handler
        self.after_reply: list[tuple[Channel, bytes]] = []
        self.stats = dict.fromkeys(CHANNEL_STATS, 0)
        self.ack_timeout = AckTimeout(self, conn.config.consumer_timeout)
        self.confirms = PublisherConfirms(channel_id, self.vhost, self._send_if_open, self.stats)
        # Run by the connection after each read batch once confirm.select made it confirming.
        self.flush_confirms = self.confirms.flush
        content = ContentAssembly(self, conn.max_message_size, self._advance, self.close_with_error)
        self._start_content = content.start
        self._content_target = content.payload_target
        # What each state's rule does with a frame (states.py): the content frames go straight
        # to the assembly. Keyed by any rule's action type: a channel state's rules only ever
        # name channel actions.
        self._actions: dict[ChannelAction | ConnectionAction, FrameAction] = {
            ChannelAction.IGNORE: self._ignore,
            ChannelAction.REFUSE: self._refuse,
            ChannelAction.DISPATCH: self._dispatch,
            ChannelAction.CONTENT_HEADER: content.header_frame,
            ChannelAction.CONTENT_BODY: content.body_frame,
            ChannelAction.ANSWER_CLOSE: self._answer_close,
            ChannelAction.CLOSE_DONE: self._close_done,
        }

    # ------------------------------------------------------------------ state
    def _advance(self, event: ChannelEvent) -> None:
        self.state = next_channel_state(self.state, event)

    def payload_target(self, size: int) -> memoryview | None:
        """Where the frame reader may read the next body frame's payload (`size` bytes)
        straight into: its place in the body being received, while this channel waits for
        body frames."""
        if self.state is not _AWAIT_BODY:
            return None
        return self._content_target(size)

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
    def handle_frame(self, ftype: int, payload: Payload) -> None:
        """A method, content header or body frame for this channel; the state's rule decides."""
        rule = channel_rule(self.state, ftype, payload)
        self._actions[rule.action](rule, ftype, payload)

    def _dispatch(self, rule: Rule, ftype: int, payload: Payload) -> None:
        """Run the method's handler: a soft error closes the channel, a hard one the connection."""
        assert isinstance(payload, bytes), "a method frame's payload is never a view"
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

    def _refuse(self, rule: Rule, ftype: int, payload: Payload) -> None:
        assert rule.error is not None
        raise rule.error.error(ftype, payload)

    def _ignore(self, rule: Rule, ftype: int, payload: Payload) -> None:
        return

    def _answer_close(self, rule: Rule, ftype: int, payload: Payload) -> None:
        self.conn.send_method(self.id, commands.Channel.CloseOk())

    def _close_done(self, rule: Rule, ftype: int, payload: Payload) -> None:
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
    def begin_transaction(self) -> None:
        """tx.select, and after each commit or rollback: 0-9-1 starts the next transaction at
        once."""
        self.tx = self.conn.node.transactions.begin(self, on_timeout=self._transaction_idle)

    def _transaction_idle(self, tx: Transaction) -> None:
        """The transaction stayed idle past --transaction-timeout with work in it: the channel
        is closed with 406, which rolls it back (as RabbitMQ closes one past consumer_timeout)."""
        if tx is not self.tx or self.closing or self.closed:
            return
        timeout_ms = round(self.conn.node.transactions.idle_timeout * 1000)
        error = precondition_failed(idle_transaction_text(self.id, timeout_ms))
        self.close_with_error(error.at(0, 0))

    def settle(self, deliveries: list[Delivery], outcome: Outcome) -> None:
        """Settle deliveries already taken out of the unacked set: staged in the open
        transaction, or at once."""
        if self.tx is not None:
            self.tx.stage_settle(deliveries, outcome)
            return
        settle(deliveries, outcome)
        self.dispatch_queues()

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
        entry = delivery.entry
        message = entry.message
        raw_properties = message.raw_properties
        if entry.delivery_count > 1:
            stats["redeliver"] += 1
            if delivery.queue.args.counts_returns:
                raw_properties = properties.with_delivery_count(
                    raw_properties, entry.delivery_count - 1
                )
        if not delivery.settled:
            delivery.tag = tag
            self.unacked[tag] = delivery
            self.ack_timeout.watch()
            limiter = self.limiter
            if limiter.prefetch:
                limiter.delivered()
        parts: list[Chunk] = [
            outgoing.deliver(
                self.id,
                consumer.tag_bytes,
                tag,
                entry.delivery_count > 1,
                outgoing.names(message.exchange, message.routing_key),
            )
        ]
        encode_content(self.id, raw_properties, message.body, self.conn.frame_max, parts)
        self.conn.write_many(parts)

    def send_content(self, method_frame: bytes, raw_properties: bytes, body: bytes) -> None:
        parts: list[Chunk] = [method_frame]
        encode_content(self.id, raw_properties, body, self.conn.frame_max, parts)
        self.conn.write_many(parts)

    def resume_deliveries(self) -> None:
        """Credit may have come back to any consumer of the channel (qos, flow, recover,
        drained output): all of them may take again."""
        self.unblock_consumers()
        self.dispatch_queues()

    def dispatch_queues(self) -> None:
        """Let the consumed queues deliver to the consumers whose credit came back (a
        settlement names its consumer to its queue: `engine.delivery.settle`); the channel's
        global limit, when set, frees credit for every consumer of the channel. The queue that
        goes first rotates, so queues blocked on the global limit share it fairly."""
        if self.limiter.prefetch:
            self.unblock_consumers()
        queues = list({id(c.queue): c.queue for c in self.consumers.values()}.values())
        if len(queues) > 1:
            start = self._resume_from % len(queues)
            self._resume_from = start + 1
            queues = queues[start:] + queues[:start]
        for queue in queues:
            queue.dispatch_active()

    def unblock_consumers(self) -> None:
        """Tell each consumed queue that this channel's consumers may take again."""
        for consumer in self.consumers.values():
            if consumer.blocked:
                consumer.queue.credit_returned(consumer)

    def view(self) -> SessionView:
        return SessionView(
            number=self.id,
            state="closing" if self.closing else "running",
            transactional=self.mode == "tx",
            confirm=self.mode == "confirm",
            consumer_count=len(self.consumers),
            prefetch_count=self.prefetch_count,
            global_prefetch_count=self.limiter.prefetch,
            unacked=len(self.unacked),
            transactions=(self.tx,) if self.tx is not None else (),
            unconfirmed=self.confirms.unconfirmed if self.mode == "confirm" else 0,
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

    # ------------------------------------------------------------------ output
    def _send_if_open(self, frame: bytes) -> None:
        if not (self.closing or self.closed):
            self.conn.write(frame)
