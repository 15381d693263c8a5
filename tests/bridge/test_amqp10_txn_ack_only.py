"""A 1.0 discharge whose transaction only accepted deliveries is answered without waiting for
the disk, as a 0-9-1 ack-only tx.commit is (docs/transactions.md, "Ack-only commits";
tests/integration/test_tx_ack_only.py shows the publishing side waits)."""

from __future__ import annotations

import threading

import pika
import pytest

from rabbitish.testing import call_in_loop, running_broker

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")

from tests.support.proton_tx import TxClient  # noqa: E402


def test_a_discharge_of_accepts_alone_does_not_wait_for_the_sync(tmp_path, uid):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        writer = broker.journal.writer
        with pika.BlockingConnection(pika.URLParameters(broker.url)) as conn:
            ch = conn.channel()
            ch.queue_declare(uid, durable=True)
            ch.confirm_delivery()
            for i in range(3):
                ch.basic_publish("", uid, b"m%d" % i, pika.BasicProperties(delivery_mode=2))
        client = TxClient(broker.url)
        gate = threading.Event()
        try:
            receiver = client.conn.create_receiver(f"/amq/queue/{uid}", credit=3)
            txn = client.declare()
            for _ in range(3):
                receiver.receive(timeout=5)
                txn.accept(receiver.fetcher.unsettled.popleft())
            writer.before_write = lambda: gate.wait(30)  # the writer thread stops here
            assert client.discharge(txn, commit=True) == "committed"
            # answered while the removals are journaled but not yet on disk
            assert call_in_loop(broker, lambda: writer.synced < writer.position)
        finally:
            writer.before_write = None
            gate.set()
            client.close()
