"""Crash safety: a broker process taking transactional publishes (AMQP 0-9-1 tx.commit and 1.0
discharges) and acks from several clients across several durable queues crashes at random
moments and is restarted on the same data dir: killed with SIGKILL, or, on the power-loss file
system, by a power cut that also throws away what was never synced (tests/support/crash.py's
FAULTS; POWERLOSS_CUTS cuts per mode). After every restart: nothing whose tx.commit-ok or
committed discharge arrived is lost, nothing rolled back or never committed appears, every
commit is there whole or not at all, no duplicates, order kept. A message whose ack-only commit
was answered may come back only as RabbitMQ allows once such commits stop waiting for the disk:
with its whole commit, redelivered, in its place."""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pytest
from proton import Message, ProtonException

from tests.support.broker_process import BrokerProcess
from tests.support.crash import FAULT_PARAMS, crash_site, kill_mid_work
from tests.support.proton_tx import TxClient

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
    # Ack-only commits answered since the last restart: the ones that may come back.
    acked_units: list[list[str]] = field(default_factory=list)
    acked_back: int = 0  # messages that did
    in_doubt: list[Unit] = field(default_factory=list)
    begun: int = 0  # commits and rollbacks begun (the crash comes a random number later)
    errors: list[str] = field(default_factory=list)  # answers no client should get
    lock: threading.Lock = field(default_factory=threading.Lock)


def worker(url: str, name: str, ledger: Ledger, rng: random.Random) -> None:
    """Workers w0 .. w<PUBLISHERS - 1> publish over 0-9-1, the next one over AMQP 1.0, the
    last one acks."""
    if name.endswith(f"w{PUBLISHERS + 1}"):
        acker(url, ledger, rng)
    elif name.endswith(f"w{PUBLISHERS}"):
        amqp10_publisher(url, name, ledger, rng)
    else:
        publisher(url, name, ledger, rng)


def publisher(url: str, name: str, ledger: Ledger, rng: random.Random) -> None:
    """AMQP 0-9-1 (pika): persistent publishes on a tx channel, tx.commit or tx.rollback."""
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.tx_select()

        def send(queue: str, mid: str) -> None:
            ch.basic_publish("", queue, mid.encode(), PERSISTENT)

        publish_units(name, ledger, rng, send, ch.tx_commit, ch.tx_rollback)
    except (pika.exceptions.AMQPError, OSError):
        return  # the broker was killed under us


def amqp10_publisher(url: str, name: str, ledger: Ledger, rng: random.Random) -> None:
    """AMQP 1.0 (qpid-proton): durable transfers in a declared transaction, discharged with
    commit or abort."""
    try:
        client = TxClient(url)
        senders = {queue: client.conn.create_sender(f"/queue/{queue}") for queue in QUEUES}
        txn = [client.declare()]

        def send(queue: str, mid: str) -> None:
            message = Message(body=mid.encode(), durable=True, inferred=True)
            delivery = txn[0].send(senders[queue].link, message)
            client.conn.wait(lambda: delivery.remote_state, msg="transactional transfer")

        def discharge(commit: bool) -> None:
            outcome = client.discharge(txn[0], commit)
            if outcome != ("committed" if commit else "aborted"):
                with ledger.lock:
                    ledger.errors.append(f"discharge (commit={commit}) answered {outcome}")
            txn[0] = client.declare()

        publish_units(name, ledger, rng, send, lambda: discharge(True), lambda: discharge(False))
    except (ProtonException, OSError):
        return


def publish_units(
    name: str,
    ledger: Ledger,
    rng: random.Random,
    send: Callable[[str, str], None],
    commit: Callable[[], None],
    rollback: Callable[[], None],
) -> None:
    """Send units of 1 to 6 messages across the queues, each committed (85 %) or rolled back,
    recording in the ledger what is in doubt, forbidden and committed; until the broker dies."""
    counter = 0
    while True:
        unit = Unit()
        for _ in range(rng.randint(1, 6)):
            queue = rng.choice(QUEUES)
            counter += 1
            mid = f"{name}-{counter}"
            send(queue, mid)
            unit.publishes.setdefault(queue, []).append(mid)
        ids = [m for ms in unit.publishes.values() for m in ms]
        if rng.random() < 0.15:
            with ledger.lock:
                ledger.forbidden.update(ids)
                ledger.begun += 1
            rollback()
            continue
        with ledger.lock:
            ledger.in_doubt.append(unit)
            ledger.begun += 1
        commit()
        with ledger.lock:
            ledger.in_doubt.remove(unit)
            for queue, ms in unit.publishes.items():
                ledger.present[queue].extend(m for m in ms if m not in ledger.acked)


