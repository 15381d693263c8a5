"""The `rabbitish` command line (the `rabbitish` script and `python -m rabbitish`).

`serve` takes a fast path that parses its few options with argparse and never imports the
full command line: typer and what it pulls in cost more than the broker itself to import, and a
broker should accept connections a moment after it is started. `ctl` and `diagnostics`
(rabbitmqctl's and rabbitmq-diagnostics' verbs) take theirs too: scripts call them in loops."""

from __future__ import annotations

import sys
from typing import Any

_HELP = frozenset({"--help", "-h"})


def app(args: list[str] | None = None, prog_name: str = "rabbitish") -> Any:
    """Entry point: run the command named by `args` (default: sys.argv[1:])."""
    argv = sys.argv[1:] if args is None else list(args)
    if argv[:1] == ["serve"] and not _HELP.intersection(argv):
        from rabbitish.cli.serve import main

        return main(argv[1:], prog=f"{prog_name} serve")
    if argv[:1] == ["ctl"]:
        from rabbitish.cli.ctl.main import rabbitmqctl

        return rabbitmqctl(argv[1:])
    if argv[:1] == ["diagnostics"]:
        from rabbitish.cli.ctl.main import diagnostics

        return diagnostics(argv[1:])
    from rabbitish.cli.commands import cli

    return cli(args=argv, prog_name=prog_name)
