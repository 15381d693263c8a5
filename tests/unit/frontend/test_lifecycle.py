"""How every front end's connection enters a vhost and ends (rabbitish/frontend/lifecycle.py)."""

from __future__ import annotations

from rabbitish.config import Config
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.frontend.lifecycle import ClientConnection


class TwoSessions(ClientConnection):
    def __init__(self, node: Node) -> None:
        super().__init__(node, Config(data_dir=":memory:"), "peer:1", None)
        self.sessions = ["one", "two"]
        self.final_state = False

    def _release_sessions(self) -> int:
        released = len(self.sessions)
        self.sessions.clear()
        return released

    def _socket_gone(self) -> None:
        self.final_state = True


def test_entering_a_vhost_makes_it_one_of_the_nodes_connections():
    node = Node(ManualScheduler())
    conn = TwoSessions(node)
    conn.user = "guest"
    vhost = node.vhost("/")
    assert vhost is not None
    conn.enter_vhost(vhost)
    assert conn.vhost is vhost and conn in node.connections
    assert conn.authorize is not None
    conn.authorize("read", "queue", "q")  # guest may do anything in /
    assert node.churn["connection_created"] == 1


def test_a_lost_socket_releases_everything_once():
    node = Node(ManualScheduler())
    conn = TwoSessions(node)
    conn.user = "guest"
    conn.enter_vhost(node.vhost("/"))
    node.vhost("/").declare_queue("mine", owner=conn, exclusive=True)
    conn.write(b"never sent")
    conn.lost()
    assert conn.sessions == [] and conn.final_state
    assert conn not in node.connections
    assert "mine" not in node.vhost("/").queues
    assert node.churn["channel_closed"] == 2 and node.churn["connection_closed"] == 1
    assert conn.take_output() == b""
    conn.sessions.append("late")
    conn.lost()
    assert node.churn["channel_closed"] == 2 and conn.sessions == ["late"]


def test_drop_asks_the_io_layer_to_hang_up():
    conn = TwoSessions(Node(ManualScheduler()))
    conn.drop("because")
    assert conn.should_close and conn.close_reason == "because"
