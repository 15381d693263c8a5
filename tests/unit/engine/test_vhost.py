"""How a vhost is composed: its parts own their state and the vhost's entry points are theirs,
bound once; its queues see it as their host, so what they settle goes to whichever journal the
vhost holds now."""

from __future__ import annotations

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.journal import NullJournal
from rabbitish.engine.message import QueueEntry
from rabbitish.engine.queue import Queue
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import Taker, message


class RemovalJournal(NullJournal):
    def __init__(self) -> None:
        self.removed: list[bytes] = []

    def message_removed(self, queue: Queue, entry: QueueEntry) -> None:
        self.removed.append(entry.message.body)


@pytest.fixture
def vhost() -> VirtualHost:
    return VirtualHost("vh", ManualScheduler())


def test_the_parts_state_is_what_the_vhost_shows(vhost):
    topology, publisher = vhost.topology, vhost.publisher
    assert vhost.exchanges is topology.exchanges is publisher.exchanges
    assert vhost.queues is topology.queues is publisher.queues
    assert vhost.queue_arg_types is topology.queue_arg_types
    assert vhost.exchange_arg_types is topology.exchange_arg_types
    assert vhost.churn is topology.churn
    assert vhost.deleted_queue_stats is topology.deleted_queue_stats
    assert vhost.reply_to_targets is publisher.reply_to_targets
    assert publisher.half is vhost.half


@pytest.mark.parametrize(
    ("name", "part"),
    [
        *[
            (name, "topology")
            for name in (
                "exchange",
                "declare_exchange",
                "recover_exchange",
                "delete_exchange",
                "queue",
                "check_exclusive",
                "declare_queue",
                "recover_queue",
                "delete_queue",
                "delete_queue_object",
                "owner_closed",
                "bind",
                "unbind",
                "add_binding",
                "remove_binding",
            )
        ],
        *[
            (name, "publisher")
            for name in ("publish", "publish_exchange", "route", "reply_to_exists", "dead_letter")
        ],
    ],
)
def test_the_vhosts_entry_points_are_its_parts_own(vhost, name, part):
    method = getattr(vhost, name)
    assert method.__self__ is getattr(vhost, part)
    assert method.__name__ == name


def test_publish_counts_and_reports_bytes_through_the_vhost(vhost):
    vhost.declare_queue("q", owner=None)
    sizes: list[int] = []
    vhost.on_published = sizes.append
    assert vhost.publisher.on_published == sizes.append
    assert vhost.publish("", "q", message(body=b"abc")).routed
    assert (vhost.publishes, sizes) == (1, [3])


def test_queues_are_hosted_by_the_vhost_and_settle_into_its_current_journal(vhost):
    queue = vhost.declare_queue("q", owner=None)
    assert queue.vhost is vhost
    journal = RemovalJournal()
    vhost.journal = journal  # as the node does once recovery is over
    queue.enqueue(message(body=b"a"))
    queue.enqueue(message(body=b"b"))
    assert queue.get(settled=True) is not None
    vhost.declare_queue("dead", owner=None)
    queue.arguments.update({"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dead"})
    queue.apply_policies(None, None)
    queue.discard([queue.ready.pop()])
    assert journal.removed == [b"a", b"b"]
    assert [e.message.body for e in vhost.queues["dead"].ready] == [b"b"]


def test_an_auto_delete_queue_leaves_the_topology_after_its_last_consumer(vhost):
    queue = vhost.declare_queue("q", owner=None, auto_delete=True)
    consumer = Taker(queue)
    queue.add_consumer(consumer)
    queue.remove_consumer(consumer)
    assert "q" not in vhost.queues and queue.deleted


def test_resource_text(vhost):
    assert vhost.rs("queue", "q") == "queue 'q' in vhost 'vh'"
