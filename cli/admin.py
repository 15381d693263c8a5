"""Commands that manage a broker rather than its messages: `policies`, `definitions` and
`wait-ready`. commands.py adds them to the main command line with `register`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rabbitish.cli.client import (
    DEFAULT_URL,
    UNREACHABLE,
    ApiFailure,
    Client,
    CliError,
    amqp_answers,
    segment,
)
from rabbitish.cli.output import AsJson, Url, Vhost, VhostOne
from rabbitish.cli.output import console as _console
from rabbitish.cli.output import print_json as _print_json
from rabbitish.cli.output import run as _run
from rich.table import Table

policies_cli = typer.Typer(
    add_completion=False, no_args_is_help=True, help="List, set and clear policies."
)
definitions_cli = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Export and import definitions (RabbitMQ's JSON).",
)


def register(cli: typer.Typer) -> None:
    """Add `wait-ready`, `policies` and `definitions` to the main command line."""
    cli.command("wait-ready")(wait_ready)
    cli.add_typer(policies_cli, name="policies")
    cli.add_typer(definitions_cli, name="definitions")


Operator = Annotated[
    bool, typer.Option("--operator", help="Operator policies instead of policies.")
]


def _resource(operator: bool) -> str:
    return "/api/operator-policies" if operator else "/api/policies"


# ---------------------------------------------------------------------- policies
@policies_cli.command("list")
def policies_list(
    url: Url = DEFAULT_URL, vhost: Vhost = None, operator: Operator = False, as_json: AsJson = False
) -> None:
    """Policies (or operator policies) with pattern, apply-to, priority and definition."""

    def body() -> None:
        path = _resource(operator) + ("" if vhost is None else f"/{segment(vhost)}")
        items = Client(url).get(path)
        if as_json:
            _print_json(items)
            return
        table = Table("vhost", "name", "pattern", "apply-to", "priority", "definition")
        for p in items:
            definition = json.dumps(p["definition"], sort_keys=True)
            table.add_row(
                p["vhost"], p["name"], p["pattern"], p["apply-to"], str(p["priority"]), definition
            )
        _console().print(table)

    _run(body)


@policies_cli.command("set")
def policies_set(
    name: Annotated[str, typer.Argument(help="Policy name.")],
    pattern: Annotated[str, typer.Argument(help="Regular expression matched against names.")],
    definition: Annotated[str, typer.Argument(help="JSON object, e.g. '{\"max-length\": 10}'.")],
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
    apply_to: Annotated[str, typer.Option("--apply-to", help="queues, exchanges or all.")] = "all",
    priority: Annotated[int, typer.Option("--priority", help="Highest wins.")] = 0,
    operator: Operator = False,
) -> None:
    """Set (add or replace) a policy; it applies at once to matching queues and exchanges."""

    def body() -> None:
        try:
            parsed = json.loads(definition)
        except ValueError:
            raise CliError(f"definition is not JSON: {definition}") from None
        request = {
            "pattern": pattern,
            "definition": parsed,
            "apply-to": apply_to,
            "priority": priority,
        }
        path = f"{_resource(operator)}/{segment(vhost)}/{segment(name)}"
        Client(url).request("PUT", path, request)
        kind = "operator policy" if operator else "policy"
        _console().print(f"set {kind} '{name}' in vhost '{vhost}'")

    _run(body)


@policies_cli.command("clear")
def policies_clear(
    name: Annotated[str, typer.Argument(help="Policy name.")],
    url: Url = DEFAULT_URL,
    vhost: VhostOne = "/",
    operator: Operator = False,
) -> None:
    """Clear a policy; exits 1 when there is no such policy."""

    def body() -> None:
        kind = "operator policy" if operator else "policy"
        path = f"{_resource(operator)}/{segment(vhost)}/{segment(name)}"
        Client(url).request("DELETE", path, missing=f"{kind} '{name}' in vhost '{vhost}'")
        _console().print(f"cleared {kind} '{name}' in vhost '{vhost}'")

    _run(body)


# ---------------------------------------------------------------------- definitions
DefinitionsFile = Annotated[Path, typer.Argument(help="JSON file ('-': standard in/out).")]


@definitions_cli.command("export")
def definitions_export(file: DefinitionsFile, url: Url = DEFAULT_URL, vhost: Vhost = None) -> None:
    """Write the broker's definitions (users, vhosts, permissions, policies, queues, exchanges,
    bindings) as RabbitMQ writes them; with --vhost, only that vhost's."""

    def body() -> None:
        path = "/api/definitions" + ("" if vhost is None else f"/{segment(vhost)}")
        text = json.dumps(Client(url).get(path), indent=2, ensure_ascii=False) + "\n"
        if str(file) == "-":
            sys.stdout.write(text)
        else:
            file.write_text(text)

    _run(body)


@definitions_cli.command("import")
def definitions_import(file: DefinitionsFile, url: Url = DEFAULT_URL, vhost: Vhost = None) -> None:
    """Apply a definitions file (exported from rabbitish or RabbitMQ) to the broker."""

    def body() -> None:
        try:
            text = sys.stdin.read() if str(file) == "-" else file.read_text()
            data = json.loads(text)
        except (OSError, ValueError) as err:
            raise CliError(f"cannot read definitions from {file}: {err}") from None
        path = "/api/definitions" + ("" if vhost is None else f"/{segment(vhost)}")
        Client(url).request("POST", path, data)
        _console().print(f"imported definitions from {file}")

    _run(body)


# ---------------------------------------------------------------------- wait-ready
def _api_ready(url: str) -> bool:
    try:
        Client(url, timeout=2).get("/api/overview")
        return True
    except ApiFailure:
        raise
    except CliError:
        return False


def wait_ready(
    url: Url = DEFAULT_URL,
    amqp_port: Annotated[int, typer.Option("--amqp-port", help="AMQP port to check.")] = 5672,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before giving up.")] = 60.0,
) -> None:
    """Wait until the broker accepts AMQP connections and its management API.

    Like `rabbitmqctl await_startup`, for scripts and CI: exit 0 once both answer, 3 when the
    timeout passes first, 4 when the API refuses the login."""

    def body() -> None:
        base = Client(url).base
        host = base.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
        deadline = time.monotonic() + timeout
        while True:
            if _api_ready(url) and amqp_answers(host, amqp_port):
                _console().print(f"ready: AMQP on {host}:{amqp_port}, management API at {base}")
                return
            if time.monotonic() >= deadline:
                raise CliError(f"broker not ready after {timeout:g} s", UNREACHABLE)
            time.sleep(0.1)

    _run(body)
