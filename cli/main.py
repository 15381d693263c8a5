"""The `rabbitish` command line."""

from __future__ import annotations

import typer

from rabbitish.config import Config

app = typer.Typer(
    help="rabbitish: a RabbitMQ-compatible AMQP broker.", no_args_is_help=True, add_completion=False
)


@app.callback()
def main() -> None:
    """rabbitish: a RabbitMQ-compatible AMQP broker."""


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(5672, help="AMQP port (0 picks a free one)."),
    data_dir: str = typer.Option("./data", help="Data directory, or :memory: for no files."),
    fsync: str = typer.Option("always", help="always | never"),
) -> None:
    """Run the broker in the foreground; Ctrl-C stops it cleanly."""
    from rabbitish.cli.serve import run

    raise typer.Exit(run(Config(host=host, port=port, data_dir=data_dir, fsync=fsync)))
