"""A queue against a host that is not a vhost: everything it asks of its host goes through
QueueHost (journal, spill store, settled, dead_letter, delete_queue_object), so a recording
host sees each of them."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.delivery import Outcome, settle
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.journal import Journal, NullJournal
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.queue import SPILL_AFTER, Queue
from rabbitish.engine.resources import BodyStore
from rabbitish.engine.tracing import Firehose
from tests.support.engine import Taker, message


class RecordingJournal(NullJournal):
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def message_enqueued(self, queue: Queue, entry: QueueEntry) -> None:
        self.calls.append(("enqueued", queue.name, entry.seq))

    def message_delivered(self, queue: Queue, entry: QueueEntry) -> None:
        self.calls.append(("delivered", queue.name, entry.seq))


class Spill:
    def __init__(self) -> None:
        self.paging = True
        self.paged: list[Message] = []

    def page_out(self, message: Message) -> None:
        self.paged.append(message)


class RecordingHost:
    """A QueueHost that only records what its queues ask of it."""

    def __init__(self) -> None:
        self.name = "vh"
        self.recording = RecordingJournal()
        self.journal: Journal = self.recording
        self.spill: BodyStore | None = None
        self.firehose: Firehose | None = None  # not traced
        self.settlements: list[tuple[str, bytes]] = []
        self.dead: list[tuple[str, list[bytes], str]] = []
        self.deleted: list[Queue] = []

    def settled(self, queue: Queue, entry: QueueEntry) -> None:
        self.settlements.append((queue.name, entry.message.body))

    def dead_letter(self, queue: Queue, entries: list[QueueEntry], reason: str) -> None:
        self.dead.append((queue.name, [e.message.body for e in entries], reason))

    def delete_queue_object(self, queue: Queue) -> None:
        self.deleted.append(queue)


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
def scheduler() -> ManualScheduler:
    return ManualScheduler()


def new_queue(
    host: RecordingHost, scheduler: ManualScheduler, name: str = "q", **kwargs: Any
) -> Queue:
    return Queue(host, name, scheduler=scheduler, **kwargs)


def test_enqueue_and_first_delivery_go_to_the_hosts_journal(host, scheduler):
    queue = new_queue(host, scheduler)
    assert queue.enqueue(message(body=b"a"))
    consumer = Taker(queue)
    queue.add_consumer(consumer)
    assert host.recording.calls == [("enqueued", "q", 0), ("delivered", "q", 0)]
    assert [d.entry.message.body for d in consumer.deliveries] == [b"a"]


def test_the_journal_is_read_at_each_use_so_a_swapped_one_is_heard(host, scheduler):
    queue = new_queue(host, scheduler)
    later = RecordingJournal()
    host.journal = later
    queue.enqueue(message(body=b"a"))
    assert (host.recording.calls, later.calls) == ([], [("enqueued", "q", 0)])


def test_a_refusing_journal_refuses_persistent_messages_on_durable_queues_only(host, scheduler):
    host.recording.refusing = True
    durable, transient = new_queue(host, scheduler, durable=True), new_queue(host, scheduler)
    persistent = message(delivery_mode=2)
    assert not durable.enqueue(persistent)
    assert durable.enqueue(message())
    assert transient.enqueue(persistent)


def test_acked_gotten_and_purged_messages_are_settled_through_the_host(host, scheduler):
    queue = new_queue(host, scheduler)
    for body in (b"a", b"b", b"c"):
        queue.enqueue(message(body=body))
    delivery = queue.get(settled=False)
    assert delivery is not None
    settle([delivery], Outcome.ACK)
    assert queue.get(settled=True) is not None
    assert queue.purge() == 1
    assert host.settlements == [("q", b"a"), ("q", b"b"), ("q", b"c")]


def test_rejected_messages_are_dead_lettered_through_the_host(host, scheduler):
    queue = new_queue(host, scheduler)
    queue.enqueue(message(body=b"a"))
    delivery = queue.get(settled=False)
    assert delivery is not None
    settle([delivery], Outcome.DISCARD)
    assert host.dead == [("q", [b"a"], "rejected")]


def test_messages_over_the_length_limit_are_dead_lettered_from_the_head(host, scheduler):
    queue = new_queue(host, scheduler, arguments={"x-max-length": 1})
    queue.enqueue(message(body=b"a"))
    queue.enqueue(message(body=b"b"))
    assert host.dead == [("q", [b"a"], "maxlen")]
    assert [e.message.body for e in queue.ready] == [b"b"]


def test_reject_publish_dlx_dead_letters_the_refused_message(host, scheduler):
    arguments = {"x-max-length": 0, "x-overflow": "reject-publish-dlx"}
    queue = new_queue(host, scheduler, arguments=arguments)
    assert not queue.enqueue(message(body=b"a"))
    assert host.dead == [("q", [b"a"], "maxlen")]


def test_expired_messages_are_dead_lettered_when_taken(host, scheduler):
    queue = new_queue(host, scheduler, arguments={"x-message-ttl": 0})
    queue.enqueue(message(body=b"a"))
    assert queue.get(settled=True) is None
    assert host.dead == [("q", [b"a"], "expired")]


def test_an_auto_delete_queue_asks_its_host_to_delete_it_after_its_last_consumer(host, scheduler):
    queue = new_queue(host, scheduler, auto_delete=True)
    consumer = Taker(queue)
    queue.add_consumer(consumer)
    assert host.deleted == []
    queue.remove_consumer(consumer)
    assert host.deleted == [queue]


def test_an_unused_queue_asks_its_host_to_delete_it_when_it_expires(host, scheduler):
    queue = new_queue(host, scheduler, arguments={"x-expires": 1000})
    due, expire = scheduler.pending[-1]
    assert due == pytest.approx(scheduler.now() + 1.0, abs=0.5)
    expire()
    assert host.deleted == [queue]


def test_under_memory_pressure_bodies_past_the_first_ones_go_to_the_hosts_spill_store(
    host, scheduler
):
    spill = Spill()
    host.spill = spill
    queue = new_queue(host, scheduler)
    messages = [message(body=b"%d" % i) for i in range(SPILL_AFTER + 2)]
    for m in messages:
        queue.enqueue(m)
    assert spill.paged == messages[SPILL_AFTER:]


def test_exclusive_use_is_refused_with_the_hosts_name_in_the_text(host, scheduler):
    queue = new_queue(host, scheduler)
    queue.add_consumer(Taker(queue, exclusive=True))
    with pytest.raises(AMQPError) as caught:
        queue.add_consumer(Taker(queue, "other"))
    assert (caught.value.reply_code, caught.value.text) == (
        403,
        "queue 'q' in vhost 'vh' in exclusive use",
    )


def test_a_locked_delivery_is_neither_outstanding_nor_ready_until_unlocked(host, scheduler):
    queue = new_queue(host, scheduler)
    queue.enqueue(message(b"a"))
    delivery = queue.get(settled=False)
    assert delivery is not None and queue.lock(delivery)
    assert (queue.unacked, queue.prepared, queue.message_count) == (0, 1, 0)
    assert not queue.lock(delivery)  # not outstanding any more
    assert queue.unlock(delivery) and (queue.unacked, queue.prepared) == (1, 0)
    assert not queue.unlock(delivery)
    assert queue.lock(delivery)
    queue.mark_deleted()
    assert queue.prepared == 0 and not queue.unlock(delivery)


def test_a_quorum_queue_dead_letters_a_message_returned_past_its_delivery_limit(host, scheduler):
    """Each return counts; a released delivery (1.0 `released`) does not."""
    arguments = {"x-queue-type": "quorum", "x-delivery-limit": 1}
    queue = new_queue(host, scheduler, durable=True, arguments=arguments)
    queue.enqueue(message(body=b"a"))
    first = queue.get(settled=False)
    assert first is not None
    settle([first], Outcome.RELEASED)
    second = queue.get(settled=False)
    assert second is not None
    settle([second], Outcome.REQUEUE)
    assert host.dead == []
    third = queue.get(settled=False)
    assert third is not None and third.delivery_count == 2
    settle([third], Outcome.REQUEUE)
    assert host.dead == [("q", [b"a"], "delivery_limit")]
    assert queue.message_count == 0


def test_a_delivery_limit_applies_to_quorum_queues_only(host, scheduler):
    queue = new_queue(host, scheduler, arguments={"x-delivery-limit": 0})
    queue.enqueue(message(body=b"a"))
    delivery = queue.get(settled=False)
    assert delivery is not None
    settle([delivery], Outcome.REQUEUE)
    assert (host.dead, queue.message_count) == ([], 1)


class CountingTaker(Taker):
    """A Taker that counts how often the queue asks its credit."""

    __slots__ = ("asked",)

    def __init__(self, queue: Queue, tag: str, prefetch: int) -> None:
        super().__init__(queue, tag, prefetch=prefetch)
        self.asked = 0

    @property
    def credit(self) -> int:
        self.asked += 1
        return self.prefetch - self.unsettled


def _full_consumers(host, scheduler, count: int) -> tuple[Queue, list[CountingTaker]]:
    """A queue whose `count` consumers (prefetch 1) each hold one unacked message."""
    queue = new_queue(host, scheduler)
    takers = [CountingTaker(queue, f"c{i}", prefetch=1) for i in range(count)]
    for taker in takers:
        queue.add_consumer(taker)
    for _ in range(count):
        queue.enqueue(message())
    assert all(len(t.deliveries) == 1 for t in takers)
    return queue, takers


def test_messages_arriving_while_every_consumer_is_full_ask_no_consumer(host, scheduler):
    queue, takers = _full_consumers(host, scheduler, 20)
    queue.enqueue(message(body=b"first waiting"))  # finds them all full, once
    for taker in takers:
        taker.asked = 0
    for _ in range(100):
        queue.enqueue(message())
    assert sum(t.asked for t in takers) == 0
    assert queue.message_count == 101
    # credit comes back with a settlement, and the front end's dispatch looks again
    settle([takers[5].deliveries[0]], Outcome.ACK)
    queue.dispatch()
    assert [d.entry.message.body for d in takers[5].deliveries[1:]] == [b"first waiting"]


def test_one_dispatch_asks_each_consumer_once_and_the_served_one_again(host, scheduler):
    queue, takers = _full_consumers(host, scheduler, 20)
    for _ in range(10):
        queue.enqueue(message())
    for taker in takers:
        taker.asked = 0
    settle([takers[7].deliveries[0]], Outcome.ACK)
    queue.dispatch()
    assert len(takers[7].deliveries) == 2
    assert [t.asked for t in takers] == [2 if t is takers[7] else 1 for t in takers]


def test_a_new_consumer_takes_what_waited_while_the_others_were_full(host, scheduler):
    queue, _ = _full_consumers(host, scheduler, 3)
    queue.enqueue(message(body=b"waiting"))
    newcomer = CountingTaker(queue, "new", prefetch=1)
    queue.add_consumer(newcomer)
    assert [d.entry.message.body for d in newcomer.deliveries] == [b"waiting"]
    queue.enqueue(message(body=b"after"))  # everyone full again: it waits
    assert queue.message_count == 1
