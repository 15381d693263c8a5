"""AMQP 1.0 throughput with a real client (qpid-proton's event-driven container), rabbitish vs
RabbitMQ with its amqp1_0 plugin in one run: (a) send N messages unsettled to /queue/NAME and
wait for every accept, (b) receive them back with link credit, accepting each, (c) send under
transactions, a commit every B messages, (d) receive with a JMS selector that matches 1 message
in 10 (rabbitish only: RabbitMQ 3.10's plugin applies no selector), (e) request/reply round
trips over 1.0 with a dynamic reply queue, next to 0-9-1's direct reply-to with pika
(request_reply.py; RabbitMQ 3.10's plugin has no dynamic nodes). Messages are encoded once
up front and deliveries are read without decoding, so the client stays light; the broker's CPU
time (from /proc, summed over its processes) is reported next to the rate because wall-clock is
noisy on a small machine.

The send and receive rounds alternate between the brokers (both run for the whole benchmark),
so the median of each is taken over the same stretch of time on a shared machine.

    python -m benchmarks.amqp10 [--messages 20000] [--body 1024] [--batch 100] [--rounds 3]
                                [--round-trips 2000] [--native]

`--native` runs rabbitish's compiled build (RABBITISH_COMPILE=1's modules; bridge/ itself is
not among them, the engine and output modules it runs on are).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from proton import Delivery, Message, Terminus
from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import Container, LinkOption, Selector

from benchmarks import request_reply
from benchmarks.measure import cpu_seconds, print_table, process_tree
from benchmarks.side_by_side import add_native_option, rabbitish_env
from tests.support.amqp10 import proton_url
from tests.support.broker_process import BrokerProcess

TIMEOUT = 120.0  # a scenario that takes longer has hung
CREDIT = 500  # the receiver's link credit, topped up as messages arrive
REFUSED = "refuses coordinator links"


# ---------------------------------------------------------------------- client side
class Encoded:
    """A message encoded once, sent many times: proton calls `send(sender, tag)` on it."""

    def __init__(self, body: bytes, durable: bool, properties: dict | None = None) -> None:
        message = Message(body=body, durable=durable, properties=properties, inferred=True)
        self.data = message.encode()

    def send(self, sender, tag: str | None = None) -> Delivery:
        delivery = sender.delivery(tag or sender.delivery_tag())
        sender.stream(self.data)
        sender.advance()
        return delivery


class DurableQueue(LinkOption):
    """Terminus durability unsettled-state: RabbitMQ (and rabbitish) then declare the
    `/queue/NAME` queue durable, so persistent messages take the disk path."""

    def apply(self, link) -> None:
        terminus = link.target if link.is_sender else link.source
        terminus.durability = Terminus.DELIVERIES


class Scenario(MessagingHandler):
    """One connection doing one job; `started` / `finished` time the job, `error` says why it
    stopped early."""

    options: LinkOption | None = None  # set for --durable runs

    def __init__(self, url: str, address: str, count: int, prefetch: int = 0) -> None:
        super().__init__(prefetch=prefetch, auto_accept=False)
        self.url, self.address, self.count = url, address, count
        self.started = self.finished = 0.0
        self.error: str | None = None
        self.connection = None
        self._watchdog = None

    def on_start(self, event) -> None:
        self.connection = event.container.connect(self.url, allowed_mechs="PLAIN")
        self._watchdog = event.container.schedule(TIMEOUT, self)
        self.open_link(event.container)

    def open_link(self, container: Container) -> None:
        raise NotImplementedError

    def done(self, error: str | None = None) -> None:
        if self.finished:
            return
        self.finished = time.perf_counter()
        self.error = error
        self._watchdog.cancel()
        self.connection.close()

    def on_timer_task(self, event) -> None:
        self.done(f"timed out after {TIMEOUT} s")

    def on_link_error(self, event) -> None:
        condition = event.link.remote_condition
        self.done(f"link refused: {condition.name if condition else 'no condition'}")

    def on_session_error(self, event) -> None:
        condition = event.session.remote_condition
        self.done(f"session ended: {condition.name if condition else 'no condition'}")

    def on_connection_error(self, event) -> None:
        self.done("connection closed by the broker")

    def on_transport_error(self, event) -> None:
        self.done("transport error")

    def on_rejected(self, event) -> None:
        self.done("a message was rejected")


class Send(Scenario):
    """(a) Unsettled sends as fast as credit allows; finished when the last one is accepted."""

    def __init__(self, url: str, address: str, count: int, message: Encoded) -> None:
        super().__init__(url, address, count)
        self.message = message
        self.sent = self.accepted = 0

    def open_link(self, container: Container) -> None:
        container.create_sender(self.connection, self.address, options=self.options)

    def on_sendable(self, event) -> None:
        if not self.started:
            self.started = time.perf_counter()
        sender = event.sender
        while sender.credit and self.sent < self.count:
            sender.send(self.message)
            self.sent += 1

    def on_accepted(self, event) -> None:
        self.accepted += 1
        if self.accepted == self.count:
            self.done()


class Receive(Scenario):
    """(b) Credit kept topped up by proton's flow controller; each delivery is accepted and
    settled without decoding the message."""

    def __init__(self, url: str, address: str, count: int) -> None:
        super().__init__(url, address, count, prefetch=CREDIT)
        self.received = 0

    def open_link(self, container: Container) -> None:
        container.create_receiver(self.connection, self.address, options=self.options)

    def on_link_opened(self, event) -> None:
        self.started = self.started or time.perf_counter()

    def on_delivery(self, event) -> None:
        delivery = event.delivery
        if delivery.partial:
            return
        event.link.recv(delivery.pending)
        event.link.advance()
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        self.received += 1
        if self.received == self.count:
            self.done()


SELECTED_ONE_IN = 10  # (d): one message in this many has the colour the selector asks for
SELECTOR = "colour = 'green'"


class MixedSend(Send):
    """Sends for (d): every SELECTED_ONE_IN-th message is green, the others red."""

    def __init__(self, url: str, address: str, count: int, green: Encoded, red: Encoded) -> None:
        super().__init__(url, address, count, red)
        self.green = green

    def on_sendable(self, event) -> None:
        sender = event.sender
        while sender.credit and self.sent < self.count:
            sender.send(self.green if self.sent % SELECTED_ONE_IN == 0 else self.message)
            self.sent += 1


class SelectiveReceive(Receive):
    """(d) A receiver with a selector: the broker skips the nine red messages of ten, which
    stay in the queue."""

    def open_link(self, container: Container) -> None:
        container.create_receiver(self.connection, self.address, options=Selector(SELECTOR))


class TransactionalSend(Scenario, TransactionHandler):
    """(c) Declare, send `batch` messages under the transaction, commit; until `count` are
    committed."""

    def __init__(self, url: str, address: str, count: int, message: Encoded, batch: int) -> None:
        super().__init__(url, address, count)
        self.message, self.batch = message, batch
        self.sender = None
        self.transaction = None
        self.left = 0  # still to send in the current transaction
        self.committed = 0

    def open_link(self, container: Container) -> None:
        self.sender = container.create_sender(self.connection, self.address, options=self.options)
        self.started = time.perf_counter()
        container.declare_transaction(self.connection, handler=self)

    def on_link_error(self, event) -> None:
        if event.link is not self.sender:  # the coordinator link proton opened
            self.done(REFUSED)
        else:
            super().on_link_error(event)

    def on_session_error(self, event) -> None:
        """RabbitMQ 3.10 answers a coordinator link by ending the session: not-implemented."""
        condition = event.session.remote_condition
        if condition is not None and condition.name == "amqp:not-implemented":
            self.done(REFUSED)
        else:
            super().on_session_error(event)

    def on_transaction_declared(self, event) -> None:
        self.transaction, self.left = event.transaction, self.batch
        self._send()

    def on_sendable(self, event) -> None:
        self._send()

    def _send(self) -> None:
        transaction = self.transaction
        while transaction is not None and self.left and self.sender.credit:
            transaction.send(self.sender, self.message)
            self.left -= 1
        if transaction is not None and not self.left:
            self.transaction = None
            transaction.commit()

    def on_transaction_committed(self, event) -> None:
        self.committed += self.batch
        if self.committed >= self.count:
            self.done()
        else:
            event.container.declare_transaction(self.connection, handler=self)

    def on_transaction_declare_failed(self, event) -> None:
        self.done("declare refused")

    def on_transaction_commit_failed(self, event) -> None:
        self.done("commit failed")


# ---------------------------------------------------------------------- measuring
@dataclass
class Figure:
    rate: float  # messages/s
    cpu_us: float  # broker CPU microseconds per message

    def __str__(self) -> str:
        return f"{self.rate:,.0f} msgs/s, {self.cpu_us:,.0f} us CPU/msg"


def measure(scenario: Scenario, pids: list[int]) -> Figure:
    """Run one scenario to the end; its rate and the broker's CPU per message."""
    before = cpu_seconds(pids)
    Container(scenario).run()
    cpu = cpu_seconds(pids) - before
    if scenario.error:
        raise ScenarioFailed(scenario.error)
    elapsed = scenario.finished - scenario.started
    return Figure(scenario.count / elapsed, cpu / scenario.count * 1e6)


