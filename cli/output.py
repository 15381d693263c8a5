"""What every client command shares: the common options (--url, --vhost, --json), the console
tables print to, JSON output, and how a CliError ends a command."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rabbitish.cli.client import CliError
from rich.console import Console

T = TypeVar("T")

Url = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="RABBITISH_URL",
        help="Management API of the broker (user:password in the URL).",
    ),
]
Vhost = Annotated[str | None, typer.Option("--vhost", "-V", help="Only this virtual host.")]
VhostOne = Annotated[str, typer.Option("--vhost", "-V", help="Virtual host.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

PIPE_WIDTH = 200  # tables written to a pipe or file are not wrapped at 80 columns


def console() -> Console:
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(highlight=False, soft_wrap=False, width=width)


def run(fn: Callable[[], T]) -> T:
    """Run a command body; CliError becomes one line on stderr and its exit code."""
    try:
        return fn()
    except CliError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(err.code) from None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