def acker(url: str, ledger: Ledger, rng: random.Random) -> None:
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.tx_select()
        while True:
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
                ledger.begun += 1
            ch.tx_commit()
            with ledger.lock:
                ledger.in_doubt.remove(unit)
                ledger.acked.update(unit.acks)
                ledger.acked_units.append(unit.acks)
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
    assert not ledger.errors, ledger.errors
    found = {q: [m for m, _ in items] for q, items in contents.items()}
    everything = [m for ms in found.values() for m in ms]
    assert len(everything) == len(set(everything)), "duplicate messages after restart"
    seen = set(everything)
    assert not seen & ledger.forbidden, (
        f"rolled back/uncommitted appeared: {seen & ledger.forbidden}"
    )
    expected = {q: list(ms) for q, ms in ledger.present.items()}
    for unit in ledger.in_doubt:
        if unit.publishes:
            ids = [m for ms in unit.publishes.values() for m in ms]
            live = [m for m in ids if m not in ledger.acked]
            there = [m for m in live if m in seen]
            # A committed ack of one of its messages proves the commit happened.
            committed = bool(there) or len(live) < len(ids)
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
    redelivered = {m for items in contents.values() for m, flag in items if flag}
    for unit in ledger.acked_units:
        back = [m for m in unit if m in seen]
        assert len(back) in (0, len(unit)), f"ack commit undone in part: {back} of {unit}"
        assert set(back) <= redelivered, f"acked messages back, not redelivered: {back}"
        if back:  # its commit-ok came before the disk had it: back in place, as if never acked
            ledger.acked.difference_update(back)
            ledger.acked_back += len(back)
            for queue in QUEUES:
                expected[queue].extend(m for m in back if m in found[queue])
    ledger.acked_units.clear()
    for queue in QUEUES:
        missing = set(expected[queue]) - set(found[queue])
        assert not missing, f"committed messages lost from {queue}: {sorted(missing)[:5]}"
        extra = set(found[queue]) - set(expected[queue])
        assert not extra, f"unexpected messages in {queue}: {sorted(extra)[:5]}"
        by_publisher = defaultdict(list)
        for mid in found[queue]:
            name, n = mid.rsplit("-", 1)
            by_publisher[name].append(int(n))
        for name, ns in by_publisher.items():
            assert ns == sorted(ns), f"order broken in {queue} for {name}"
        ledger.present[queue] = list(found[queue])


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fault", FAULT_PARAMS)
def test_crashes_at_random_moments(tmp_path, fault):
    rng = random.Random(int(os.environ.get("RABBITISH_CRASH_SEED", "1234")))
    with crash_site(tmp_path, fault, rng) as site:
        run_ledger(tmp_path, site, rng)


def run_ledger(tmp_path, site, rng) -> None:
    broker = BrokerProcess(
        data_dir=site.data_dir,
        log=tmp_path / "broker.log",
        keep_port=True,  # clients reconnect to the same URL after every restart
        url_query="?heartbeat=0&connection_attempts=1",
    )
    ledger = Ledger()
    try:
        broker.start()
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        for queue in QUEUES:
            ch.queue_declare(queue, durable=True)
        conn.close()
        for round_ in range(site.rounds(ROUNDS)):
            # The crash comes once the workers began a random number of commits.
            kill_mid_work(
                broker,
                worker,
                ledger,
                lambda: ledger.begun,
                rng=rng,
                round_=round_,
                workers=PUBLISHERS + 2,
                least=2,
                most=25,
                site=site,
            )
            reconcile(ledger, read_queues(broker.url))
        assert sum(len(ms) for ms in ledger.present.values()) > 0
        print(f"acked messages back after a crash: {ledger.acked_back}")
    finally:
        broker.close()
