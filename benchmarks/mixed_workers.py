"""The client processes of the mixed soak (`python -m benchmarks.soak --mixed`): each runs one
workload until it fails or is SIGKILLed, and writes what it did to its own ledger file, one line
per event, line-buffered, so a kill loses at most the line being written:

    S <id> <queue>          about to publish <id> for <queue> (its fate is unknown until C or R)
    C <id> <ms>             confirmed / committed, after <ms> milliseconds
    R <id>                  rolled back / aborted: it must never be delivered
    T <id> <txn>            <id> is a half message of half transaction <txn>
    D <queue> <id> <0|1> <reason>   delivered from <queue> (redelivered flag, x-death reason or -)
    B                       the connection was blocked (memory alarm)

Every message body starts with its id (`id|padding`). Half and prepared transactions are
decided by `decision(txn)`, a pure function of the transaction id, so the status-check answerer
(the `checker` worker) decides exactly as the producer would have, after any kill.

    python -m benchmarks.mixed_workers KIND LEDGER_DIR URL [QUEUE]
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
import zlib
from pathlib import Path
from typing import Any, TextIO

CHECK_QUEUE = "soak.checks"
CHECK_IMMUNITY = 3
TXN_EXCHANGE = "amq.rabbitish.txn"
HALF_HEADER = "x-half-txn"


def decision(txn: str) -> bool:
    """True: commit. One transaction in four rolls back."""
    return zlib.crc32(txn.encode()) % 4 != 0


class Ledger:
    def __init__(self, folder: str, kind: str) -> None:
        # The process id alone repeats over a long run (pids are reused): with the start time
        # in milliseconds, ids and files are unique to one process.
        incarnation = f"{os.getpid()}-{time.time_ns() // 1_000_000 % 10**9}"
        path = Path(folder) / f"{kind}-{incarnation}.log"
        self.file: TextIO = path.open("x", buffering=1)
        self.prefix = f"{kind}:{incarnation}:"
        self.count = 0

    def next_id(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count}"

    def write(self, *fields: object) -> None:
        self.file.write(" ".join(str(f) for f in fields) + "\n")


def body_of(msg_id: str, rng: random.Random) -> bytes:
    return msg_id.encode() + b"|" + b"x" * rng.choice([10, 100, 1000, 8000])


def id_of(body: bytes) -> str:
    return body.split(b"|", 1)[0].decode(errors="replace").replace(" ", "_")


def ms_since(start: float) -> str:
    return f"{(time.monotonic() - start) * 1000:.1f}"


def _pika(url: str) -> Any:
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


def _watch_blocked(conn: Any, ledger: Ledger) -> None:
    conn.add_on_connection_blocked_callback(lambda *_: ledger.write("B"))


# ------------------------------------------------------------------ 0-9-1 producers
def confirm_publisher(ledger: Ledger, url: str, queues: list[str], rate: float) -> None:
    """Persistent messages with publisher confirms, one queue after another."""
    import pika

    rng = random.Random()
    conn = _pika(url)
    _watch_blocked(conn, ledger)
    channel = conn.channel()
    channel.confirm_delivery()
    props = pika.BasicProperties(delivery_mode=2)
    while True:
        for queue in queues:
            msg_id = ledger.next_id()
            ledger.write("S", msg_id, queue)
            start = time.monotonic()
            channel.basic_publish("", queue, body_of(msg_id, rng), props, mandatory=True)
            ledger.write("C", msg_id, ms_since(start))
        conn.sleep(rng.expovariate(rate))


def tx_publisher(ledger: Ledger, url: str, rate: float) -> None:
    """0-9-1 transactions across two queues: two messages to soak.tx.a, one to soak.tx.b, then
    tx.commit (one in eight rolled back instead)."""
    import pika

    rng = random.Random()
    conn = _pika(url)
    _watch_blocked(conn, ledger)
    channel = conn.channel()
    channel.tx_select()
    props = pika.BasicProperties(delivery_mode=2)
    while True:
        batch = ledger.next_id()
        parts = [
            (f"{batch}.0", "soak.tx.a"),
            (f"{batch}.1", "soak.tx.a"),
            (f"{batch}.2", "soak.tx.b"),
        ]
        start = time.monotonic()
        for msg_id, queue in parts:
            ledger.write("S", msg_id, queue)
            channel.basic_publish("", queue, body_of(msg_id, rng), props)
        if rng.random() < 0.125:
            channel.tx_rollback()
            for msg_id, _ in parts:
                ledger.write("R", msg_id)
        else:
            channel.tx_commit()
            for msg_id, _ in parts:
                ledger.write("C", msg_id, ms_since(start))
        conn.sleep(rng.expovariate(rate))


def half_producer(ledger: Ledger, url: str, rate: float) -> None:
    """Half messages (two per transaction) through rabbitish.transactional; the local
    transaction is `decision(txn)`. Checks go to the checker worker."""
    from rabbitish.transactional import LocalTransactionState, TransactionProducer

    rng = random.Random()
    producer = TransactionProducer(url, CHECK_QUEUE, check_immunity=CHECK_IMMUNITY)
    _watch_blocked(producer.connection, ledger)
    while True:
        batch = ledger.next_id()
        parts = [f"{batch}.0", f"{batch}.1"]
        for msg_id in parts:
            ledger.write("S", msg_id, "soak.half")
        start = time.monotonic()

        def local(txn: str, _body: object, parts: list[str] = parts) -> LocalTransactionState:
            for msg_id in parts:
                ledger.write("T", msg_id, txn)
            if decision(txn):
                return LocalTransactionState.COMMIT
            return LocalTransactionState.ROLLBACK

        result = producer.send("", "soak.half", [body_of(p, rng) for p in parts], local)
        for msg_id in parts:
            if result.state is LocalTransactionState.COMMIT:
                ledger.write("C", msg_id, ms_since(start))
            else:
                ledger.write("R", msg_id)
        producer.connection.sleep(rng.expovariate(rate))


def prepared_worker(ledger: Ledger, url: str) -> None:
    """Takes each message of soak.prep.in and, in one prepared transaction, acks it and
    publishes `<input>><txn>` to soak.prep.out; then decides it by `decision(txn)`. A rolled
    back transaction puts the input back, to be processed again under a new transaction."""
    import pika

    conn = _pika(url)
    _watch_blocked(conn, ledger)
    channel = conn.channel()
    channel.tx_select()
    channel.basic_qos(prefetch_count=1)
    persistent = pika.BasicProperties(delivery_mode=2)
    for method, _props, body in channel.consume("soak.prep.in", inactivity_timeout=1):
        if method is None:
            continue
        source = id_of(body)
        ledger.write("D", "soak.prep.in", source, int(method.redelivered), "-")
        txn = ledger.next_id().replace(":", "-")
        out = f"{source}>{txn}"
        ledger.write("S", out, "soak.prep.out")
        start = time.monotonic()
        channel.basic_publish("", "soak.prep.out", out.encode() + b"|", persistent)
        channel.basic_ack(method.delivery_tag)
        headers = {HALF_HEADER: txn, "x-check-queue": CHECK_QUEUE}
        headers["x-check-immunity"] = CHECK_IMMUNITY
        channel.basic_publish(TXN_EXCHANGE, "prepare", b"", pika.BasicProperties(headers=headers))
        channel.tx_commit()  # the prepare-ok
        ledger.write("T", out, txn)
        commit = decision(txn)
        key = "commit" if commit else "rollback"
        channel.basic_publish(
            TXN_EXCHANGE, key, b"", pika.BasicProperties(headers={HALF_HEADER: txn})
        )
        channel.tx_commit()
        ledger.write("C" if commit else "R", out, *([ms_since(start)] if commit else []))


def checker(ledger: Ledger, url: str) -> None:
    """Answers the broker's status checks for half and prepared transactions by `decision`."""
    import pika

    conn = _pika(url)
    channel = conn.channel()
    channel.queue_declare(CHECK_QUEUE, durable=True)
    for method, props, _body in channel.consume(CHECK_QUEUE, inactivity_timeout=1):
        if method is None:
            continue
        txn = (props.headers or {}).get(HALF_HEADER)
        if isinstance(txn, bytes):
            txn = txn.decode()
        if txn:
            key = "commit" if decision(txn) else "rollback"
            ledger.write("K", txn, key)
            props = pika.BasicProperties(headers={HALF_HEADER: txn})
            channel.basic_publish(TXN_EXCHANGE, key, b"", props)
        channel.basic_ack(method.delivery_tag)


