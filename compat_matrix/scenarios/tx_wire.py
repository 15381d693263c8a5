"""The tx class where frame order matters (raw client), and atomicity across queues."""

from __future__ import annotations

import threading
from typing import Any

from pamqp import commands

from compat_matrix.clients import frames, outcome
from compat_matrix.registry import scenario
from compat_matrix.session import WAIT, Delivery, Session
from tests.support.raw_amqp import content_header_frame, method_frame, raw_frame


def _publish(key: str, exchange: str = "", mandatory: bool = False, body: bytes = b"x") -> bytes:
    publish = commands.Basic.Publish(exchange=exchange, routing_key=key, mandatory=mandatory)
    return method_frame(1, publish) + content_header_frame(1, len(body)) + raw_frame(3, 1, body)


def _tx_channel(s: Session) -> Any:
    raw = s.raw()
    raw.open_channel(1)
    raw.send_method(1, commands.Tx.Select())
    raw.expect("Tx.SelectOk")
    return raw


@scenario("tx.return.frames_before_commit_ok", "tx.return")
def return_frames(s: Session) -> None:
    """Both returns (with header and body) arrive before tx.commit-ok, none before commit."""
    raw = _tx_channel(s)
    key = s.name("nowhere")
    raw.send(_publish(key, "amq.direct", True, b"a") + _publish(key, "amq.direct", True, b"b"))
    raw.send_method(1, commands.Basic.Qos(prefetch_count=0))
    before = frames(raw, "Basic.QosOk")
    s.log("before commit", before)
    raw.send_method(1, commands.Tx.Commit())
    at_commit = frames(raw, "Tx.CommitOk")
    s.log("at commit", at_commit)
    returns = [i for i, name in enumerate(at_commit) if name.endswith("Basic.Return")]
    s.check(
        "returns come before commit-ok",
        before == ["1:Basic.QosOk"] and len(returns) == 2 and at_commit[-1] == "1:Tx.CommitOk",
    )


@scenario("tx.return.mixed_with_routed", "tx.return", "tx.publish")
def return_mixed(s: Session) -> None:
    """Routed and unroutable publishes in one commit: only the unroutable one is returned."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _tx_channel(s)
    raw.send(_publish(q, mandatory=True) + _publish(s.name("nowhere"), mandatory=True))
    raw.send_method(1, commands.Tx.Commit())
    s.log("at commit", frames(raw, "Tx.CommitOk"))
    s.drain(s.channel(), q)


@scenario("tx.misuse.publish_pipelined_during_commit", "tx.misuse", "error.504")
def pipelined_publish(s: Session) -> None:
    """A publish sent before commit-ok arrives, while the commit is in progress: 504."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _tx_channel(s)
    raw.send(_publish(q) + method_frame(1, commands.Tx.Commit()) + _publish(q))
    s.log("closed", outcome(raw))
    s.drain(s.channel(), q, "committed anyway")


@scenario("tx.misuse.declare_pipelined_during_commit", "tx.misuse", "error.504")
def pipelined_declare(s: Session) -> None:
    """Any channel method before commit-ok of a commit with work in it: 504, connection closed."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _tx_channel(s)
    declare = commands.Queue.Declare(queue=q, passive=True)
    raw.send(_publish(q) + method_frame(1, commands.Tx.Commit()) + method_frame(1, declare))
    s.log("closed", outcome(raw))


@scenario("tx.misuse.pipelined_empty_commits", "tx.misuse")
def pipelined_empty(s: Session) -> None:
    """Pipelining after commits with nothing staged is fine: replies come in order."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _tx_channel(s)
    declare = commands.Queue.Declare(queue=q, passive=True)
    raw.send(
        method_frame(1, commands.Tx.Commit())
        + method_frame(1, commands.Tx.Commit())
        + method_frame(1, declare)
    )
    s.log("replies", frames(raw, "Queue.DeclareOk"))


@scenario("tx.misuse.rollback_pipelined", "tx.misuse", "tx.publish")
def pipelined_rollback(s: Session) -> None:
    """Publish, rollback and a declare pipelined: rollback-ok then declare-ok, nothing kept."""
    q = s.name("q")
    s.channel().queue_declare(q)
    raw = _tx_channel(s)
    declare = commands.Queue.Declare(queue=q, passive=True)
    raw.send(_publish(q) + method_frame(1, commands.Tx.Rollback()) + method_frame(1, declare))
    s.log("replies", frames(raw, "Queue.DeclareOk"))


