"""Crash safety: a broker process taking transactional publishes and acks from several clients
across several durable queues is killed with SIGKILL at random moments and restarted on the same
data dir. After every restart: nothing whose tx.commit-ok arrived is lost, nothing rolled back or
never committed appears, every commit is there whole or not at all, no duplicates, order kept.

One exception, RabbitMQ's rule (docs/transactions.md): a commit that only acks is answered
without waiting for the disk, so a message whose ack commit-ok arrived may come back,
redelivered and in its place, until a commit that published, sent after that commit-ok, has been
answered (the journal is written in order: that commit's sync covers the ack)."""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pytest

from tests.support.broker_process import BrokerProcess

QUEUES = ("crash-a", "crash-b", "crash-c")
PUBLISHERS = 3
ROUNDS = int(os.environ.get("RABBITISH_CRASH_ROUNDS", "20"))
PERSISTENT = pika.BasicProperties(delivery_mode=2)


@dataclass
class Unit:
    """One commit: the message ids it publishes (by queue) or acks."""

    publishes: dict[str, list[str]] = field(default_factory=dict)
    acks: list[str] = field(default_factory=list)


@dataclass
class Ledger:
    """What the clients know for sure, and what is in doubt because the crash ate a reply."""

    present: dict[str, list[str]] = field(default_factory=lambda: {q: [] for q in QUEUES})
    forbidden: set[str] = field(default_factory=set)  # rolled back or never committed
    # Acked by a committed ack. A publish is visible before its commit-ok arrives, so the ack
    # of a message can be committed before its publisher has recorded it as present.
    acked: set[str] = field(default_factory=set)
    in_doubt: list[Unit] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Ack-only commits are not synced before commit-ok. Ticks order the clients' events: an ack
    # is surely on disk once a publishing commit sent at a later tick was answered.
    ticks: itertools.count[int] = field(default_factory=itertools.count)
    ack_answered: dict[str, int] = field(default_factory=dict)  # message id -> tick
    synced_before: int = -1  # acks answered before this tick are on disk

    def may_come_back(self, mid: str) -> bool:
        """An acked message whose ack may not have reached the disk."""
        return self.ack_answered.get(mid, -1) > self.synced_before


def publisher(
    url: str,
    name: str,
    ledger: Ledger,
    stop: threading.Event,
    rng: random.Random,
    counter: list[int],
) -> None:
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.tx_select()
        while not stop.is_set():
            unit = Unit()
            for _ in range(rng.randint(1, 6)):
                queue = rng.choice(QUEUES)
                counter[0] += 1
                mid = f"{name}-{counter[0]}"
                ch.basic_publish("", queue, mid.encode(), PERSISTENT)
                unit.publishes.setdefault(queue, []).append(mid)
            ids = [m for ms in unit.publishes.values() for m in ms]
            if rng.random() < 0.15:
                with ledger.lock:
                    ledger.forbidden.update(ids)
                ch.tx_rollback()
                continue
            with ledger.lock:
                ledger.in_doubt.append(unit)
                sent = next(ledger.ticks)
            ch.tx_commit()
            with ledger.lock:
                ledger.in_doubt.remove(unit)
                ledger.synced_before = max(ledger.synced_before, sent)
                for queue, ms in unit.publishes.items():
                    ledger.present[queue].extend(m for m in ms if m not in ledger.acked)
    except (pika.exceptions.AMQPError, OSError):
        return  # the broker was killed under us


def acker(url: str, ledger: Ledger, stop: threading.Event, rng: random.Random) -> None:
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.tx_select()
        while not stop.is_set():
            queue = rng.choice(QUEUES)
            unit = Unit()
            tags = []
            for _ in range(rng.randint(1, 4)):
                method, _props, body = ch.basic_get(queue)
                if method is None:
                    break
                tags.append(method.delivery_tag)
                unit.acks.append(body.decode())
            if not tags:
                time.sleep(0.005)
                continue
            for tag in tags:
                ch.basic_ack(tag)
            with ledger.lock:
                ledger.in_doubt.append(unit)
            ch.tx_commit()
            with ledger.lock:
                ledger.in_doubt.remove(unit)
                ledger.acked.update(unit.acks)
                answered = next(ledger.ticks)
                ledger.ack_answered.update((mid, answered) for mid in unit.acks)
                for mid in unit.acks:
                    for ms in ledger.present.values():
                        if mid in ms:
                            ms.remove(mid)
            ch.close()  # fresh channel: unacked gets are requeued, which is fine
            ch = conn.channel()
            ch.tx_select()
    except (pika.exceptions.AMQPError, OSError):
        return


