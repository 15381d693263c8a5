"""`rabbitish ctl` / `rabbitish diagnostics` against RabbitMQ 3.10.8's own rabbitmqctl and
rabbitmq-diagnostics: the same state is built on a rabbitish and on a real node, then every verb
runs on both and their standard output, standard error and exit code are compared.

Normalised: node names, pids, ports (the peer's and the listeners'), connection times, log lines
of the node that reach the tool's standard error only some of the time, and the rows' order
(rabbitmqctl lists in its tables' order, which nothing promises). One row is left out of
list_exchanges: rabbitish's own `amq.rabbitish.txn`. `status` is compared in shape: each
section and line rabbitish prints is one RabbitMQ prints too.

One real node and one broker for the module; rabbitmqctl costs about a second a call, so the
read-only verbs run a few at a time."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pika
import pika.exceptions
import pytest
from rabbitish.cli.ctl.main import diagnostics, rabbitmqctl

from rabbitish.testing import management_url, running_broker
from tests.support.real_rabbitmq import RABBITMQ_SERVER, rabbitmq_available, real_rabbitmq

pytestmark = [
    pytest.mark.rabbitmq,
    pytest.mark.skipif(not rabbitmq_available(), reason="rabbitmq-server is not installed"),
]

BIN = RABBITMQ_SERVER.parent
PID = re.compile(r"<[^<>\s]+\.\d+\.\d+\.\d+>")
ADDRESS_PORT = re.compile(r"(127\.0\.0\.1):\d+")
VOLATILE = {"pid", "channel_pid", "connection", "peer_port", "port", "connected_at"}
# A warning the node logs while it answers (e.g. "[warning] Failed to set permissions for
# 'alice': virtual host 'no-such-vhost' does not exist") reaches the tool's standard error too,
# or not, depending on timing: it is the node's log, not the tool's answer.
NODE_LOG_LINE = re.compile(r"\n?^\d\d:\d\d:\d\d\.\d{3} \[[a-z]+\] [^\n]*\n", re.MULTILINE)
SKIPPED_EXCHANGES = {"amq.rabbitish.txn"}


@dataclass(frozen=True)
class Outcome:
    out: str
    err: str
    code: int


@dataclass
class Side:
    """One broker and how to run the tools against it."""

    amqp_url: str
    node: str
    run: Callable[..., Outcome]
    connections: list[pika.BlockingConnection]

    def ctl(self, *args: str, stdin: str = "") -> Outcome:
        return self.run("rabbitmqctl", list(args), stdin)

    def diagnostics(self, *args: str) -> Outcome:
        return self.run("rabbitmq-diagnostics", list(args), "")


def _in_process(url: str) -> Callable[..., Outcome]:
    tools = {"rabbitmqctl": rabbitmqctl, "rabbitmq-diagnostics": diagnostics}

    def run(tool: str, args: list[str], stdin: str) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = tools[tool]([*args, "--url", url])
        return Outcome(out.getvalue(), err.getvalue(), code)

    return run


def _real(node) -> Callable[..., Outcome]:
    def run(tool: str, args: list[str], stdin: str) -> Outcome:
        done = subprocess.run(
            [str(BIN / tool), "-n", node.nodename, *args],
            env=node._env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Outcome(done.stdout, NODE_LOG_LINE.sub("", done.stderr), done.returncode)

    return run


def _build(url: str) -> list[pika.BlockingConnection]:
    """The state both brokers get: queues with and without arguments, exchanges, bindings of
    each kind, ready and unacknowledged messages, consumers, confirm and tx channels."""
    main = pika.BlockingConnection(pika.URLParameters(url))
    ch = main.channel()
    ch.queue_declare("q1", durable=True)
    ch.queue_declare(
        "q2", arguments={"x-max-length": 10, "x-message-ttl": 60000, "x-dead-letter-exchange": "d"}
    )
    ch.queue_declare("q-tab\tname")
    ch.queue_declare("q-delete")
    ch.exchange_declare("ex1", "topic", durable=True)
    ch.exchange_declare("ex2", "headers", internal=True, arguments={"alternate-exchange": "ae"})
    ch.queue_bind("q1", "ex1", "a.#")
    ch.queue_bind("q2", "ex2", "", arguments={"x-match": "all", "k": "v"})
    ch.exchange_bind("ex2", "ex1", "b.*")
    for body in (b"one", b"two", b"three"):
        ch.basic_publish("", "q1", body, pika.BasicProperties(delivery_mode=2))
    ch.basic_publish("", "q2", b"a")
    ch.basic_publish("", "q2", b"b")
    consuming = main.channel()
    consuming.basic_qos(prefetch_count=7)
    got: list[bytes] = []
    consuming.basic_consume(
        "q2",
        lambda _c, _m, _p, body: got.append(body),
        consumer_tag="ctag-1",
        arguments={"x-priority": 5},
    )
    main.channel().confirm_delivery()
    main.channel().tx_select()
    main.channel().basic_consume("q-tab\tname", lambda *_: None, auto_ack=True, consumer_tag="c2")
    while len(got) < 2:
        main.process_data_events(time_limit=0.05)
    doomed = pika.BlockingConnection(pika.URLParameters(url))
    return [main, doomed]


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Iterator[tuple[Side, Side]]:
    with running_broker(management=True) as broker, real_rabbitmq() as node:
        ours = Side(broker.url, "rabbitish@localhost", _in_process(management_url(broker)), [])
        theirs = Side(node.url, node.nodename, _real(node), [])
        for side in (ours, theirs):
            side.connections = _build(side.amqp_url)
        try:
            yield ours, theirs
        finally:
            for side in (ours, theirs):
                for connection in side.connections:
                    with contextlib.suppress(pika.exceptions.AMQPError):
                        connection.close()


def _normal(text: str, side: Side) -> str:
    text = text.replace(side.node, "NODE")
    text = PID.sub("<PID>", text)
    return ADDRESS_PORT.sub(r"\1:PORT", text)


def _table(outcome: Outcome, side: Side, headed: bool = True) -> Outcome:
    """A listing normalised: volatile columns blanked, rows sorted, two exchanges left out."""
    lines = _normal(outcome.out, side).split("\n")
    header_at = next((i for i, line in enumerate(lines) if "\t" in line), None)
    if not headed:
        return Outcome("\n".join(sorted(lines)), _normal(outcome.err, side), outcome.code)
    if header_at is None:
        return Outcome("\n".join(lines), _normal(outcome.err, side), outcome.code)
    columns = lines[header_at].split("\t")
    rows = []
    for line in lines[header_at + 1 :]:
        if not line:
            continue
        cells = line.split("\t")
        if len(cells) == len(columns):
            cells = ["~" if c in VOLATILE else v for c, v in zip(columns, cells, strict=True)]
        if cells[0] in SKIPPED_EXCHANGES and columns[:2] == ["name", "type"]:
            continue
        rows.append("\t".join(cells))
    text = "\n".join([*lines[: header_at + 1], *sorted(rows)])
    return Outcome(text, _normal(outcome.err, side), outcome.code)


def _lines(outcome: Outcome, side: Side) -> Outcome:
    first, *rest = _normal(outcome.out, side).split("\n")
    return Outcome("\n".join([first, *sorted(rest)]), outcome.err, outcome.code)


def _same(ours: Outcome, theirs: Outcome, what: str) -> None:
    assert (ours.code, ours.out, ours.err) == (theirs.code, theirs.out, theirs.err), what


def _plain(outcome: Outcome, side: Side) -> Outcome:
    return Outcome(_normal(outcome.out, side), _normal(outcome.err, side), outcome.code)


def _both(sides: tuple[Side, Side], *args: str, listing: bool = False) -> None:
    """One verb on both, in order with the verbs around it."""
    ours, theirs = sides
    normal = _table if listing else _plain
    _same(normal(ours.ctl(*args), ours), normal(theirs.ctl(*args), theirs), " ".join(args))


def _together(
    sides: tuple[Side, Side], cases: list[tuple[str, ...]], listing: bool = False
) -> None:
    """Verbs that do not depend on each other: the real tool's calls (a second each) run a few
    at a time."""
    ours, theirs = sides
    normal = _table if listing else _plain
    with ThreadPoolExecutor(3) as pool:
        real = list(pool.map(lambda args: theirs.ctl(*args), cases))
    for args, their in zip(cases, real, strict=True):
        _same(normal(ours.ctl(*args), ours), normal(their, theirs), " ".join(args))


LISTINGS = [
    ("list_queues",),
    (
        "list_queues",
        "name",
        "durable",
        "auto_delete",
        "exclusive",
        "arguments",
        "messages",
        "messages_ready",
        "messages_unacknowledged",
        "consumers",
        "policy",
        "state",
        "type",
    ),
    ("list_exchanges", "name", "type", "durable", "auto_delete", "internal", "arguments"),
    ("list_bindings",),
    ("list_connections",),
    (
        "list_connections",
        "name",
        "user",
        "vhost",
        "peer_host",
        "protocol",
        "channels",
        "auth_mechanism",
        "ssl",
        "state",
        "client_properties",
    ),
    ("list_channels",),
    (
        "list_channels",
        "name",
        "number",
        "connection",
        "user",
        "vhost",
        "transactional",
        "confirm",
        "consumer_count",
        "messages_unacknowledged",
        "prefetch_count",
        "global_prefetch_count",
    ),
    ("list_consumers",),
    ("list_queues", "-s", "name", "messages_ready"),
    ("list_users", "--formatter", "json"),
    ("list_queues", "name", "messages", "--formatter", "csv"),
]


def test_listings_match(sides):
    ours, theirs = sides
    with ThreadPoolExecutor(3) as pool:
        real = list(pool.map(lambda args: theirs.ctl(*args), LISTINGS))
    for args, their in zip(LISTINGS, real, strict=True):
        mine = ours.ctl(*args)
        if "--formatter" in args:  # one object or record a line after the first
            _same(_lines(mine, ours), _lines(their, theirs), " ".join(args))
        else:
            headed = not {"-s", "--no-table-headers"} & set(args)
            _same(_table(mine, ours, headed), _table(their, theirs, headed), " ".join(args))


def test_access_control_verbs_match(sides):
    steps = [
        ("add_user", "alice", "pw1"),
        ("add_user", "alice", "pw1"),
        ("set_user_tags", "alice", "monitoring", "policymaker"),
        ("change_password", "alice", "pw2"),
        ("change_password", "nobody", "x"),
        ("-q", "add_user", "bob", "pw"),
        ("add_vhost", "v1"),
        ("set_permissions", "-p", "v1", "alice", "^a", ".*", ".*"),
        ("set_permissions", "-p", "no-such-vhost", "alice", ".*", ".*", ".*"),
        ("clear_permissions", "-p", "v1", "nobody"),
    ]
    for args in steps:
        _both(sides, *args)
    listings = [
        ("list_users",),
        ("list_vhosts", "name", "tags", "tracing"),
        ("list_permissions", "-p", "v1"),
    ]
    _together(sides, listings, listing=True)
    _together(sides, [("clear_permissions", "-p", "v1", "alice"), ("delete_user", "bob")])
    for args in [("delete_user", "bob"), ("delete_vhost", "v1"), ("delete_vhost", "v1")]:
        _both(sides, *args)


def test_policies_queues_and_tracing_match(sides):
    steps = [
        (
            "set_policy",
            "--priority",
            "2",
            "--apply-to",
            "queues",
            "lim",
            "^q1$",
            '{"max-length":5}',
        ),
        ("set_policy", "bad", "^x", "notjson"),
        ("clear_policy", "nope"),
        ("purge_queue", "q1"),
        ("purge_queue", "no-such-queue"),
        ("delete_queue", "no-such-queue"),
        ("delete_queue", "q-delete", "--if-empty"),
        ("trace_on",),
    ]
    _together(sides, steps)
    _together(sides, [("list_policies",), ("trace_off",)], listing=True)
    ours, theirs = (side.ctl("list_queues", "nosuchcolumn") for side in sides)
    assert (ours.code, ours.err.splitlines()[0]) == (theirs.code, theirs.err.splitlines()[0])


def test_definitions_and_close_connection_match(sides, tmp_path):
    definitions = {
        "queues": [
            {
                "name": "imported",
                "vhost": "/",
                "durable": True,
                "auto_delete": False,
                "arguments": {},
            }
        ],
        "exchanges": [],
        "bindings": [],
        "users": [],
        "vhosts": [],
        "permissions": [],
        "policies": [],
    }
    source = tmp_path / "in.json"
    source.write_text(json.dumps(definitions))
    target = tmp_path / "out.json"
    _both(sides, "import_definitions", str(source))
    _both(sides, "export_definitions", str(target))
    ours, _ = sides
    assert ours.ctl("-q", "export_definitions", str(target)).code == 0  # the file is ours now
    exported = json.loads(target.read_text())
    assert "imported" in [q["name"] for q in exported["queues"]]
    for side in sides:
        pid = next(
            line.split("\t")[0]
            for line in side.ctl("list_connections", "-s", "pid", "channels").out.splitlines()
            if line.endswith("\t0")
        )
        outcome = side.ctl("close_connection", pid, "go away")
        assert outcome.code == 0, outcome
        assert _normal(outcome.out, side) == "Closing connection <PID>, reason: go away...\n"


def test_node_verbs_match(sides):
    ours, theirs = sides
    cases = [("ping",), ("check_running",), ("check_port_connectivity",), ("-q", "ping")]
    with ThreadPoolExecutor(3) as pool:
        real = list(pool.map(lambda args: theirs.diagnostics(*args), cases))
        their_status = pool.submit(theirs.ctl, "status")
    for args, their in zip(cases, real, strict=True):
        mine = ours.diagnostics(*args)
        numbers = re.compile(r"\d+(, \d+)*(?= on node)")
        mine_out = numbers.sub("PORTS", _normal(mine.out, ours))
        their_out = numbers.sub("PORTS", _normal(their.out, theirs))
        assert (mine.code, mine_out) == (their.code, their_out), args
    _both(sides, "await_startup")
    mine, their = ours.ctl("status"), their_status.result()
    assert mine.code == their.code == 0
    assert _normal(mine.out, ours).splitlines()[0] == _normal(their.out, theirs).splitlines()[0]
    labels = {line.split(":")[0] for line in their.out.splitlines()}
    for line in mine.out.splitlines()[1:]:
        assert not line or line.split(":")[0] in labels, line
