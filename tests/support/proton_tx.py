"""qpid-proton as the 1.0 transaction tests drive it: a blocking connection that declares,
sends in and discharges transactions, and what proton's transaction controller reports."""

from __future__ import annotations

from proton import Delivery, Message
from proton.handlers import TransactionHandler
from proton.utils import BlockingConnection, BlockingSender

from tests.support.raw_amqp import host_port


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


class TxClient:
    """A blocking proton connection that also runs transactions, on the connection's control
    link or on one of its own sessions."""

    def __init__(self, url: str) -> None:
        host, port = host_port(url)
        self.conn = BlockingConnection(f"amqp://guest:guest@{host}:{port}", timeout=5)

    def declare(self, context=None):
        events = Controller()
        txn = self.conn.container.declare_transaction(context or self.conn.conn, handler=events)
        self.conn.wait(lambda: events.events, msg="declare")
        assert events.events == ["declared"]
        txn.events = events
        return txn

    def discharge(self, txn, commit: bool) -> str:
        txn.events.events.clear()
        txn.commit() if commit else txn.abort()
        self.conn.wait(lambda: txn.events.events, msg="discharge")
        return txn.events.events[0]

    def send(self, txn, sender, body: bytes) -> Delivery:
        delivery = txn.send(sender.link, Message(body=body, inferred=True))
        self.conn.wait(lambda: delivery.remote_state, msg="transactional send")
        return delivery

    def session(self):
        """A new session of this connection."""
        session = self.conn.conn.session()
        session.open()
        return session

    def sender_on(self, session, address: str) -> BlockingSender:
        return BlockingSender(self.conn, self.conn.container.create_sender(session, address))

    def close(self) -> None:
        self.conn.close()
