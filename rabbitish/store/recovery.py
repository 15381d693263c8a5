"""Start-up: rebuild durable exchanges, queues, bindings and the persistent messages on durable
queues from the database, in publication order. Messages that had been delivered come back
redelivered. Nothing of an unfinished transaction is in the database, so none of it returns;
a prepared one comes back whole: its half messages held, the messages it settled locked.

Recovery only reads: it rebuilds objects through the engine's `recover_*` entry points, which
apply none of the checks a client's declare goes through (what the broker accepted once must
come back as it was), and a kill at any moment of it leaves the data dir as it found it. A row
it cannot rebuild stops start-up with a StoreError naming the object and what to do."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rabbitish.engine.delivery import Outcome, settle
from rabbitish.engine.half import PreparedSettlement
from rabbitish.engine.message import Message, PropertyCodec, bump_message_ids
from rabbitish.engine.node import Node
from rabbitish.engine.policies import make_policy
from rabbitish.protocol.field_tables import decode_table
from rabbitish.store.pager import RECOVERED_BODIES, Pager
from rabbitish.store.schema import CLEAN_STOP, RESTORE, StoreError

log = logging.getLogger("rabbitish.store")

Progress = Callable[[int, int], None]


@dataclass
class RecoveryStats:
    exchanges: int = 0
    queues: int = 0
    bindings: int = 0
    messages: int = 0
    half_transactions: int = 0
    seconds: float = 0.0
    # Whether the last stop was clean (schema.CLEAN_STOP); after any other, every recovered
    # message comes back redelivered.
    clean_stop: bool = False
    # Half transactions none of whose messages came back: gone, as their transient messages are;
    # the caller drops their rows once recovery is over (recovery itself writes nothing).
    stale_half: list[tuple[str, str]] = field(default_factory=list)


UNRECOVERABLE = (
    "run the rabbitish version that wrote this data dir, or restore it from a backup; "
    "`rabbitish serve --data-dir DIR --check` verifies a data dir without serving"
)


@contextmanager
def rebuilding(source: str, what: str) -> Iterator[None]:
    """Any failure to rebuild one stored object becomes a one-line StoreError naming it."""
    try:
        yield
    except StoreError:
        raise
    except Exception as err:  # a stored row recovery cannot turn back into an object
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise StoreError(f"{source}: cannot recover {what} ({reason}); {UNRECOVERABLE}") from err


def _table(blob: bytes) -> dict:
    return decode_table(blob, 4) if blob else {}


def stored_message(
    mid: int,
    exchange: str,
    routing_key: str,
    props: bytes,
    body: bytes,
    codec: PropertyCodec,
    priority: int,
    expiration_ms: int | None,
) -> Message:
    """A message read back from the store keeps its id (queue and half rows refer to it)."""
    message = Message(
        exchange,
        routing_key,
        bytes(props),
        body,
        codec,
        persistent=True,
        priority=priority,
        expiration_ms=expiration_ms,
    )
    message.id = mid
    return message


def _load_bodies(conn: sqlite3.Connection, messages: dict[int, Message], ids: set[int]) -> None:
    wanted = sorted(ids)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for mid, body in conn.execute(
            f"SELECT id, body FROM messages WHERE id IN ({marks})", chunk
        ):
            messages[mid].page_in(bytes(body))


def recover(
    conn: sqlite3.Connection,
    node: Node,
    codec: PropertyCodec,
    pager: Pager,
    progress: Progress | None = None,
    source: str = "data dir",
) -> RecoveryStats:
    """Rebuild everything `conn` holds into `node`; `source` names the database in errors."""
    try:
        return _recover(conn, node, codec, pager, progress, source)
    except sqlite3.DatabaseError as err:
        raise StoreError(f"{source}: damaged rabbitish database ({err}); {RESTORE}") from err


def _recover(
    conn: sqlite3.Connection,
    node: Node,
    codec: PropertyCodec,
    pager: Pager,
    progress: Progress | None,
    source: str,
) -> RecoveryStats:
    started = time.perf_counter()
    stats = RecoveryStats()
    clean = conn.execute("SELECT 1 FROM meta WHERE key = ?", (CLEAN_STOP,)).fetchone()
    stats.clean_stop = clean is not None
    recover_policies(conn, node, source)
    for vhost_name, name, type_, auto_delete, internal, args, arg_types in conn.execute(
        "SELECT vhost, name, type, auto_delete, internal, arguments, arg_types FROM exchanges"
    ):
        with rebuilding(source, f"exchange '{name}' in vhost '{vhost_name}'"):
            vhost = node.add_vhost(vhost_name)
            vhost.recover_exchange(
                name,
                type_,
                auto_delete=bool(auto_delete),
                internal=bool(internal),
                arguments=_table(args),
                arg_types=json.loads(arg_types),
            )
        stats.exchanges += 1
    for vhost_name, name, auto_delete, args, arg_types in conn.execute(
        "SELECT vhost, name, auto_delete, arguments, arg_types FROM queues"
    ):
        with rebuilding(source, f"queue '{name}' in vhost '{vhost_name}'"):
            vhost = node.add_vhost(vhost_name)
            vhost.recover_queue(
                name,
                auto_delete=bool(auto_delete),
                arguments=_table(args),
                arg_types=json.loads(arg_types),
            )
        stats.queues += 1
    for vhost_name, source_name, dest_kind, destination, routing_key, args in conn.execute(
        "SELECT vhost, source, dest_kind, destination, routing_key, arguments FROM bindings"
    ):
        host = node.vhosts.get(vhost_name)
        if host is None:
            continue
        target = (host.queues if dest_kind == "queue" else host.exchanges).get(destination)
        if target is None or source_name not in host.exchanges:
            continue
        what = (
            f"binding of {dest_kind} '{destination}' to exchange '{source_name}' "
            f"(routing key '{routing_key}') in vhost '{vhost_name}'"
        )
        with rebuilding(source, what):
            host.bind(target, source_name, routing_key, _table(args))
        stats.bindings += 1
    # Stored messages settled by prepared transactions: locked again, not ready.
    locks: dict[tuple[str, str, int], tuple[str, int, Outcome, bool, bool]] = {}
    for vhost_name, txn_id, ord_, queue_name, seq, outcome, failed, here in conn.execute(
        "SELECT vhost, txn_id, ord, queue, seq, outcome, delivery_failed, undeliverable_here "
        "FROM half_settlements"
    ):
        with rebuilding(source, f"prepared transaction '{txn_id}' in vhost '{vhost_name}'"):
            how = Outcome(outcome)
        locks[(vhost_name, queue_name, seq)] = (txn_id, ord_, how, bool(failed), bool(here))
    settled: dict[tuple[str, str], list[PreparedSettlement]] = {}
    total = conn.execute("SELECT count(*) FROM queue_messages").fetchone()[0]
    messages: dict[int, Message] = {}
    max_id = 0
    now_wall, now_mono = time.time(), node.scheduler.now()
    # Bodies are not read here: the first RECOVERED_BODIES messages of each queue (up to the
    # pager's keep_bytes) get theirs in one pass below, the rest stay on disk until a consumer
    # reaches them.
    rows = conn.execute(
        "SELECT qm.vhost, qm.queue, qm.seq, qm.delivered, qm.expires_at, m.id, m.exchange, "
        "m.routing_key, m.properties, length(m.body), m.priority, m.expiration_ms "
        "FROM queue_messages qm JOIN messages m ON m.id = qm.message_id "
        "ORDER BY qm.vhost, qm.queue, qm.seq"
    )
    current = None
    current_key = None
    position = kept_bytes = 0
    wanted: set[int] = set()
    for (
        vhost_name,
        queue_name,
        seq,
        delivered,
        expires_at,
        mid,
        exchange,
        routing_key,
        props,
        size,
        priority,
        expiration_ms,
    ) in rows:
        if (vhost_name, queue_name) != current_key:
            current_key = (vhost_name, queue_name)
            host = node.vhosts.get(vhost_name)
            current = host.queues.get(queue_name) if host is not None else None
            position = kept_bytes = 0
        if current is None:
            continue
        message = messages.get(mid)
        if message is None:
            with rebuilding(
                source, f"message {mid} of queue '{queue_name}' in vhost '{vhost_name}'"
            ):
                message = stored_message(
                    mid, exchange, routing_key, props, b"", codec, priority, expiration_ms
                )
            message.size = size
            message.loader = pager.load
            message.page_out()
            pager.paged[mid] = message
            messages[mid] = message
            max_id = max(max_id, mid)
        expires_mono = None if expires_at is None else now_mono + (expires_at - now_wall)
        lock = locks.get((vhost_name, queue_name, seq)) if locks else None
        if lock is not None:
            txn_id, ord_, how, failed, here = lock
            delivery = current.restore_locked(seq, message, expires_mono)
            settled.setdefault((vhost_name, txn_id), []).append(
                PreparedSettlement(delivery, how, failed, here, ord_)
            )
            stats.messages += 1
            continue
        if position < RECOVERED_BODIES and kept_bytes <= pager.keep_bytes:
            wanted.add(mid)
            kept_bytes += size
        position += 1
        current.restore(seq, message, bool(delivered) or not stats.clean_stop, expires_mono)
        stats.messages += 1
        if progress is not None and stats.messages % 10000 == 0:
            progress(stats.messages, total)
    _load_bodies(conn, messages, wanted)
    for mid in wanted:
        pager.paged.pop(mid, None)
    bump_message_ids(max_id)
    stats.half_transactions = recover_half(conn, node, codec, stats.stale_half, settled)
    for vhost in node.vhosts.values():
        for queue in vhost.queues.values():
            queue.restored()
    stats.seconds = time.perf_counter() - started
    return stats


def recover_policies(conn: sqlite3.Connection, node: Node, source: str) -> None:
    """Policies come back first, so each queue and exchange is recovered under its policy."""
    for vhost_name, name, operator, pattern, apply_to, priority, definition in conn.execute(
        "SELECT vhost, name, operator, pattern, apply_to, priority, definition FROM policies"
    ):
        kind = "operator policy" if operator else "policy"
        with rebuilding(source, f"{kind} '{name}' in vhost '{vhost_name}'"):
            body = {
                "pattern": pattern,
                "apply-to": apply_to,
                "priority": priority,
                "definition": json.loads(definition),
            }
            policy = make_policy(vhost_name, name, body, bool(operator))
            node.add_vhost(vhost_name).policies.restore(policy)


def recover_half(
    conn: sqlite3.Connection,
    node: Node,
    codec: PropertyCodec,
    stale: list[tuple[str, str]],
    settled: dict[tuple[str, str], list[PreparedSettlement]] | None = None,
) -> int:
    """Undecided half transactions with their durable messages (bodies read now: they are
    few and must all be ready for a commit), the settlements of prepared ones (their messages
    locked again by the queue pass, in `settled`) and their check-back state, then the
    remembered decisions. A half transaction none of whose messages came back is gone, as its
    transient messages are; it goes into `stale` for the caller to drop. A prepared one stays
    (a transaction manager will decide it), whatever of its work came back. Check-back times
    are measured on recovery's wall clock, as message expiry is."""
    settled = settled or {}
    held: dict[tuple[str, str], list] = {}
    messages: dict[int, Message] = {}
    max_id = 0
    for (
        vhost_name,
        txn_id,
        ord_,
        queue_name,
        mid,
        exchange,
        key,
        props,
        body,
        prio,
        exp,
    ) in conn.execute(
        "SELECT h.vhost, h.txn_id, h.ord, h.queue, m.id, m.exchange, m.routing_key, "
        "m.properties, m.body, m.priority, m.expiration_ms "
        "FROM half_messages h JOIN messages m ON m.id = h.message_id "
        "ORDER BY h.vhost, h.txn_id, h.ord"
    ):
        vhost = node.vhosts.get(vhost_name)
        queue = vhost.queues.get(queue_name) if vhost is not None else None
        if queue is None:
            continue
        message = messages.get(mid)
        if message is None:
            message = stored_message(mid, exchange, key, props, bytes(body), codec, prio, exp)
            messages[mid] = message
            max_id = max(max_id, mid)
        held.setdefault((vhost_name, txn_id), []).append((queue, message, ord_))
    bump_message_ids(max_id)
    restored = 0
    rows = conn.execute(
        "SELECT vhost, id, created_at, check_queue, immunity, checks_sent, last_check_at, "
        "prepared FROM half_txns"
    ).fetchall()
    now_wall = time.time()
    for row in rows:
        vhost_name, txn_id, created_at, check_queue, immunity, checks_sent, last_check, prep = row
        entries = held.pop((vhost_name, txn_id), None) or []
        locks = sorted(settled.pop((vhost_name, txn_id), []), key=lambda lock: lock.ord)
        vhost = node.vhosts.get(vhost_name)
        if vhost is None or not (entries or locks or prep):
            stale.append((vhost_name, txn_id))
            continue
        vhost.half.restore(
            txn_id,
            created_at,
            check_queue,
            immunity,
            checks_sent,
            last_check,
            entries,
            locks,
            bool(prep),
            now_wall,
        )
        restored += 1
    if held:
        log.warning("half messages without their transaction ignored: %d ids", len(held))
    for locks in settled.values():  # locked by a transaction that is gone: back in place
        for lock in locks:
            if lock.delivery.queue.unlock(lock.delivery):
                settle([lock.delivery], Outcome.REQUEUE)
    for vhost_name, txn_id, committed in conn.execute(
        "SELECT vhost, id, committed FROM half_decisions ORDER BY rowid"
    ):
        vhost = node.vhosts.get(vhost_name)
        if vhost is not None:
            vhost.half.remember(txn_id, bool(committed))
    return restored
