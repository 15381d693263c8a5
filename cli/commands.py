"""The full command line (typer). `serve` is declared here for help and completeness; the fast
path in main.py parses the same options without importing this module. Every other command talks
to a running broker through its management HTTP API (`--url`)."""

from __future__ import annotations

import enum
import json
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rabbitish.cli import access, render
from rabbitish.cli import serve as serve_help
from rabbitish.cli.client import DEFAULT_URL, REFUSED, ApiFailure, Client, CliError, segment
from rabbitish.cli.output import AsJson, Url, Vhost, VhostOne
from rabbitish.cli.output import console as _console
from rabbitish.cli.output import print_json as _print_json
from rabbitish.cli.output import run as _run
from rabbitish.cli.serve import (
    CHECK_HELP,
    CONSUMER_TIMEOUT_HELP,
    DEFAULTS,
    DEFINITIONS_HELP,
    DISK_HELP,
    FSYNC_HELP,
    HALF_CHECK_INTERVAL_HELP,
    HALF_CHECK_MAX_HELP,
    MAX_MESSAGE_HELP,
    MEMORY_HELP,
    PAGING_HELP,
    PROMETHEUS_PORT_HELP,
)

from rabbitish.config import FSYNC_MODES, Config
from rabbitish.tls import LOGIN_FROM

T = TypeVar("T")

