"""A vhost's topology on its own, against a recording host: what is declared, bound and deleted,
RabbitMQ's checks and texts, what the journal and the policies hear, and the counts statistics
read."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.clock import ManualScheduler, Scheduler
from rabbitish.engine.errors import AMQPError
from rabbitish.engine.exchanges.base import Binding, Exchange
from rabbitish.engine.journal import Journal, NullJournal
from rabbitish.engine.message import QueueEntry
from rabbitish.engine.queue import Queue
from rabbitish.engine.resources import BodyStore
from rabbitish.engine.topology import Topology
from rabbitish.engine.tracing import Firehose
from tests.support.engine import message


class RecordingJournal(NullJournal):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def exchange_declared(self, exchange: Exchange, arg_types: dict[str, str]) -> None:
        self.events.append(("exchange_declared", exchange.name))

    def exchange_deleted(self, exchange: Exchange) -> None:
        self.events.append(("exchange_deleted", exchange.name))

    def queue_declared(self, queue: Queue, arg_types: dict[str, str]) -> None:
        self.events.append(("queue_declared", queue.name))

    def queue_deleted(self, queue: Queue) -> None:
        self.events.append(("queue_deleted", queue.name))

    def binding_added(self, binding: Binding) -> None:
        self.events.append(("binding_added", f"{binding.source.name}->{binding.routing_key}"))

    def binding_removed(self, binding: Binding) -> None:
        self.events.append(("binding_removed", f"{binding.source.name}->{binding.routing_key}"))


class RecordingPolicies:
    def __init__(self) -> None:
        self.applied: list[str] = []

    def apply_to_queue(self, queue: Queue) -> None:
        self.applied.append(f"queue {queue.name}")

    def apply_to_exchange(self, exchange: Exchange) -> None:
        self.applied.append(f"exchange {exchange.name}")


class RecordingHost:
    """A TopologyHost that records; its queues' settlements and dead letters are dropped."""

    def __init__(self) -> None:
        self.name = "vh"
        self.recording = RecordingJournal()
        self.journal: Journal = self.recording
        self.spill: BodyStore | None = None
        self.firehose: Firehose | None = None  # not traced
        self.scheduler: Scheduler = ManualScheduler()
        self.policies = RecordingPolicies()
        self.deleted: list[Queue] = []

    def settled(self, queue: Queue, entry: QueueEntry) -> None:
        pass

    def dead_letter(self, queue: Queue, entries: list[QueueEntry], reason: str) -> None:
        pass

    def delete_queue_object(self, queue: Queue) -> None:
        self.deleted.append(queue)


class Owner:
    """A connection, as far as exclusive queues are concerned: any object."""


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
def topology(host: RecordingHost) -> Topology:
    return Topology(host)


