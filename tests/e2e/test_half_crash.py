"""Crash safety of half transactions: workers publish persistent half messages to durable queues
(confirmed one by one) and then commit, roll back or leave each id undecided, while the broker is
killed with SIGKILL at random moments and restarted. After every restart, against a ledger of
what the workers know: no id is visible in part, every confirmed commit is visible whole, nothing
rolled back or never committed is visible, nothing is duplicated; then every id in doubt is
resolved with a decision and whatever it commits must be whole. The same ledger runs across power
cuts (tests/support/crash.py's FAULTS): POWERLOSS_CUTS cuts per mode."""

from __future__ import annotations

import os
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.crash import FAULT_PARAMS, crash_site, kill_mid_work
from tests.support.half import bodies, decide, half

QUEUES = ("half-a", "half-b")
WORKERS = 2
KILLS = int(os.environ.get("RABBITISH_HALF_KILLS", "20"))


@dataclass
class Txn:
    """One id as its worker knows it."""

    messages: list[tuple[str, str]] = field(default_factory=list)  # (queue, body), confirmed
    unconfirmed: list[tuple[str, str]] = field(default_factory=list)
    decision: str | None = None  # "commit" / "rollback" once sent
    confirmed: bool = False  # the decision was confirmed


@dataclass
class Ledger:
    txns: dict[str, Txn] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def worker(url: str, name: str, ledger: Ledger, rng: random.Random) -> None:
    n = 0
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.confirm_delivery()
        while True:
            n += 1
            txn_id = f"{name}-{n}"
            txn = Txn()
            with ledger.lock:
                ledger.txns[txn_id] = txn
            for k in range(rng.randint(1, 4)):
                item = (rng.choice(QUEUES), f"{txn_id}:{k}")
                txn.unconfirmed.append(item)
                ch.basic_publish("", item[0], item[1].encode(), half(txn_id))
                txn.unconfirmed.remove(item)
                txn.messages.append(item)
            roll = rng.random()
            if roll < 0.1:
                continue  # left undecided: the broker must keep holding it
            txn.decision = "commit" if roll < 0.75 else "rollback"
            decide(ch, txn_id, txn.decision)
            txn.confirmed = True
    except (pika.exceptions.AMQPError, OSError):
        return  # killed under us


def read_all(url: str) -> dict[str, list[str]]:
    """Everything each queue holds, taken (the queues start empty for the next round)."""
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        ch = conn.channel()
        return {q: [b.decode() for b in bodies(ch, q)] for q in QUEUES}


def check(ledger: Ledger, found: dict[str, list[str]], committed_ok: set[str]) -> set[str]:
    """Check the queues against the ledger; returns the ids found committed."""
    everywhere = [(q, body) for q, items in found.items() for body in items]
    duplicates = [item for item, count in Counter(everywhere).items() if count > 1]
    assert not duplicates, f"duplicated: {duplicates[:5]}"
    by_id: dict[str, set[tuple[str, str]]] = {}
    for queue, body in everywhere:
        by_id.setdefault(body.split(":")[0], set()).add((queue, body))
    for txn_id, seen in by_id.items():
        txn = ledger.txns.get(txn_id)
        assert txn is not None, f"unknown message {seen}"
        assert txn_id in committed_ok, f"{txn_id} visible but never committed ({txn})"
        # Whole: every confirmed message; an unconfirmed one may or may not have made it.
        assert set(txn.messages) <= seen <= set(txn.messages + txn.unconfirmed), (txn_id, seen)
        for items in found.values():
            mine = [b for b in items if b.split(":")[0] == txn_id]
            assert mine == sorted(mine, key=lambda b: int(b.split(":")[1])), "order broken"
    return set(by_id)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fault", FAULT_PARAMS)
def test_half_transactions_survive_crashes(tmp_path, fault):
    rng = random.Random(int(os.environ.get("RABBITISH_CRASH_SEED", "4321")))
    with crash_site(tmp_path, fault, rng) as site:
        run_ledger(tmp_path, site, rng)


def run_ledger(tmp_path, site, rng) -> None:
    kills = site.rounds(KILLS)
    broker = BrokerProcess(
        data_dir=site.data_dir,
        log=tmp_path / "broker.log",
        keep_port=True,
        url_query="?heartbeat=0&connection_attempts=1",
    )
    ledger = Ledger()
    decided_ids = 0
    try:
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            for queue in QUEUES:
                conn.channel().queue_declare(queue, durable=True)
        for round_ in range(kills):
            # Kill once the workers have started a random number of ids (at least two a
            # round, however slow the machine: the count below depends on it).
            kill_mid_work(
                broker,
                worker,
                ledger,
                lambda: len(ledger.txns),
                rng=rng,
                round_=round_,
                workers=WORKERS,
                least=2,
                most=12,
                site=site,
            )
            # Before any new decision: confirmed commits whole, in-doubt ones whole or absent.
            may_be_committed = {
                i for i, t in ledger.txns.items() if t.decision == "commit" and t.messages
            }
            found = read_all(broker.url)
            seen_ids = check(ledger, found, may_be_committed)
            for txn_id, txn in ledger.txns.items():
                if txn.decision == "commit" and txn.confirmed and txn.messages:
                    assert txn_id in seen_ids, f"confirmed commit {txn_id} lost"
            # Resolve everything in doubt; a commit of a held id must bring all of it.
            resolved: set[str] = set()
            with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
                ch = conn.channel()
                ch.confirm_delivery()
                for txn_id, txn in list(ledger.txns.items()):
                    if txn.confirmed or txn_id in seen_ids:
                        continue
                    if txn.decision == "rollback" or (txn.unconfirmed and not txn.messages):
                        decide(ch, txn_id, "rollback")
                        decide(ch, txn_id, "commit")  # must not resurrect anything
                    else:
                        decide(ch, txn_id, "commit")
                        resolved.add(txn_id)
            found = read_all(broker.url)
            committed = check(ledger, found, resolved)
            for txn_id in resolved:
                if ledger.txns[txn_id].messages:
                    assert txn_id in committed, f"held id {txn_id} lost its messages"
            decided_ids += len(ledger.txns)
            ledger.txns.clear()
        assert decided_ids >= kills * 2
    finally:
        broker.close()