def burst(ledger: Ledger, url: str, mib: int) -> None:
    """Transient 64 KiB messages, `mib` MiB at a time, to soak.burst, published on a thread of
    their own (a blocked connection stops being read, so pika's publish waits), held until
    they are all in or the broker has stopped taking them for 3 s (the memory alarm), then
    drained on a second connection: the broker's memory climbs past the watermark, every
    publisher is blocked, and the alarm clears once the drain gives the memory back. Every
    30 s."""
    import threading

    drainer = _pika(url)
    source = drainer.channel()
    total = mib * 16

    def publish() -> None:
        publisher = _pika(url)
        channel = publisher.channel()
        body = b"m" * 65536
        for _ in range(total):
            channel.basic_publish("", "soak.burst", body)
        publisher.close()

    while True:
        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        last, still_since, held_until = -1, time.monotonic(), time.monotonic() + 30
        while time.monotonic() < held_until:
            drainer.sleep(0.5)
            count = source.queue_declare("soak.burst", passive=True).method.message_count
            if count >= total or time.monotonic() - still_since > 3:
                break
            if count != last:
                last, still_since = count, time.monotonic()
        stalled = last < total
        got, empty_since = 0, None
        while thread.is_alive() or empty_since is None or time.monotonic() - empty_since < 3:
            method, _props, _body = source.basic_get("soak.burst", auto_ack=True)
            if method is not None:
                got += 1
                empty_since = None
                continue
            empty_since = empty_since or time.monotonic()
            drainer.sleep(0.1)
        ledger.write("M", total, got, "stalled" if stalled else "-")
        if stalled:
            ledger.write("B")
        drainer.sleep(30)


