"""The full command line (typer). `serve` is declared here for help and completeness; the fast
path in main.py parses the same options without importing this module."""

from __future__ import annotations

import typer
from rabbitish.cli.serve import DEFAULTS

from rabbitish.config import Config

cli = typer.Typer(
    help="rabbitish: a RabbitMQ-compatible AMQP broker.", no_args_is_help=True, add_completion=False
)


@cli.callback()
def main() -> None:
    """rabbitish: a RabbitMQ-compatible AMQP broker."""


@cli.command()
def serve(
    host: str = typer.Option(DEFAULTS.host, help="Address to listen on."),
    port: int = typer.Option(DEFAULTS.port, help="AMQP port (0 picks a free one)."),
    data_dir: str = typer.Option(DEFAULTS.data_dir, help="Data directory, or :memory: for none."),
    fsync: str = typer.Option(DEFAULTS.fsync, help="always | never"),
) -> None:
    """Run the broker in the foreground; Ctrl-C or SIGTERM stops it cleanly."""
    from rabbitish.cli.serve import run

    raise typer.Exit(run(Config(host=host, port=port, data_dir=data_dir, fsync=fsync)))