def refused(call: Any, *args: Any, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(AMQPError) as caught:
        call(*args, **kwargs)
    return caught.value.reply_code, caught.value.text


def test_a_new_topology_has_the_default_predeclared_and_decision_exchanges(topology):
    assert sorted(topology.exchanges) == [
        "",
        "amq.direct",
        "amq.fanout",
        "amq.headers",
        "amq.match",
        "amq.rabbitish.txn",
        "amq.rabbitmq.trace",
        "amq.topic",
    ]
    assert all(e.vhost == "vh" for e in topology.exchanges.values())


def test_declared_queues_get_the_host_policies_journal_and_counts(host, topology):
    queue = topology.declare_queue("q", owner=None, durable=True)
    assert queue.vhost is host
    assert topology.queues == {"q": queue}
    assert host.policies.applied == ["queue q"]
    assert host.recording.events == [("queue_declared", "q")]
    assert topology.declare_queue("q", owner=None, durable=True) is queue
    assert topology.churn == {"queue_declared": 2, "queue_created": 1, "queue_deleted": 0}


def test_a_server_named_queue_is_generated_and_amq_names_are_refused(topology):
    assert topology.declare_queue("", owner=None).name.startswith("amq.gen-")
    assert refused(topology.declare_queue, "amq.q", owner=None) == (
        403,
        "queue name 'amq.q' contains reserved prefix 'amq.*'",
    )
    # Recovery brings back what was accepted once, without declare's checks.
    assert topology.recover_queue("amq.gen-x", auto_delete=False, arguments={}, arg_types={})


def test_redeclaring_differently_is_refused_with_rabbitmqs_texts(topology):
    owner = Owner()
    topology.declare_queue("q", owner=None, durable=True)
    topology.declare_queue("mine", owner=owner, exclusive=True)
    assert refused(topology.declare_queue, "q", owner=None) == (
        406,
        "inequivalent arg 'durable' for queue 'q' in vhost 'vh': "
        "received 'false' but current is 'true'",
    )
    code, text = refused(topology.declare_queue, "mine", owner=Owner(), exclusive=True)
    assert code == 405
    assert text.startswith("cannot obtain exclusive access to locked queue 'mine' in vhost 'vh'.")
    assert refused(topology.queue, "missing", None) == (404, "no queue 'missing' in vhost 'vh'")


def test_exchange_declare_and_delete_checks(host, topology):
    exchange = topology.declare_exchange("x", "topic")
    assert host.policies.applied == ["exchange x"]
    assert topology.declare_exchange("x", "topic", passive=True) is exchange
    assert refused(topology.declare_exchange, "", "direct") == (
        403,
        "operation not permitted on the default exchange",
    )
    assert refused(topology.declare_exchange, "amq.x", "direct") == (
        403,
        "exchange name 'amq.x' contains reserved prefix 'amq.*'",
    )
    assert refused(topology.delete_exchange, "amq.direct") == (
        403,
        "deletion of system exchange 'amq.direct' in vhost 'vh' not allowed",
    )
    topology.declare_queue("q", owner=None)
    topology.add_binding("queue", "q", "x", "k", {}, {}, None)
    assert refused(topology.delete_exchange, "x", if_unused=True) == (
        406,
        "exchange 'x' in vhost 'vh' in use",
    )
    topology.delete_exchange("x")
    topology.delete_exchange("x")  # a missing exchange is fine
    assert "x" not in topology.exchanges and "x" not in topology.exchange_arg_types
    assert ("exchange_deleted", "x") in host.recording.events


def test_bindings_check_in_rabbitmqs_order_and_are_journaled(host, topology):
    topology.declare_queue("q", owner=None)
    assert refused(topology.add_binding, "queue", "q", "", "k", {}, {}, None) == (
        403,
        "operation not permitted on the default exchange",
    )
    assert refused(topology.add_binding, "queue", "q", "nope", "k", {}, {}, None) == (
        404,
        "no exchange 'nope' in vhost 'vh'",
    )
    assert refused(topology.add_binding, "queue", "nope", "amq.direct", "k", {}, {}, None) == (
        404,
        "no queue 'nope' in vhost 'vh'",
    )
    topology.add_binding("queue", "q", "amq.direct", "k", {}, {}, None)
    topology.remove_binding("queue", "q", "amq.direct", "k", {}, None)
    topology.remove_binding("queue", "q", "amq.direct", "k", {}, None)  # missing is fine
    assert [e for e in host.recording.events if e[0].startswith("binding")] == [
        ("binding_added", "amq.direct->k"),
        ("binding_removed", "amq.direct->k"),
    ]


def test_an_auto_delete_exchange_goes_with_its_last_binding(topology):
    topology.declare_queue("q", owner=None)
    topology.declare_exchange("x", "direct", auto_delete=True)
    topology.add_binding("queue", "q", "x", "k", {}, {}, None)
    topology.unbind(topology.queues["q"], "x", "k")
    assert "x" not in topology.exchanges


def test_deleting_a_queue_drops_its_bindings_keeps_its_counts_and_cancels_consumers(host, topology):
    queue = topology.declare_queue("q", owner=None)
    topology.declare_exchange("x", "fanout", auto_delete=True)
    topology.bind(queue, "x", "")
    queue.enqueue(message(body=b"a"))
    queue.get(settled=True)
    assert topology.delete_queue("q", owner=None) == 0
    assert "q" not in topology.queues and queue.deleted
    assert "x" not in topology.exchanges  # its only binding went with the queue
    assert topology.deleted_queue_stats["get_no_ack"] == 1
    assert topology.churn["queue_deleted"] == 1
    assert topology.delete_queue("q", owner=None) == 0  # deleting a missing queue is fine


def test_delete_queue_if_empty_and_if_unused(topology):
    queue = topology.declare_queue("q", owner=None)
    queue.enqueue(message())
    assert refused(topology.delete_queue, "q", owner=None, if_empty=True) == (
        406,
        "queue 'q' in vhost 'vh' not empty",
    )
    assert topology.delete_queue("q", owner=None) == 1


def test_an_owner_closing_deletes_its_exclusive_queues_only(topology):
    owner = Owner()
    mine = topology.declare_queue("mine", owner=owner, exclusive=True)
    assert not mine.durable  # exclusive queues are never durable
    topology.declare_queue("shared", owner=None)
    topology.owner_closed(owner)
    assert sorted(topology.queues) == ["shared"]


def test_a_quorum_queue_is_checked_for_its_type_named_and_compared_by_its_arguments(topology):
    quorum = {"x-queue-type": "quorum", "x-delivery-limit": 3}
    resource = "queue 'q' in vhost 'vh'"
    assert refused(topology.declare_queue, "", owner=None, durable=True, arguments=quorum) == (
        406,
        "Cannot declare a server-named queue for type rabbit_quorum_queue",
    )
    assert refused(topology.declare_queue, "q", owner=None, arguments=quorum) == (
        406,
        f"invalid property 'non-durable' for {resource}",
    )
    queue = topology.declare_queue("q", owner=None, durable=True, arguments=quorum)
    assert (queue.args.counts_returns, queue.args.delivery_limit) == (True, 3)
    assert refused(
        topology.declare_queue,
        "q",
        owner=None,
        durable=True,
        arguments={**quorum, "x-delivery-limit": 4},
    ) == (
        406,
        f"inequivalent arg 'x-delivery-limit' for {resource}: received '4' but current is '3'",
    )


def test_a_local_random_exchange_binds_classic_queues_with_empty_keys_only(topology):
    topology.declare_exchange("lr", "x-local-random")
    topology.declare_queue("c", owner=None)
    topology.declare_queue("qq", owner=None, durable=True, arguments={"x-queue-type": "quorum"})
    assert refused(topology.add_binding, "queue", "c", "lr", "k", {}, {}, None) == (
        406,
        "Non empty binding 'k' key not permitted",
    )
    assert refused(topology.add_binding, "queue", "qq", "lr", "", {}, {}, None) == (
        406,
        "Queue type rabbit_quorum_queue not valid for this exchange type",
    )
    topology.add_binding("queue", "c", "lr", "", {}, {}, None)
    assert [q.name for q in topology.exchange("lr").match(message(), "any key")] == ["c"]
