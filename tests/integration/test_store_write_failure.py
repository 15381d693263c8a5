"""A store that cannot write (disk full, I/O error) never leaves a client waiting: confirms are
nacked, a tx.commit closes the connection with 541, the reason is logged once, and the writer
keeps going, writing the kept changes as soon as a write succeeds again."""

from __future__ import annotations

import logging
import sqlite3

import aiormq
import aiormq.exceptions
import pytest
from pamqp.commands import Basic

from rabbitish.testing import running_broker
from tests.support.waiting import wait_until

PERSISTENT = Basic.Properties(delivery_mode=2)


def disk_full() -> None:
    raise sqlite3.OperationalError("database or disk is full")


async def test_failed_writes_nack_confirms_and_fail_commits(tmp_path, uid, caplog):
    data = str(tmp_path / "data")
    with running_broker(data_dir=data) as broker:
        conn = await aiormq.connect(broker.url)
        try:
            ch = await conn.channel()
            await ch.queue_declare(uid, durable=True)
            ok = await ch.basic_publish(b"before", routing_key=uid, properties=PERSISTENT)
            assert isinstance(ok, Basic.Ack)

            # The first failure: once it is known, publishing connections are blocked
            # (test_store_alarm.py), so a commit sent after it waits for the disk instead.
            broker.journal.writer.before_write = disk_full
            tx_conn = await aiormq.connect(broker.url)
            tx = await tx_conn.channel(publisher_confirms=False)
            await tx.tx_select()
            await tx.basic_publish(b"in tx", routing_key=uid, properties=PERSISTENT)
            with pytest.raises(aiormq.exceptions.ConnectionInternalError):
                await tx.tx_commit()
            assert tx_conn.is_closed
            assert broker.journal.writer.failure == "OperationalError: database or disk is full"

            with pytest.raises(aiormq.exceptions.DeliveryError, match="Nack"):
                await ch.basic_publish(b"during", routing_key=uid, properties=PERSISTENT)

            broker.journal.writer.before_write = None
            ok = await ch.basic_publish(b"after", routing_key=uid, properties=PERSISTENT)
            assert isinstance(ok, Basic.Ack)
            assert broker.journal.writer.failure is None
        finally:
            await conn.close()
    failures = [r for r in caplog.records if "journal write failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].levelno == logging.ERROR
    assert "database or disk is full" in failures[0].getMessage()

    # The kept changes were written once the disk took them: a nacked publish may be there,
    # everything confirmed is.
    with running_broker(data_dir=data) as broker:
        conn = await aiormq.connect(broker.url)
        try:
            ch = await conn.channel()
            bodies = []
            while (got := await ch.basic_get(uid, no_ack=True)).delivery_tag is not None:
                bodies.append(got.body)
                if len(bodies) > 10:
                    break
        finally:
            await conn.close()
    assert bodies[0] == b"before" and bodies[-1] == b"after"


async def test_a_broker_stopping_while_writes_fail_does_not_hang(tmp_path, uid):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        conn = await aiormq.connect(broker.url)
        ch = await conn.channel()
        await ch.queue_declare(uid, durable=True)
        broker.journal.writer.before_write = disk_full
        with pytest.raises(aiormq.exceptions.DeliveryError, match="Nack"):
            await ch.basic_publish(b"x", routing_key=uid, properties=PERSISTENT)
        await conn.close()
        wait_until(lambda: broker.journal.writer.failure is not None)


def test_a_1_0_transfer_the_store_cannot_write_is_rejected(tmp_path, uid):
    pytest.importorskip("proton")
    from proton import Message
    from proton.utils import BlockingConnection, SendException

    from benchmarks.amqp10 import DurableQueue
    from tests.support.amqp10 import proton_url

    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        conn = BlockingConnection(proton_url(broker.url), timeout=5)
        try:
            # a durable terminus declares the queue durable, so the transfer takes the disk path
            sender = conn.create_sender(f"/queue/{uid}", options=DurableQueue())
            sender.send(Message(body=b"ok", durable=True, inferred=True))
            broker.journal.writer.before_write = disk_full
            with pytest.raises(SendException):
                sender.send(Message(body=b"lost", durable=True, inferred=True))
        finally:
            conn.close()
