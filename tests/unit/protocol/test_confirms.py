"""Publisher confirms of one channel, driven by publish outcomes and read-batch flushes, with a
journal the test syncs (or fails) by hand: acks are coalesced into one frame per flush, a nack
goes at once after the acks before it, nothing is sent before the journal is on disk, and a
store that cannot write turns the confirm into a nack."""

from __future__ import annotations

import pytest
from pamqp import commands

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.journal import Failed, NullJournal, Synced
from rabbitish.engine.node import Node
from rabbitish.protocol.codec import CODEC
from rabbitish.protocol.confirms import PublisherConfirms
from rabbitish.protocol.framing import encode_method

CHANNEL = 3


class ManualSync(NullJournal):
    """A journal whose syncs happen when the test says: `sync()` or `fail(reason)`."""

    def __init__(self) -> None:
        self.position = 0
        self.waiting: list[tuple[int, Synced, Failed | None]] = []

    def when_synced(self, position: int, callback: Synced, failed: Failed | None = None) -> None:
        self.waiting.append((position, callback, failed))

    def sync(self) -> None:
        waiting, self.waiting = self.waiting, []
        for _position, callback, _failed in waiting:
            callback()

    def fail(self, reason: str) -> None:
        waiting, self.waiting = self.waiting, []
        for _position, _callback, failed in waiting:
            assert failed is not None
            failed(reason)


def ack(tag: int, multiple: bool = False) -> bytes:
    return encode_method(CHANNEL, commands.Basic.Ack(delivery_tag=tag, multiple=multiple))


def nack(tag: int, multiple: bool = False) -> bytes:
    # RabbitMQ sets the requeue bit on publisher-confirm nacks.
    method = commands.Basic.Nack(delivery_tag=tag, multiple=multiple, requeue=True)
    return encode_method(CHANNEL, method)


@pytest.fixture
def journal() -> ManualSync:
    return ManualSync()


@pytest.fixture
def sent() -> list[bytes]:
    return []


@pytest.fixture
def stats() -> dict[str, int]:
    return {"confirm": 0}


@pytest.fixture
def confirms(journal: ManualSync, sent: list[bytes], stats: dict[str, int]) -> PublisherConfirms:
    node = Node(ManualScheduler(), codec=CODEC)
    node.use_journal(journal)
    return PublisherConfirms(CHANNEL, node.vhosts["/"], sent.append, stats)


def publish(confirms: PublisherConfirms, ok: bool = True) -> int:
    """What basic.publish does in confirm mode: the next sequence number, then its outcome."""
    confirms.published += 1
    seq = confirms.published
    confirms.outcome(seq, ok)
    return seq


def test_accepted_publishes_are_acked_together_at_the_flush(confirms, journal, sent, stats):
    for _ in range(3):
        publish(confirms)
    assert journal.waiting == []  # nothing decided to send before the read batch ends
    assert confirms.unconfirmed == 3
    confirms.flush()
    assert confirms.unconfirmed == 0
    assert stats["confirm"] == 3
    assert sent == []  # ...and nothing sent before the journal is on disk
    journal.sync()
    assert sent == [ack(3, multiple=True)]


def test_one_publish_is_acked_alone(confirms, journal, sent):
    publish(confirms)
    confirms.flush()
    confirms.flush()  # nothing new: no second frame
    journal.sync()
    assert sent == [ack(1)]


def test_a_refused_publish_is_nacked_at_once_after_the_acks_before_it(
    confirms, journal, sent, stats
):
    publish(confirms)
    publish(confirms)
    publish(confirms, ok=False)
    journal.sync()
    assert sent == [ack(2, multiple=True), nack(3)]
    assert stats["confirm"] == 3
    publish(confirms)
    confirms.flush()
    journal.sync()
    assert sent[2:] == [ack(4)]
    assert confirms.unconfirmed == 0


def test_a_store_that_cannot_write_turns_the_acks_into_a_nack(confirms, journal, sent):
    publish(confirms)
    publish(confirms)
    confirms.flush()
    journal.fail("OperationalError: database or disk is full")
    assert sent == [nack(2, multiple=True)]


def test_in_memory_mode_confirms_at_once(sent, stats):
    node = Node(ManualScheduler(), codec=CODEC)  # its NullJournal: everything counts as synced
    confirms = PublisherConfirms(CHANNEL, node.vhosts["/"], sent.append, stats)
    publish(confirms)
    confirms.flush()
    assert sent == [ack(1)]
