"""A commit that only acks does not wait for the disk; a commit that publishes does
(docs/transactions.md, "Ack-only commits"). The store's writer is held at its failure seam
(before each batch, on the writer thread) so nothing reaches the disk while the commits run."""

from __future__ import annotations

import threading

from pamqp import commands

from rabbitish.testing import call_in_loop, running_broker
from tests.support.raw_amqp import RawClient, content_header_frame, raw_frame

PERSISTENT = 2


def publish(client: RawClient, channel: int, queue: str, body: bytes) -> None:
    client.send_method(channel, commands.Basic.Publish(exchange="", routing_key=queue))
    client.send(content_header_frame(channel, len(body), delivery_mode=PERSISTENT))
    client.send(raw_frame(3, channel, body))


def test_an_ack_only_commit_is_answered_before_the_sync_a_publishing_one_after(tmp_path, uid):
    with running_broker(data_dir=str(tmp_path / "data")) as broker:
        writer = broker.journal.writer
        client = RawClient(broker.url).open()
        try:
            for channel in (1, 2, 3):  # 1 in confirm mode, 2 and 3 transactional
                client.open_channel(channel)
            client.send_method(1, commands.Queue.Declare(queue=uid, durable=True))
            client.expect("Queue.DeclareOk")
            client.send_method(1, commands.Confirm.Select())
            client.expect("Confirm.SelectOk")
            publish(client, 1, uid, b"m1")
            client.expect("Basic.Ack")  # on disk
            for channel in (2, 3):
                client.send_method(channel, commands.Tx.Select())
                client.expect("Tx.SelectOk")

            gate, held = threading.Event(), threading.Event()

            def hold() -> None:
                held.set()
                gate.wait(30)

            writer.before_write = hold  # the writer thread stops here
            try:
                client.send_method(2, commands.Basic.Get(queue=uid))
                got = client.expect("Basic.GetOk")
                client.send_method(2, commands.Basic.Ack(delivery_tag=got.delivery_tag))
                client.send_method(2, commands.Tx.Commit())
                client.expect("Tx.CommitOk")
                # answered while its removal is journaled but not yet on disk
                assert call_in_loop(broker, lambda: writer.synced < writer.position)
                # The removal's batch (nobody waits for it) gathers for a moment, then goes to
                # the writer thread, which stops. Only then the publishing commit: arriving
                # while the removal still gathered, it would take it along and write both on
                # the loop thread, which the seam would then hold.
                assert held.wait(5)

                publish(client, 3, uid, b"m2")
                client.send_method(3, commands.Tx.Commit())
                client.send_method(1, commands.Queue.Declare(queue=uid, passive=True))
                # the declare sent after the publishing commit is answered; the commit is not
                replies = []
                while not replies or replies[-1] != "Queue.DeclareOk":
                    got_frame = client.read_frame()
                    assert got_frame is not None
                    replies.append(getattr(got_frame[1], "name", ""))
                assert "Tx.CommitOk" not in replies
            finally:
                writer.before_write = None
                gate.set()
            client.expect("Tx.CommitOk")  # once the batch is on disk
            assert call_in_loop(broker, lambda: writer.synced == writer.position)
        finally:
            client.close()
