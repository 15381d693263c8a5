"""`rabbitish backup`: a consistent copy of a data dir, taken while the broker runs (or not).
The store is imported only when the command runs, so the rest of the command line starts as
fast as before."""

from __future__ import annotations

import sys
from typing import Annotated

import typer


def register(cli: typer.Typer) -> None:
    """Add `backup` to the main command line."""
    cli.command("backup")(backup)


def backup(
    dest: Annotated[str, typer.Argument(help="New (or empty) directory for the copy.")],
    data_dir: Annotated[
        str, typer.Option("--data-dir", help="Data directory of the broker to back up.")
    ] = "./data",
) -> None:
    """Copy the data dir's database to DEST while the broker serves: everything confirmed or
    committed before the backup began is in the copy. Restore: stop the broker, move DEST into
    place as its --data-dir, start it."""
    from rabbitish.store import StoreError
    from rabbitish.store.backup import backup as take_backup

    try:
        done = take_backup(data_dir, dest)
    except StoreError as err:
        sys.stderr.write(f"error: {err}\n")
        raise typer.Exit(2) from None
    restart = (
        "last stop clean"
        if done.clean_stop
        else "a broker started on it recovers as after an unclean stop (messages come back "
        "redelivered)"
    )
    sys.stdout.write(
        f"{done.source} -> {done.dest}: {done.bytes} bytes, schema {done.schema_version}, "
        f"{done.queues} queues, {done.messages} messages ({'live broker, ' if done.live else ''}"
        f"{done.seconds:.2f} s); {restart}\n"
    )
