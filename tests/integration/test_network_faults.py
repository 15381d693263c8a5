"""Broken networks under 0-9-1 clients: the fault proxy (tests/support/fault_proxy.py) stalls,
cuts mid-frame, trickles or vanishes (half-open, no FIN) during transactional publishes and acks,
tx.commit, publisher confirms and half-message decisions. After each fault:

- nothing the client saw committed or confirmed is lost, nothing is doubled, and a transaction
  is all there or not at all (across two queues and an ack), whatever the client saw;
- a vanished peer is dropped by the heartbeat (2 s here) and its transaction rolled back;
- no connection, channel, consumer, unacked delivery, open transaction, staged work or socket
  is left on the broker.

The default suite runs a few faults per operation; RABBITISH_NETFAULTS=full runs them all."""

from __future__ import annotations

import asyncio

import aio_pika
import pika
import pika.exceptions
import pytest

from rabbitish.testing import management_url
from tests.support.clients import bodies, pika_channel
from tests.support.fault_proxy import (
    TO_BROKER,
    TO_CLIENT,
    after_bytes,
    body_after,
    cut,
    method,
    on_frame,
    stall,
    trickle,
    vanish,
)
from tests.support.half import TXN_EXCHANGE, decide, half, half_transactions
from tests.support.network_faults import (
    HEARTBEAT,
    Seen,
    answered,
    broker_and_proxy_fixtures,
    pick,
    run_faulted,
)
from tests.support.queues import get_all

PERSISTENT = 2


faulty, proxy = broker_and_proxy_fixtures("netfaults")


def props(message_id: str, **extra) -> pika.BasicProperties:
    return pika.BasicProperties(delivery_mode=PERSISTENT, message_id=message_id, **extra)


def drain(url: str, queue: str) -> list[tuple[str, bool]]:
    """(message id, redelivered) of everything on `queue`, taken off it."""
    return [(props.message_id, got.redelivered) for got, props, _body in get_all(url, queue)]


def declare(url: str, *queues: str) -> None:
    with pika_channel(url) as ch:
        for queue in queues:
            ch.queue_declare(queue, durable=True)


# ---------------------------------------------------------------------- tx.commit
# (trigger, action, whether the second transaction is then certainly committed, or None: either)
TX_FAULTS = {
    "cut-mid-publish": (
        on_frame(TO_BROKER, body_after(method("Basic.Publish")), skip=2),
        cut(),
        False,
    ),
    "cut-commit": (on_frame(TO_BROKER, method("Tx.Commit"), skip=1), cut(), False),
    "cut-commit-ok": (on_frame(TO_CLIENT, method("Tx.CommitOk"), skip=1), cut(), True),
    "stall-commit": (on_frame(TO_BROKER, method("Tx.Commit"), skip=1), stall(0.5), True),
    "trickle-commit": (on_frame(TO_BROKER, method("Tx.Commit"), skip=1), trickle(0.002), True),
    # Held longer than the heartbeat allows: the broker drops the peer before the commit.
    "stall-past-heartbeat": (
        on_frame(TO_BROKER, method("Tx.Commit"), skip=1),
        stall(4.5 * HEARTBEAT),
        False,
    ),
    "vanish-mid-tx": (on_frame(TO_BROKER, method("Basic.Ack")), vanish(), False),
    "vanish-commit": (on_frame(TO_BROKER, method("Tx.Commit"), skip=1), vanish(), False),
    "vanish-commit-ok": (on_frame(TO_CLIENT, method("Tx.CommitOk"), skip=1), vanish(), True),
}


@pytest.mark.parametrize(
    "fault_name",
    pick(TX_FAULTS, ("cut-mid-publish", "cut-commit-ok", "trickle-commit", "vanish-commit")),
)
def test_a_transaction_survives_a_broken_network_whole_or_not_at_all(
    faulty, proxy, uid, fault_name
):
    broker, api = faulty
    trigger, action, committed = TX_FAULTS[fault_name]
    a, b, work = f"{uid}-a", f"{uid}-b", f"{uid}-work"
    declare(broker.url, a, b, work)
    with pika_channel(broker.url) as ch:
        ch.basic_publish("", work, b"job", props("job"))
    fault = proxy.arm(trigger, action)

    def two_transactions(seen: Seen) -> None:
        with pika.BlockingConnection(pika.URLParameters(proxy.url(broker.url))) as conn:
            ch = conn.channel()
            ch.tx_select()
            ch.basic_publish("", a, b"1", props("tx1-a"))
            ch.basic_publish("", b, b"1", props("tx1-b"))
            ch.tx_commit()
            seen.done.append("tx1")
            # A consumer holds the job unacked while the second transaction acks it.
            job, _properties, _body = next(ch.consume(work, inactivity_timeout=5))
            for n in range(3):
                ch.basic_publish("", a, b"2", props(f"tx2-a{n}"))
                ch.basic_publish("", b, b"2", props(f"tx2-b{n}"))
            ch.basic_ack(job.delivery_tag)
            seen.attempted.append("tx2")
            ch.tx_commit()
            seen.done.append("tx2")

    seen = run_faulted(broker, api, proxy, two_transactions, fault)

    in_a, in_b, jobs = drain(broker.url, a), drain(broker.url, b), drain(broker.url, work)
    tx2_a = [f"tx2-a{n}" for n in range(3)]
    tx2_b = [f"tx2-b{n}" for n in range(3)]
    assert seen.done[0] == "tx1"
    if [m for m, _ in in_a[1:]] == tx2_a:  # the second transaction committed: all of it
        assert [m for m, _ in in_b[1:]] == tx2_b and jobs == []
        assert committed is not False, "a commit the broker never read took effect"
    else:  # or none of it: the job is back, once, marked redelivered
        assert in_a[1:] == [] and in_b[1:] == [] and jobs == [("job", True)], (in_a, in_b, jobs)
        assert "tx2" not in seen.done, "the client saw a commit-ok for a lost transaction"
        assert committed is not True, "a transaction the broker committed is gone"
    assert [m for m, _ in in_a[:1]] == ["tx1-a"] and [m for m, _ in in_b[:1]] == ["tx1-b"]
    if answered(action):
        assert seen.error is None and seen.done == ["tx1", "tx2"]
    else:
        assert seen.error is not None and seen.done == ["tx1"]  # in doubt: no commit-ok