def read_queues(url: str) -> dict[str, list[tuple[str, bool]]]:
    """Every message in each queue, in order, left in place (gets are requeued on close)."""
    contents: dict[str, list[tuple[str, bool]]] = {}
    conn = pika.BlockingConnection(pika.URLParameters(url))
    for queue in QUEUES:
        ch = conn.channel()
        ch.queue_declare(queue, durable=True)
        items = []
        while True:
            method, _props, body = ch.basic_get(queue)
            if method is None:
                break
            items.append((body.decode(), method.redelivered))
        ch.close()
        contents[queue] = items
    conn.close()
    return contents


def reconcile(ledger: Ledger, contents: dict[str, list[tuple[str, bool]]]) -> None:
    """Check the restarted broker against the ledger, then make the ledger match it."""
    found = {q: [m for m, _ in items] for q, items in contents.items()}
    everything = [m for ms in found.values() for m in ms]
    assert len(everything) == len(set(everything)), "duplicate messages after restart"
    seen = set(everything)
    assert not seen & ledger.forbidden, (
        f"rolled back/uncommitted appeared: {seen & ledger.forbidden}"
    )
    expected = {q: list(ms) for q, ms in ledger.present.items()}
    redelivered = {m for items in contents.values() for m, again in items if again}
    for unit in ledger.in_doubt:
        if unit.publishes:
            ids = [m for ms in unit.publishes.values() for m in ms]
            live = [m for m in ids if m not in ledger.acked]
            there = [m for m in live if m in seen]
            # A committed ack of one of its messages proves the commit happened, if that ack
            # is on disk, or if the acked message is back.
            committed = bool(there) or any(
                m in seen or not ledger.may_come_back(m) for m in ids if m in ledger.acked
            )
            expect = len(live) if committed else 0
            assert len(there) == expect, f"commit visible in part: {there} of {ids}"
            if committed:
                for queue, ms in unit.publishes.items():
                    expected[queue].extend(m for m in ms if m not in ledger.acked)
            else:
                ledger.forbidden.update(ids)
        else:
            gone = [m for m in unit.acks if m not in seen]
            assert len(gone) in (0, len(unit.acks)), f"ack commit applied in part: {gone}"
            if gone:
                ledger.acked.update(unit.acks)
                for queue in expected:
                    expected[queue] = [m for m in expected[queue] if m not in unit.acks]
    ledger.in_doubt.clear()
    for queue in QUEUES:
        missing = set(expected[queue]) - set(found[queue])
        assert not missing, f"committed messages lost from {queue}: {sorted(missing)[:5]}"
        extra = set(found[queue]) - set(expected[queue])
        # Back from an ack-only commit not yet on disk: redelivered, and live again.
        back = {m for m in extra if ledger.may_come_back(m)}
        assert back <= redelivered, f"acked messages back, not redelivered: {back - redelivered}"
        extra -= back
        assert not extra, f"unexpected messages in {queue}: {sorted(extra)[:5]}"
        ledger.acked -= back
        by_publisher = defaultdict(list)
        for mid in found[queue]:
            name, n = mid.rsplit("-", 1)
            by_publisher[name].append(int(n))
        for name, ns in by_publisher.items():
            assert ns == sorted(ns), f"order broken in {queue} for {name}"
        ledger.present[queue] = list(found[queue])
    # After the restart what is gone is gone on disk, and what came back is live again.
    ledger.ack_answered.clear()


@pytest.mark.timeout(600)
def test_kill_9_at_random_moments(tmp_path):
    rng = random.Random(int(os.environ.get("RABBITISH_CRASH_SEED", "1234")))
    broker = BrokerProcess(
        data_dir=tmp_path / "data",
        log=tmp_path / "broker.log",
        keep_port=True,  # clients reconnect to the same URL after every restart
        url_query="?heartbeat=0&connection_attempts=1",
    )
    ledger = Ledger()
    counters = {f"p{i}": [0] for i in range(PUBLISHERS)}
    try:
        broker.start()
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        for queue in QUEUES:
            ch.queue_declare(queue, durable=True)
        conn.close()
        for _round in range(ROUNDS):
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=publisher,
                    args=(
                        broker.url,
                        name,
                        ledger,
                        stop,
                        random.Random(rng.random()),
                        counters[name],
                    ),
                    daemon=True,
                )
                for name in counters
            ]
            threads.append(
                threading.Thread(
                    target=acker,
                    args=(broker.url, ledger, stop, random.Random(rng.random())),
                    daemon=True,
                )
            )
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.05, 0.6))  # the random moment of the crash
            broker.kill()
            stop.set()
            for t in threads:
                t.join(10)
            broker.start()
            reconcile(ledger, read_queues(broker.url))
        assert sum(len(ms) for ms in ledger.present.values()) > 0
    finally:
        broker.close()
