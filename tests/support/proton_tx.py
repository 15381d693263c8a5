"""What qpid-proton's transaction controller reports, recorded for the 1.0 transaction tests."""

from __future__ import annotations

from proton.handlers import TransactionHandler


class Controller(TransactionHandler):
    """Records what proton's transaction controller reports."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def on_transaction_declared(self, event) -> None:
        self.events.append("declared")

    def on_transaction_declare_failed(self, event) -> None:
        self.events.append("declare failed")

    def on_transaction_committed(self, event) -> None:
        self.events.append("committed")

    def on_transaction_commit_failed(self, event) -> None:
        self.events.append("commit failed")

    def on_transaction_aborted(self, event) -> None:
        self.events.append("aborted")