class ScenarioFailed(RuntimeError):
    """A scenario could not run on this broker (the text says why)."""


def median(figures: list[Figure]) -> Figure:
    """The median round by rate, so one noisy round neither flatters nor sinks a broker."""
    return sorted(figures, key=lambda figure: figure.rate)[len(figures) // 2]


def selective_receive(
    url: str, pids: list[int], args: argparse.Namespace, rabbitish: bool
) -> Figure | str:
    """(d): each round fills a queue with N messages, one in ten green, and times a selector
    receiver taking the green ones (rate and CPU per message it receives); the red ones are
    then drained untimed."""
    if not rabbitish:
        return "n/a (applies no selector)"
    green = Encoded(b"x" * args.body, args.durable, {"colour": "green"})
    red = Encoded(b"x" * args.body, args.durable, {"colour": "red"})
    address = f"/queue/bench-sel-{uuid.uuid4().hex[:8]}"
    selected = -(-args.messages // SELECTED_ONE_IN)
    rounds = []
    for _ in range(args.rounds):
        Container(MixedSend(url, address, args.messages, green, red)).run()
        rounds.append(measure(SelectiveReceive(url, address, selected), pids))
        Container(Receive(url, address, args.messages - selected)).run()
    return median(rounds)


RR_10 = "request/reply, 1.0 dynamic reply queue"
RR_091 = "request/reply, 0-9-1 direct reply-to"
SCENARIOS = ("send", "receive", "tx send", "selector receive (1 in 10)", RR_10, RR_091)


def round_trips(url: str, args: argparse.Namespace, rabbitish: bool) -> dict[str, object]:
    """(e): p50 / p99 of one request and its reply at a time, over each protocol."""
    amqp_091 = f"{url}/%2F"  # the same port speaks 0-9-1
    return {
        RR_10: request_reply.amqp10(url, args.round_trips) if rabbitish else "n/a (no dynamic)",
        RR_091: request_reply.direct_reply_to(amqp_091, args.round_trips),
    }


@dataclass
class Broker:
    """One broker under test: where to connect, its processes (for CPU) and whether it is
    rabbitish (RabbitMQ 3.10's plugin lacks selectors, dynamic nodes and transactions)."""

    name: str
    url: str
    pids: list[int]
    rabbitish: bool
    address: str = ""  # its queue for the send and receive rounds

    def __post_init__(self) -> None:
        self.address = self.address or f"/queue/bench-{uuid.uuid4().hex[:8]}"


def send_receive_rounds(
    brokers: list[Broker], args: argparse.Namespace
) -> dict[str, dict[str, object]]:
    """(a) and (b), round by round: each round sends N to each broker's queue and drains it,
    the brokers taking turns (in the other order every other round), so a spell of load on a
    shared machine falls on both rather than on one broker's rounds. The median round each."""
    message = Encoded(b"x" * args.body, args.durable)
    Scenario.options = DurableQueue() if args.durable else None
    sends: dict[str, list[Figure]] = {broker.name: [] for broker in brokers}
    receives: dict[str, list[Figure]] = {broker.name: [] for broker in brokers}
    for number in range(args.rounds):
        for broker in brokers if number % 2 == 0 else brokers[::-1]:
            url, address, pids = broker.url, broker.address, broker.pids
            sends[broker.name].append(measure(Send(url, address, args.messages, message), pids))
            receives[broker.name].append(measure(Receive(url, address, args.messages), pids))
    return {
        broker.name: {"send": median(sends[broker.name]), "receive": median(receives[broker.name])}
        for broker in brokers
    }


def other_scenarios(broker: Broker, args: argparse.Namespace) -> dict[str, object]:
    """(c), (d) and (e) on one broker."""
    url, pids = broker.url, broker.pids
    message = Encoded(b"x" * args.body, args.durable)
    Scenario.options = DurableQueue() if args.durable else None
    results: dict[str, object] = {}
    results["selector receive (1 in 10)"] = selective_receive(url, pids, args, broker.rabbitish)
    tx_address = f"/queue/bench-tx-{uuid.uuid4().hex[:8]}"
    commits = []
    try:
        for _ in range(args.rounds):
            scenario = TransactionalSend(url, tx_address, args.messages, message, args.batch)
            commits.append(measure(scenario, pids))
        results["tx send"] = median(commits)
    except ScenarioFailed as failed:
        results["tx send"] = f"n/a ({failed})"
    results.update(round_trips(url, args, broker.rabbitish))
    return results


def run_broker(
    url: str, pids: list[int], args: argparse.Namespace, rabbitish: bool = True
) -> dict[str, object]:
    """Every scenario against one broker."""
    broker = Broker("rabbitish" if rabbitish else url, url, pids, rabbitish)
    results = send_receive_rounds([broker], args)[broker.name]
    results.update(other_scenarios(broker, args))
    return results


@contextmanager
def rabbitish(env: dict[str, str] | None = None) -> Iterator[tuple[str, list[int]]]:
    """rabbitish in its own process on a temporary data dir, as RabbitMQ has a disk too (`env`:
    the compiled build's, with `--native`)."""
    with (
        tempfile.TemporaryDirectory(prefix="rabbitish-bench-") as data_dir,
        BrokerProcess(data_dir=data_dir, env=env) as broker,
    ):
        assert broker.proc is not None
        yield proton_url(broker.url), [broker.proc.pid]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--body", type=int, default=1024, help="body size in bytes")
    parser.add_argument("--batch", type=int, default=100, help="messages per commit")
    parser.add_argument("--rounds", type=int, default=3, help="the median round is reported")
    parser.add_argument("--durable", action="store_true", help="durable (persistent) messages")
    parser.add_argument("--round-trips", type=int, default=2000, help="request/reply rounds")
    add_native_option(parser)
    args = parser.parse_args()
    from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

    with ExitStack() as running:
        url, pids = running.enter_context(rabbitish(rabbitish_env(args)))
        name = "rabbitish (compiled)" if args.native else "rabbitish"
        brokers = [Broker(name, url, pids, rabbitish=True)]
        if rabbitmq_available():
            node = running.enter_context(real_rabbitmq())
            brokers.append(
                Broker(
                    f"RabbitMQ {node.version}",
                    proton_url(node.url),
                    process_tree(node.pid),
                    rabbitish=False,
                )
            )
        columns = send_receive_rounds(brokers, args)
        for broker in brokers:
            columns[broker.name].update(other_scenarios(broker, args))
    print(
        f"{args.messages:,} messages of {args.body} bytes, "
        f"{'durable' if args.durable else 'transient'}, median of {args.rounds} rounds; "
        f"tx: {args.batch} per commit"
    )
    rows = [["scenario", *columns, "ratio (rate, CPU/msg)"]]
    for scenario in SCENARIOS:
        cells = [columns[name][scenario] for name in columns]
        ratio = ""
        ours, theirs = [*cells, None][:2]
        if isinstance(ours, Figure) and isinstance(theirs, Figure):
            ratio = f"x{ours.rate / theirs.rate:.2f}, x{ours.cpu_us / theirs.cpu_us:.2f}"
        elif isinstance(ours, request_reply.Latency) and isinstance(theirs, request_reply.Latency):
            ratio = f"x{theirs.p50_us / ours.p50_us:.2f}, x{theirs.p99_us / ours.p99_us:.2f}"
        rows.append([scenario, *(str(cell) for cell in cells), ratio])
    print_table(rows)
    if len(columns) == 1:
        print("RabbitMQ: not installed")


if __name__ == "__main__":
    main()
