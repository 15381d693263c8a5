"""The tx class: select, commit, rollback on the engine's Transaction. basic.return for unroutable
mandatory publishes goes out at commit, before tx.commit-ok; commit-ok itself is sent when the
commit is complete (end of the current input batch; for a commit that published, after the store
sync). Until then any further method on the channel is refused as RabbitMQ refuses it. The
deliveries a commit without publishes lets out follow its commit-ok on the wire, as RabbitMQ's
channel sends them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

from rabbitish.engine.errors import precondition_failed
from rabbitish.engine.transactions import Transaction
from rabbitish.protocol import outgoing

if TYPE_CHECKING:
    from rabbitish.protocol.channel import Channel


def tx_select(ch: Channel, method: commands.Tx.Select, payload: bytes) -> None:
    if ch.mode == "confirm":
        raise precondition_failed("cannot switch from confirm to tx mode")
    ch.mode = "tx"
    if ch.tx is None:
        ch.begin_transaction()
    ch.conn.send_method(ch.id, commands.Tx.SelectOk())


def _require_tx(ch: Channel) -> Transaction:
    if ch.tx is None:
        raise precondition_failed("channel is not transactional")
    return ch.tx


def tx_commit(ch: Channel, method: commands.Tx.Commit, payload: bytes) -> None:
    # A commit the engine refuses (a reject-publish queue is full: RabbitMQ's "partial tx
    # completion") raises before anything is applied; the channel then closes, rolling back.
    tx = _require_tx(ch)
    if not tx.publishes:
        # Settlements alone: commit-ok goes out before the deliveries they let out.
        ch.conn.deliver_after_flush()
    result = tx.commit()
    ch.begin_transaction()
    for message in result.returned:
        ch.send_content(
            outgoing.basic_return(ch.id, 312, "NO_ROUTE", message.exchange, message.routing_key),
            message.raw_properties,
            message.body,
        )
    ch.commit_in_progress = True
    if result.needs_sync:
        # Like RabbitMQ, which waits for the queues involved, a commit that published is in
        # progress until its effects are synced to disk (in memory: for the rest of this input
        # batch). A prepare (a publish to amq.rabbitish.txn, routing key `prepare`) always
        # waits: its commit-ok is the prepare-ok, sent only once the prepared transaction is on
        # disk.
        journal = ch.vhost.journal
        position = journal.position
        ch.conn.pending_completions.append(
            lambda: journal.when_synced(position, ch.finish_commit, ch.commit_failed)
        )
    elif result.queues_touched:
        # Acks and rejects alone: journaled in order, not waited for (RabbitMQ does not sync
        # them either; docs/transactions.md); complete with the rest of this input batch.
        ch.conn.pending_completions.append(ch.finish_commit)
    else:
        ch.finish_commit()
    if result.settled:
        ch.dispatch_queues()


def tx_rollback(ch: Channel, method: commands.Tx.Rollback, payload: bytes) -> None:
    restored = _require_tx(ch).rollback()
    ch.begin_transaction()
    if restored:
        merged = dict(ch.unacked)
        for delivery in restored:
            merged[delivery.tag] = delivery
        ch.unacked = dict(sorted(merged.items()))
    ch.conn.send_method(ch.id, commands.Tx.RollbackOk())
