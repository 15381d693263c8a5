"""`rabbitish tx`: the open transactions of both protocols and the half transactions awaiting a
decision, and `tx commit` / `tx rollback` to decide one. commands.py adds it to the main
command line with `register`."""

from __future__ import annotations

from typing import Annotated

import typer
from rabbitish.cli import render
from rabbitish.cli.client import DEFAULT_URL, Client, segment
from rabbitish.cli.output import AsJson, Url, VhostOne
from rabbitish.cli.output import console as _console
from rabbitish.cli.output import print_json as _print_json
from rabbitish.cli.output import run as _run

from rabbitish.wire_names import HALF_HEADER

tx_cli = typer.Typer(add_completion=False)
TxnId = Annotated[str, typer.Argument(help=f"Half transaction ID (the {HALF_HEADER} header).")]


def register(cli: typer.Typer) -> None:
    """Add `tx` (and its `commit` and `rollback`) to the main command line."""
    cli.add_typer(tx_cli, name="tx")


@tx_cli.callback(invoke_without_command=True)
def tx(ctx: typer.Context, url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """Open transactions, and half transactions awaiting a decision.

    Open transactions of both protocols: id, state, channel or session, age, staged work. Half
    transactions: id, vhost, messages, queues, age, checks sent; prepared ones (the list a
    transaction manager recovers after a crash) also their acks: deliveries they lock.
    `tx commit ID` and `tx rollback ID` decide a half or prepared transaction."""
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
            summary = f"{len(half)} half transaction(s), {held} held message(s)"
            prepared = [t for t in half if t.get("prepared")]
            if prepared:
                acks = sum(t.get("acks", 0) for t in prepared)
                summary += f"; {len(prepared)} prepared, {acks} locked ack(s)"
            console.print(summary)
        else:
            console.print("no half transactions")

    _run(body)


def _decide(url: str, vhost: str, txn_id: str, decision: str, as_json: bool) -> None:
    def body() -> None:
        path = f"/api/half-transactions/{segment(vhost)}/{segment(txn_id)}/{decision}"
        missing = f"half transaction '{txn_id}' in vhost '{vhost}'"
        answer = Client(url).request("POST", path, missing=missing)
        if as_json:
            _print_json(answer)
            return
        done = "committed" if decision == "commit" else "rolled back"
        count = answer.get("messages", 0)
        effect = "made visible" if decision == "commit" else "discarded"
        queues = ", ".join(answer.get("queues") or [])
        where = f" on {queues}" if queues and decision == "commit" else ""
        acks = ""
        if "acks" in answer:  # a prepared transaction: its settlements were applied too
            settled = "applied" if decision == "commit" else "put back, redelivered"
            acks = f"; {answer['acks']} ack(s) {settled}"
        _console().print(
            f"{done} half transaction '{txn_id}' in vhost '{vhost}': "
            f"{count} message(s) {effect}{where}{acks}"
        )

    _run(body)


@tx_cli.command("commit")
def tx_commit(
    txn_id: TxnId, url: Url = DEFAULT_URL, vhost: VhostOne = "/", as_json: AsJson = False
) -> None:
    """Commit a half transaction: its held messages become visible at once.

    Every held message of ID joins its queue's tail in one step (and a prepared transaction's
    acks, nacks and rejects take effect); exits 1 for an ID the broker does not hold."""
    _decide(url, vhost, txn_id, "commit", as_json)


@tx_cli.command("rollback")
def tx_rollback(
    txn_id: TxnId, url: Url = DEFAULT_URL, vhost: VhostOne = "/", as_json: AsJson = False
) -> None:
    """Roll back a half transaction: its held messages are discarded.

    A prepared transaction's acked messages go back to their queues, redelivered. Exits 1 for
    an ID the broker does not hold."""
    _decide(url, vhost, txn_id, "rollback", as_json)