# ------------------------------------------------------------------ consumers (aio-pika)
async def _consume(ledger: Ledger, url: str, queue: str, slow: float) -> None:
    import aio_pika

    conn = await aio_pika.connect(url)
    channel = await conn.channel()
    await channel.set_qos(prefetch_count=1 if slow else 20)
    source = await channel.get_queue(queue, ensure=False)
    async with source.iterator() as messages:
        async for message in messages:
            reason = "-"
            deaths = (message.headers or {}).get("x-death")
            if isinstance(deaths, list) and deaths:
                first = deaths[0]
                if isinstance(first, dict):
                    value = first.get("reason", "-")
                    reason = value.decode() if isinstance(value, bytes) else str(value)
            ledger.write("D", queue, id_of(message.body), int(message.redelivered), reason)
            if slow:
                await asyncio.sleep(slow)
            await message.ack()


def consumer(ledger: Ledger, url: str, queue: str, slow: float) -> None:
    asyncio.run(_consume(ledger, url, queue, slow))


# ------------------------------------------------------------------ AMQP 1.0 (qpid-proton)
def amqp10_tx(ledger: Ledger, url: str, rate: float) -> None:
    """1.0 transactions: three transfers to soak.amqp10, then a discharge (one in four fails,
    aborting)."""
    from proton import Message
    from proton.handlers import TransactionHandler
    from proton.utils import BlockingConnection

    from tests.support.raw_amqp import host_port

    class Events(TransactionHandler):
        def __init__(self) -> None:
            super().__init__()
            self.events: list[str] = []

        def on_transaction_declared(self, event: Any) -> None:
            self.events.append("declared")

        def on_transaction_declare_failed(self, event: Any) -> None:
            self.events.append("declare failed")

        def on_transaction_committed(self, event: Any) -> None:
            self.events.append("committed")

        def on_transaction_commit_failed(self, event: Any) -> None:
            self.events.append("commit failed")

        def on_transaction_aborted(self, event: Any) -> None:
            self.events.append("aborted")

    rng = random.Random()
    host, port = host_port(url)
    conn = BlockingConnection(f"amqp://guest:guest@{host}:{port}", timeout=10, heartbeat=5)
    sender = conn.create_sender("/queues/soak.amqp10")
    while True:
        events = Events()
        txn = conn.container.declare_transaction(conn.conn, handler=events)
        conn.wait(lambda events=events: events.events, msg="declare")
        if events.events != ["declared"]:
            raise RuntimeError(f"declare: {events.events}")
        batch = ledger.next_id()
        parts = [f"{batch}.{i}" for i in range(3)]
        start = time.monotonic()
        for msg_id in parts:
            ledger.write("S", msg_id, "soak.amqp10")
            delivery = txn.send(
                sender.link, Message(body=body_of(msg_id, rng), durable=True, inferred=True)
            )
            conn.wait(lambda d=delivery: d.remote_state, msg="transfer")
        commit = rng.random() >= 0.25
        events.events.clear()
        txn.commit() if commit else txn.abort()
        conn.wait(lambda events=events: events.events, msg="discharge")
        outcome = events.events[0]
        if outcome == "committed":
            for msg_id in parts:
                ledger.write("C", msg_id, ms_since(start))
        elif outcome == "aborted":
            for msg_id in parts:
                ledger.write("R", msg_id)
        else:
            raise RuntimeError(f"discharge: {outcome}")
        time.sleep(rng.expovariate(rate))


def main(argv: list[str]) -> None:
    kind, folder, url = argv[:3]
    rate = float(os.environ.get("SOAK_RATE", "20"))
    ledger = Ledger(folder, kind)
    if kind == "confirm":
        confirm_publisher(ledger, url, ["soak.confirm", "soak.prep.in"], rate)
    elif kind == "ttl":
        confirm_publisher(ledger, url, ["soak.ttl"], rate)
    elif kind == "len":
        confirm_publisher(ledger, url, ["soak.len"], rate)
    elif kind == "tx":
        tx_publisher(ledger, url, rate)
    elif kind == "half":
        half_producer(ledger, url, rate)
    elif kind == "prepared":
        prepared_worker(ledger, url)
    elif kind == "checker":
        checker(ledger, url)
    elif kind == "burst":
        burst(ledger, url, int(os.environ.get("SOAK_BURST_MIB", "60")))
    elif kind == "amqp10":
        amqp10_tx(ledger, url, rate)
    elif kind.startswith("consume"):
        queue = argv[3]
        slow = float(os.environ.get("SOAK_SLOW", "0.1")) if queue in ("soak.ttl", "soak.len") else 0
        consumer(ledger, url, queue, slow)
    else:
        raise SystemExit(f"unknown worker {kind}")


if __name__ == "__main__":
    main(sys.argv[1:])