@scenario("tx.ack.commit_ok_before_freed_deliveries", "tx.ack", "qos.per_consumer")
def commit_ok_before_freed_deliveries(s: Session) -> None:
    """A commit of acks alone frees prefetch: its commit-ok comes before the delivery that
    credit lets out."""
    q = s.name("q")
    setup = s.channel()
    setup.queue_declare(q)
    for body in ("a", "b", "c"):
        s.publish(setup, "", q, body)
    raw = _tx_channel(s)
    raw.send_method(1, commands.Basic.Qos(prefetch_count=1))
    raw.expect("Basic.QosOk")
    raw.send_method(1, commands.Basic.Consume(queue=q, consumer_tag="c"))
    s.log("first delivery", frames(raw, "ContentBody"))
    raw.send_method(1, commands.Basic.Ack(delivery_tag=1))
    raw.send_method(1, commands.Tx.Commit())
    s.log("after commit", frames(raw, "ContentBody"))


@scenario("tx.visibility.get_after_commit_ok", "tx.visibility", "tx.publish")
def visible_at_commit_ok(s: Session) -> None:
    """Once commit-ok is received every committed message can be got from another connection."""
    queues = [s.name(f"q{i}") for i in range(3)]
    setup = s.channel()
    for q in queues:
        setup.queue_declare(q)
    raw = _tx_channel(s)
    raw.send(b"".join(_publish(q, body=q[-2:].encode()) for q in queues))
    raw.send_method(1, commands.Tx.Commit())
    raw.expect("Tx.CommitOk")
    observer = s.channel(s.connect())
    seen = [s.get(observer, q, "get " + q[-2:]) for q in queues]
    s.check("commit-ok means visible in every queue", all(seen))


COMMITS = 60
PER_QUEUE = 2
QUEUES = 3


@scenario("tx.atomicity.single_queue", "tx.atomicity", "tx.publish")
def atomic_single_queue(s: Session) -> None:
    """A consumer of one queue sees each commit's publishes together, in commit order."""
    _commit_groups(s, 1)


@scenario("tx.atomicity.across_queues", "tx.atomicity")
def atomic_across_queues(s: Session) -> None:
    """A consumer of several queues on one channel sees each commit's messages together, never
    interleaved with a later commit's. rabbitish promises it (one store transaction per commit,
    also across a crash); RabbitMQ does not, though a local node usually shows it too."""
    _commit_groups(s, QUEUES)


def _commit_groups(s: Session, count: int) -> None:
    """COMMITS transactions of PER_QUEUE publishes to each of `count` queues, consumed on one
    channel; log whether every commit's messages arrived together."""
    queues = [s.name(f"q{i}") for i in range(count)]
    setup = s.channel()
    for q in queues:
        setup.queue_declare(q)
    total = COMMITS * PER_QUEUE * count
    received: list[int] = []
    ready, done = threading.Event(), threading.Event()

    def consume() -> None:
        ch = s.channel(s.connect())
        box: list[Delivery] = []
        for q in queues:  # one channel: its deliveries reach the client in the broker's order
            s.consumer(ch, q, box, auto_ack=True)
        ready.set()
        s.pump(ch.connection, lambda: len(box) >= total, 4 * WAIT)
        received.extend(int(d.body.split(":")[0]) for d in box)
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    ready.wait(WAIT)
    pub = s.channel(s.connect())
    pub.tx_select()
    for c in range(COMMITS):
        for q in queues:
            for k in range(PER_QUEUE):
                s.publish(pub, "", q, f"{c}:{k}")
        pub.tx_commit()
    done.wait(4 * WAIT)
    size = PER_QUEUE * count
    groups = [received[i : i + size] for i in range(0, len(received), size)]
    s.log("messages received", len(received))
    s.log("each commit seen whole", all(len(set(g)) == 1 for g in groups))
    s.log("commits in order", [g[0] for g in groups] == list(range(COMMITS)))
