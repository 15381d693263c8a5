"""Crash safety of prepared transactions with acks: workers take persistent messages from a
durable queue, publish results to another, ack what they took and prepare it all as one id
(tx.commit-ok says it is on disk), then commit, roll back or leave it undecided, while the broker
is killed with SIGKILL at random moments of prepare and decide and restarted. After every
restart, against a ledger of what the workers know: a transaction's results are visible whole or
not at all, a confirmed commit is visible and its taken messages gone, a confirmed rollback never
becomes visible; then every id in doubt is decided, and every message of the round is exactly once
either back on its queue or consumed by a committed transaction (nothing lost, doubled,
half-applied or resurrected). RABBITISH_PREPARED_KILLS rounds (default 5; `make crash-prepared`
runs more). The same ledger runs across power cuts (tests/support/crash.py's FAULTS):
POWERLOSS_CUTS cuts per mode."""

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
from tests.support.half import bodies, decide, prepare

SOURCE, RESULTS = "prep-in", "prep-out"
WORKERS = 2
PER_ROUND = 40  # messages put on the source queue each round
KILLS = int(os.environ.get("RABBITISH_PREPARED_KILLS", "5"))
PERSISTENT = pika.BasicProperties(delivery_mode=2)


@dataclass
class Txn:
    """One id as its worker knows it."""

    taken: list[str] = field(default_factory=list)  # got, then acked in the transaction
    published: list[str] = field(default_factory=list)
    prepared: bool = False  # tx.commit-ok of the prepare came
    decision: str | None = None  # "commit" / "rollback" once sent
    decided: bool = False  # the decision was confirmed


@dataclass
class Ledger:
    txns: dict[str, Txn] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def worker(url: str, name: str, ledger: Ledger, rng: random.Random) -> None:
    n = 0
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.tx_select()
        deciding = conn.channel()
        deciding.confirm_delivery()
        while True:
            n += 1
            txn_id = f"{name}-{n}"
            txn = Txn()
            with ledger.lock:
                ledger.txns[txn_id] = txn
            tags = []
            for _ in range(rng.randint(1, 3)):
                method, _props, body = ch.basic_get(SOURCE)
                if method is None:
                    break
                txn.taken.append(body.decode())
                tags.append(method.delivery_tag)
            for k in range(rng.randint(1, 2)):
                txn.published.append(f"{txn_id}:{k}")
                ch.basic_publish("", RESULTS, txn.published[-1].encode(), PERSISTENT)
            for tag in tags:
                ch.basic_ack(tag)
            prepare(ch, txn_id)
            txn.prepared = True
            roll = rng.random()
            if roll < 0.1:
                continue  # left undecided: the broker must keep it, locks and all
            txn.decision = "commit" if roll < 0.7 else "rollback"
            if rng.random() < 0.5:
                decide(ch, txn_id, txn.decision)  # staged: applied at tx.commit
                ch.tx_commit()
            else:
                decide(deciding, txn_id, txn.decision)
            txn.decided = True
    except (pika.exceptions.AMQPError, OSError):
        return  # killed under us


def drain(url: str, queue: str) -> list[str]:
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        return [b.decode() for b in bodies(conn.channel(), queue)]


def visible(ledger: Ledger, results: list[str]) -> set[str]:
    """Ids whose results are visible; each must be whole, and none twice."""
    doubled = [item for item, count in Counter(results).items() if count > 1]
    assert not doubled, f"doubled results: {doubled[:5]}"
    by_id: dict[str, set[str]] = {}
    for body in results:
        by_id.setdefault(body.split(":")[0], set()).add(body)
    for txn_id, seen in by_id.items():
        txn = ledger.txns.get(txn_id)
        assert txn is not None, f"results of an unknown id: {seen}"
        assert seen == set(txn.published), f"{txn_id} half-applied: {seen} of {txn.published}"
        assert txn.decision == "commit", f"{txn_id} visible but never committed ({txn})"
    return set(by_id)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fault", FAULT_PARAMS)
def test_prepared_transactions_with_acks_survive_crashes(tmp_path, fault):
    rng = random.Random(int(os.environ.get("RABBITISH_CRASH_SEED", "2718")))
    with crash_site(tmp_path, fault, rng) as site:
        run_ledger(tmp_path, site, rng)


def run_ledger(tmp_path, site, rng) -> None:
    broker = BrokerProcess(
        data_dir=site.data_dir,
        log=tmp_path / "broker.log",
        keep_port=True,
        url_query="?heartbeat=0&connection_attempts=1",
    )
    ledger = Ledger()
    try:
        broker.start()
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            for queue in (SOURCE, RESULTS):
                ch.queue_declare(queue, durable=True)
        for round_ in range(site.rounds(KILLS)):
            sources = [f"r{round_}s{i}" for i in range(PER_ROUND)]
            with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
                ch = conn.channel()
                ch.confirm_delivery()
                for body in sources:
                    ch.basic_publish("", SOURCE, body.encode(), PERSISTENT)
            kill_mid_work(
                broker,
                worker,
                ledger,
                lambda: len(ledger.txns),
                rng=rng,
                round_=round_,
                workers=WORKERS,
                least=2,
                most=10,
                site=site,
            )

            # Before any new decision.
            back = drain(broker.url, SOURCE)
            committed = visible(ledger, drain(broker.url, RESULTS))
            for txn_id, txn in ledger.txns.items():
                if txn.decided and txn.decision == "commit":
                    assert txn_id in committed, f"confirmed commit {txn_id} lost"

            # Decide everything in doubt as its worker meant to (undecided ones: rollback).
            with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
                ch = conn.channel()
                ch.confirm_delivery()
                for txn_id, txn in ledger.txns.items():
                    if txn_id in committed or (txn.decided and txn.decision == "rollback"):
                        continue
                    decide(ch, txn_id, "commit" if txn.decision == "commit" else "rollback")
                    if txn.decision != "commit":
                        decide(ch, txn_id, "commit")  # must not resurrect anything
            back += drain(broker.url, SOURCE)
            committed |= visible(ledger, drain(broker.url, RESULTS))
            for txn_id, txn in ledger.txns.items():
                if txn.prepared and txn.decision == "commit":
                    assert txn_id in committed, f"prepared {txn_id} lost its commit"

            # Every message of the round exactly once: back on its queue, or consumed by one
            # committed transaction.
            consumed = [body for t in committed for body in ledger.txns[t].taken]
            everything = Counter(back + consumed)
            doubled = [body for body, count in everything.items() if count > 1]
            assert not doubled, f"doubled: {doubled[:5]}"
            assert set(everything) == set(sources), (
                f"lost: {sorted(set(sources) - set(everything))[:5]}, "
                f"strange: {sorted(set(everything) - set(sources))[:5]}"
            )
            ledger.txns.clear()
    finally:
        broker.close()
