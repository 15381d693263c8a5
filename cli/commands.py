"""The full command line (typer): the root app, `serve` (for help and completeness: the fast
path in main.py parses the same options without importing this module), the listings, the
message commands and `watch`, and the sub-apps of access.py, transactions.py and admin.py, each
added by its module's `register`. Every command but `serve` talks to a running broker through
its management HTTP API (`--url`)."""

from __future__ import annotations

import enum
import inspect
import json
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rabbitish.cli import access, admin, backup, render, transactions
from rabbitish.cli.client import DEFAULT_URL, REFUSED, Client, CliError, segment
from rabbitish.cli.output import AsJson, Url, Vhost, VhostOne
from rabbitish.cli.output import console as _console
from rabbitish.cli.output import print_json as _print_json
from rabbitish.cli.output import run as _run
from rabbitish.cli.serve_options import SERVE_OPTIONS, ServeOption

from rabbitish.wire_names import DEFAULT_EXCHANGE_ALIAS

cli = typer.Typer(
    help="rabbitish: a RabbitMQ-compatible AMQP broker.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _scoped(path: str, vhost: str | None) -> str:
    return path if vhost is None else f"{path}/{segment(vhost)}"


@cli.callback()
def main() -> None:
    """rabbitish: a RabbitMQ-compatible AMQP broker."""


# ---------------------------------------------------------------------- serve
def _serve_parameter(option: ServeOption) -> inspect.Parameter:
    """One row of the serve options table as the parameter typer reads: a choice becomes an
    enum (typer validates and lists its members), a flag also takes --no-NAME when negatable."""
    annotation: Any = option.kind
    default = option.default
    if option.choices:
        # An enum made at run time from the table: mypy only follows literal enum names.
        choices = enum.StrEnum(  # type: ignore[misc]
            option.name, {choice: choice for choice in option.choices}
        )
        annotation, default = choices, choices[default]
    elif default is None:
        annotation = option.kind | None
    names = () if option.negatable else (option.flag,)
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(default, *names, help=option.help),
        annotation=annotation,
    )


@cli.command()
def serve(**options: Any) -> None:
    """Run the broker in the foreground; Ctrl-C or SIGTERM stops it cleanly."""
    from rabbitish.cli.serve import start

    values = {name: v.value if isinstance(v, enum.Enum) else v for name, v in options.items()}
    raise typer.Exit(start(values))


serve.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_serve_parameter(option) for option in SERVE_OPTIONS], return_annotation=None
)


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


# ---------------------------------------------------------------------- messages
def _queue_path(vhost: str, queue: str) -> str:
    return f"/api/queues/{segment(vhost)}/{segment(queue)}"


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
        info = client.get(path, missing=f"queue '{queue}' in vhost '{vhost}'")
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
        name = exchange or DEFAULT_EXCHANGE_ALIAS
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
        info = client.get(path, missing=f"queue '{queue}' in vhost '{vhost}'")
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
        Client(url).request("DELETE", path + query, missing=f"{kind} '{name}' in vhost '{vhost}'")
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


# ---------------------------------------------------------------------- rabbitmqctl's verbs
# The `rabbitish` script runs these on main.py's fast path; here they are for --help, the
# generated docs/cli.md and callers of this typer app.
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


@cli.command("ctl", context_settings=_PASS_THROUGH, add_help_option=False)
def ctl(context: typer.Context) -> None:
    """rabbitmqctl's verbs, options, output and exit codes: list_queues, add_user, status ..."""
    from rabbitish.cli.ctl.main import rabbitmqctl

    raise typer.Exit(rabbitmqctl(context.args))


@cli.command("diagnostics", context_settings=_PASS_THROUGH, add_help_option=False)
def diagnostics(context: typer.Context) -> None:
    """rabbitmq-diagnostics: ping, check_running, check_port_connectivity, status."""
    from rabbitish.cli.ctl.main import diagnostics as run_diagnostics

    raise typer.Exit(run_diagnostics(context.args))


# ---------------------------------------------------------------------- sub-apps
# After the commands above, in the order --help lists them.
access.register(cli)  # users, permissions, vhosts
transactions.register(cli)  # tx
admin.register(cli)  # wait-ready, policies, definitions
backup.register(cli)  # backup