cli = typer.Typer(
    help="rabbitish: a RabbitMQ-compatible AMQP broker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# typer validates a choice given as an enum; its members come from the one tuple in config.py.
FsyncMode = enum.StrEnum("FsyncMode", {mode: mode for mode in FSYNC_MODES})
LoginFrom = enum.StrEnum("LoginFrom", {name: name for name in LOGIN_FROM})


def _scoped(path: str, vhost: str | None) -> str:
    return path if vhost is None else f"{path}/{segment(vhost)}"


access.register(cli)  # users, permissions, vhosts (cli/access.py)


@cli.callback()
def main() -> None:
    """rabbitish: a RabbitMQ-compatible AMQP broker."""


@cli.command()
def serve(
    host: str = typer.Option(DEFAULTS.host, help="Address to listen on."),
    port: int = typer.Option(DEFAULTS.port, help="AMQP port (0 picks a free one)."),
    data_dir: str = typer.Option(DEFAULTS.data_dir, help="Data directory, or :memory: for none."),
    fsync: Annotated[FsyncMode, typer.Option(help=FSYNC_HELP)] = FsyncMode[DEFAULTS.fsync],
    management_port: int = typer.Option(
        DEFAULTS.management_port, help="Management HTTP API port (0: disabled)."
    ),
    prometheus_port: int = typer.Option(DEFAULTS.prometheus_port, help=PROMETHEUS_PORT_HELP),
    half_check_interval: float = typer.Option(
        DEFAULTS.half_check_interval, help=HALF_CHECK_INTERVAL_HELP
    ),
    half_check_max: int = typer.Option(DEFAULTS.half_check_max, help=HALF_CHECK_MAX_HELP),
    definitions: str | None = typer.Option(None, help=DEFINITIONS_HELP),
    tls_port: int | None = typer.Option(None, help=serve_help.TLS_PORT_HELP),
    certfile: str | None = typer.Option(None, help=serve_help.CERTFILE_HELP),
    keyfile: str | None = typer.Option(None, help=serve_help.KEYFILE_HELP),
    cafile: str | None = typer.Option(None, help=serve_help.CAFILE_HELP),
    verify_peer: bool = typer.Option(False, help=serve_help.VERIFY_PEER_HELP),
    management_tls: bool = typer.Option(False, help=serve_help.MANAGEMENT_TLS_HELP),
    allow_remote_guest: bool = typer.Option(False, help=serve_help.ALLOW_REMOTE_GUEST_HELP),
    ssl_cert_login_from: Annotated[
        LoginFrom, typer.Option(help=serve_help.LOGIN_FROM_HELP)
    ] = LoginFrom[DEFAULTS.ssl_cert_login_from],
    check: bool = typer.Option(False, "--check", help=CHECK_HELP),
    memory_high_watermark: str = typer.Option(DEFAULTS.memory_high_watermark, help=MEMORY_HELP),
    memory_paging_ratio: float = typer.Option(DEFAULTS.memory_paging_ratio, help=PAGING_HELP),
    disk_free_limit: str = typer.Option(DEFAULTS.disk_free_limit, help=DISK_HELP),
    max_message_size: int = typer.Option(DEFAULTS.max_message_size, help=MAX_MESSAGE_HELP),
    consumer_timeout: int = typer.Option(DEFAULTS.consumer_timeout, help=CONSUMER_TIMEOUT_HELP),
    busy_wait_us: int = typer.Option(DEFAULTS.busy_wait_us, help=serve_help.BUSY_WAIT_HELP),
) -> None:
    """Run the broker in the foreground; Ctrl-C or SIGTERM stops it cleanly."""
    from rabbitish.cli.serve import check as check_data_dir
    from rabbitish.cli.serve import run

    if check:
        raise typer.Exit(check_data_dir(data_dir))
    config = Config(
        host=host,
        port=port,
        data_dir=data_dir,
        fsync=fsync.value,
        management_port=management_port,
        prometheus_port=prometheus_port,
        half_check_interval=half_check_interval,
        half_check_max=half_check_max,
        definitions=definitions,
        **serve_help.security_options(
            tls_port,
            certfile,
            keyfile,
            cafile,
            verify_peer,
            management_tls,
            allow_remote_guest,
            ssl_cert_login_from.value,
        ),
        memory_high_watermark=memory_high_watermark,
        memory_paging_ratio=memory_paging_ratio,
        disk_free_limit=disk_free_limit,
        max_message_size=max_message_size,
        consumer_timeout=consumer_timeout,
        busy_wait_us=busy_wait_us,
    )
    raise typer.Exit(run(config))


# ---------------------------------------------------------------------- listings
def _listing(url: str, path: str, as_json: bool, table: Callable[[list[Any]], Any]) -> None:
    def body() -> None:
        items = Client(url).get(path)
        if as_json:
            _print_json(items)
        else:
            _console().print(table(items))

    _run(body)


@cli.command()
def queues(url: Url = DEFAULT_URL, vhost: Vhost = None, as_json: AsJson = False) -> None:
    """List queues: depth, unacknowledged, consumers, rates, flags and arguments."""
    _listing(url, _scoped("/api/queues", vhost), as_json, render.queues_table)


@cli.command()
def exchanges(url: Url = DEFAULT_URL, vhost: Vhost = None, as_json: AsJson = False) -> None:
    """List exchanges with their type, flags and arguments."""
    _listing(url, _scoped("/api/exchanges", vhost), as_json, render.exchanges_table)


@cli.command()
def bindings(url: Url = DEFAULT_URL, vhost: Vhost = None, as_json: AsJson = False) -> None:
    """List bindings (the default exchange's implicit ones included)."""
    _listing(url, _scoped("/api/bindings", vhost), as_json, render.bindings_table)


@cli.command()
def connections(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """List client connections (AMQP 0-9-1 and 1.0) with their protocol."""
    _listing(url, "/api/connections", as_json, render.connections_table)


@cli.command()
def channels(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """List channels and 1.0 sessions: mode (tx / confirm), consumers, prefetch, unacked work."""
    _listing(url, "/api/channels", as_json, render.channels_table)


@cli.command()
def links(url: Url = DEFAULT_URL, vhost: Vhost = None, as_json: AsJson = False) -> None:
    """List AMQP 1.0 links: session, direction, address, queue or exchange, credit, unsettled."""
    _listing(url, _scoped("/api/links", vhost), as_json, render.links_table)


tx_cli = typer.Typer(add_completion=False)
cli.add_typer(tx_cli, name="tx")
TxnId = Annotated[str, typer.Argument(help="Half transaction ID (the x-half-txn header).")]


@tx_cli.callback(invoke_without_command=True)
def tx(ctx: typer.Context, url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """Open transactions, and half transactions awaiting a decision.

    Open transactions of both protocols: id, state, channel or session, age, staged work. Half
    transactions: id, vhost, messages, queues, age, checks sent. `tx commit ID` and
    `tx rollback ID` decide a half transaction."""
    if ctx.invoked_subcommand is not None:
        return

    def body() -> None:
        client = Client(url)
        found = [{"kind": "channel", **t} for t in client.get("/api/transactions")]
        half = [
            {"kind": "half", "state": "prepared", **t} for t in client.get("/api/half-transactions")
        ]
        if as_json:
            _print_json(found + half)
            return
        console = _console()
        if found:
            staged = sum(
                t["staged_publishes"] + t["staged_settlements"] + t["staged_acquisitions"]
                for t in found
            )
            console.print(render.transactions_table(found))
            console.print(f"{len(found)} open transaction(s), {staged} staged operation(s)")
        else:
            console.print("no open transactions")
        if half:
            held = sum(t["messages"] for t in half)
            console.print(render.half_transactions_table(half))
            console.print(f"{len(half)} half transaction(s), {held} held message(s)")
        else:
            console.print("no half transactions")

    _run(body)


def _decide(url: str, vhost: str, txn_id: str, decision: str, as_json: bool) -> None:
    def body() -> None:
        path = f"/api/half-transactions/{segment(vhost)}/{segment(txn_id)}/{decision}"
        try:
            answer = Client(url).request("POST", path)
        except ApiFailure as err:
            if err.status == 404:
                raise CliError(f"no half transaction '{txn_id}' in vhost '{vhost}'") from None
            raise
        if as_json:
            _print_json(answer)
            return
        done = "committed" if decision == "commit" else "rolled back"
        count = answer.get("messages", 0)
        effect = "made visible" if decision == "commit" else "discarded"
        queues = ", ".join(answer.get("queues") or [])
        where = f" on {queues}" if queues and decision == "commit" else ""
        _console().print(
            f"{done} half transaction '{txn_id}' in vhost '{vhost}': "
            f"{count} message(s) {effect}{where}"
        )

    _run(body)


@tx_cli.command("commit")
def tx_commit(
    txn_id: TxnId, url: Url = DEFAULT_URL, vhost: VhostOne = "/", as_json: AsJson = False
) -> None:
    """Commit a half transaction: its held messages become visible at once.

    Every held message of ID joins its queue's tail in one step; exits 1 for an ID the broker
    does not hold."""
    _decide(url, vhost, txn_id, "commit", as_json)


@tx_cli.command("rollback")
def tx_rollback(
    txn_id: TxnId, url: Url = DEFAULT_URL, vhost: VhostOne = "/", as_json: AsJson = False
) -> None:
    """Roll back a half transaction: its held messages are discarded.

    Exits 1 for an ID the broker does not hold."""
    _decide(url, vhost, txn_id, "rollback", as_json)


# ---------------------------------------------------------------------- messages
def _queue_path(vhost: str, queue: str) -> str:
    return f"/api/queues/{segment(vhost)}/{segment(queue)}"


def _require(client: Client, path: str, what: str) -> Any:
    try:
        return client.get(path)
    except ApiFailure as err:
        if err.status == 404:
            raise CliError(f"no {what}") from None
        raise


@cli.command()
def peek(
    queue: Annotated[str, typer.Argument(help="Queue to look into.")],
    count: Annotated[int, typer.Option("--count", "-n", help="How many messages.")] = 10,
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
    as_json: AsJson = False,
) -> None:
    """Show the first messages of a queue without consuming them (they are requeued in place)."""

    def body() -> None:
        client = Client(url)
        path = _queue_path(vhost, queue)
        info = _require(client, path, f"queue '{queue}' in vhost '{vhost}'")
        request = {"count": count, "ackmode": "ack_requeue_true", "encoding": "auto"}
        console = _console()
        with console.status(f"peeking at {min(count, info.get('messages_ready', 0))} message(s)"):
            messages = client.request("POST", path + "/get", request)
        if as_json:
            _print_json(messages)
            return
        for index, message in enumerate(messages, 1):
            console.print(render.message_panel(index, message))
        ready = info.get("messages_ready", len(messages))
        console.print(
            f"{len(messages)} of {max(ready, len(messages))} ready message(s) in '{queue}' "
            "shown; none consumed"
        )

    _run(body)


def _parse_pairs(pairs: list[str], what: str) -> dict[str, Any]:
    """key=value pairs; a value that reads as JSON (numbers, true, lists) keeps its type."""
    found: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise CliError(f"{what} must look like key=value, got {pair!r}", 2)
        try:
            found[key] = json.loads(raw)
        except ValueError:
            found[key] = raw
    return found


@cli.command()
def publish(
    routing_key: Annotated[
        str, typer.Argument(help="Routing key (a queue name on the default exchange).")
    ],
    body: Annotated[
        str | None, typer.Argument(help="Message body; '-' or none reads stdin.")
    ] = None,
    exchange: Annotated[
        str, typer.Option("--exchange", "-e", help="Exchange ('' is the default).")
    ] = "",
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="Header key=value.")
    ] = None,
    prop: Annotated[
        list[str] | None,
        typer.Option("--property", "-p", help="Property key=value (content_type, message_id ...)."),
    ] = None,
    persistent: Annotated[bool, typer.Option("--persistent", help="delivery_mode 2.")] = False,
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
) -> None:
    """Publish one message; exits 1 when it reached no queue."""

    def run() -> None:
        payload = sys.stdin.read() if body in (None, "-") else body
        properties = _parse_pairs(prop or [], "--property")
        headers = _parse_pairs(header or [], "--header")
        if headers:
            properties["headers"] = headers
        if persistent:
            properties["delivery_mode"] = 2
        name = exchange or "amq.default"
        path = f"/api/exchanges/{segment(vhost)}/{segment(name)}/publish"
        request = {
            "routing_key": routing_key,
            "properties": properties,
            "payload": payload,
            "payload_encoding": "string",
        }
        answer = Client(url).request("POST", path, request)
        target = f"exchange '{exchange}'" if exchange else "the default exchange"
        if not answer.get("routed"):
            raise CliError(f"published to {target} but no queue matched '{routing_key}'", REFUSED)
        _console().print(f"published to {target} with routing key '{routing_key}'")

    _run(run)


@cli.command()
def purge(
    queue: Annotated[str, typer.Argument(help="Queue to empty.")],
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
) -> None:
    """Remove every ready message from a queue; prints how many went."""

    def run() -> None:
        client = Client(url)
        path = _queue_path(vhost, queue)
        info = _require(client, path, f"queue '{queue}' in vhost '{vhost}'")
        ready = info.get("messages_ready", 0)
        console = _console()
        with console.status(f"purging {ready} message(s) from '{queue}'"):
            client.request("DELETE", path + "/contents")
        console.print(f"purged {ready} message(s) from '{queue}'")

    _run(run)


@cli.command()
def delete(
    name: Annotated[str, typer.Argument(help="Queue (or, with --exchange, exchange) to delete.")],
    exchange: Annotated[bool, typer.Option("--exchange", help="Delete an exchange.")] = False,
    if_empty: Annotated[bool, typer.Option("--if-empty", help="Only an empty queue.")] = False,
    if_unused: Annotated[bool, typer.Option("--if-unused", help="Only if unused.")] = False,
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
) -> None:
    """Delete a queue or an exchange."""

    def run() -> None:
        kind = "exchange" if exchange else "queue"
        path = f"/api/{kind}s/{segment(vhost)}/{segment(name)}"
        flags = [f for f, on in (("if-empty=true", if_empty), ("if-unused=true", if_unused)) if on]
        query = "?" + "&".join(flags) if flags else ""
        try:
            Client(url).request("DELETE", path + query)
        except ApiFailure as err:
            if err.status == 404:
                raise CliError(f"no {kind} '{name}' in vhost '{vhost}'") from None
            raise
        _console().print(f"deleted {kind} '{name}'")

    _run(run)


# ---------------------------------------------------------------------- watch
@cli.command()
def watch(
    url: Url = DEFAULT_URL,
    vhost: Vhost = None,
    interval: Annotated[
        float, typer.Option("--interval", "-i", help="Seconds between updates.")
    ] = 1.0,
    iterations: Annotated[
        int, typer.Option("--iterations", help="Stop after this many updates (0: until Ctrl-C).")
    ] = 0,
) -> None:
    """A live table of queue depths and rates, refreshed every --interval seconds."""
    from rich.live import Live

    client = Client(url)
    path = _scoped("/api/queues", vhost)

    def snapshot() -> Any:
        stamp = time.strftime("%H:%M:%S")
        return render.queues_table(_run(lambda: client.get(path)), title=f"Queues at {stamp}")

    done = 0
    with Live(snapshot(), console=_console(), auto_refresh=False) as live:
        try:
            while True:
                done += 1
                if iterations and done >= iterations:
                    break
                time.sleep(interval)
                live.update(snapshot(), refresh=True)
        except KeyboardInterrupt:
            pass


# The management commands (policies, definitions, wait-ready) register themselves on `cli`.
from rabbitish.cli import admin  # noqa: E402, F401