# ---------------------------------------------------------------------- publisher confirms
CONFIRMS = 20
CONFIRM_FAULTS = {
    "cut-after-bytes": (after_bytes(TO_BROKER, 2000), cut()),
    "cut-mid-body": (on_frame(TO_BROKER, body_after(method("Basic.Publish")), skip=9), cut()),
    "cut-ack": (on_frame(TO_CLIENT, method("Basic.Ack")), cut()),
    "stall-ack": (on_frame(TO_CLIENT, method("Basic.Ack")), stall(0.5)),
    "trickle-publishes": (after_bytes(TO_BROKER, 1000), trickle(0.0005)),
    "vanish-after-bytes": (after_bytes(TO_BROKER, 2000), vanish()),
    "vanish-ack": (on_frame(TO_CLIENT, method("Basic.Ack")), vanish()),
}


@pytest.mark.parametrize(
    "fault_name", pick(CONFIRM_FAULTS, ("cut-after-bytes", "stall-ack", "vanish-ack"))
)
def test_every_confirmed_message_survives_a_broken_network(faulty, proxy, uid, fault_name):
    broker, api = faulty
    trigger, action = CONFIRM_FAULTS[fault_name]
    declare(broker.url, uid)
    fault = proxy.arm(trigger, action)
    url = proxy.url(broker.url) + f"?heartbeat={HEARTBEAT}"

    async def publish_all(seen: Seen) -> None:
        connection = await aio_pika.connect(url)
        try:
            channel = await connection.channel()  # publisher confirms on
            sends = {}
            for n in range(CONFIRMS):
                message = aio_pika.Message(
                    b"x" * 64, message_id=f"m{n}", delivery_mode=aio_pika.DeliveryMode.PERSISTENT
                )
                seen.attempted.append(f"m{n}")
                sends[f"m{n}"] = asyncio.ensure_future(
                    channel.default_exchange.publish(message, routing_key=uid)
                )
            outcomes = await asyncio.gather(*sends.values(), return_exceptions=True)
            for message_id, outcome in zip(sends, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    seen.error = outcome
                else:
                    seen.done.append(message_id)
        finally:
            await connection.close()

    seen = run_faulted(broker, api, proxy, lambda seen: asyncio.run(publish_all(seen)), fault)

    present = [m for m, _ in drain(broker.url, uid)]
    assert len(present) == len(set(present)), f"doubled: {present}"
    assert set(seen.done) <= set(present), f"confirmed but lost: {set(seen.done) - set(present)}"
    assert present == [m for m in seen.attempted if m in present]  # in publish order
    if answered(action):
        assert seen.done == seen.attempted
    else:
        assert len(seen.done) < CONFIRMS


# ---------------------------------------------------------------------- half-message decisions
HALF_FAULTS = {
    "cut-mid-decision": (on_frame(TO_BROKER, body_after(method("Basic.Publish")), skip=3), cut()),
    "cut-decision-ack": (on_frame(TO_CLIENT, method("Basic.Ack"), skip=3), cut()),
    "vanish-decision": (on_frame(TO_BROKER, method("Basic.Publish"), skip=3), vanish()),
    "vanish-decision-ack": (on_frame(TO_CLIENT, method("Basic.Ack"), skip=3), vanish()),
}


@pytest.mark.parametrize("fault_name", pick(HALF_FAULTS, ("cut-mid-decision", "vanish-decision")))
def test_a_half_decision_lost_on_the_way_is_decided_again(faulty, proxy, uid, fault_name):
    broker, api = faulty
    trigger, action = HALF_FAULTS[fault_name]
    a, b = f"{uid}-a", f"{uid}-b"
    declare(broker.url, a, b)
    fault = proxy.arm(trigger, action)

    def hold_then_commit(seen: Seen) -> None:
        with pika.BlockingConnection(pika.URLParameters(proxy.url(broker.url))) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            for n, queue in enumerate((a, b, a)):
                ch.basic_publish("", queue, b"h%d" % n, half(uid))  # returns once confirmed
            seen.done.append("held")
            seen.attempted.append("commit")
            decision = pika.BasicProperties(headers={"x-half-txn": uid})
            ch.basic_publish(TXN_EXCHANGE, "commit", b"", decision)
            seen.done.append("commit")

    seen = run_faulted(broker, api, proxy, hold_then_commit, fault)
    assert seen.done[0] == "held"
    held = half_transactions(management_url(broker))
    with pika_channel(broker.url) as ch:
        if uid in held:  # the decision never arrived: all three still held, none visible
            assert "commit" not in seen.done
            assert held[uid]["messages"] == 3
            assert bodies(ch, a) == [] and bodies(ch, b) == []
        # Arrived or not, the retry is the same decision again: repeating one is a no-op.
        ch.confirm_delivery()
        decide(ch, uid, "commit")
        assert bodies(ch, a) == [b"h0", b"h2"] and bodies(ch, b) == [b"h1"]
    assert uid not in half_transactions(management_url(broker))
