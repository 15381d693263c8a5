"""Management names, counts and closes a connection from the front-end contract alone: a
stand-in that offers only `FrontEndConnection` is listed as a socket connection is."""

from __future__ import annotations

from dataclasses import dataclass, field

from rabbitish.config import Config
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.engine.sessions import ConnectionView, FrontEndConnection, SocketStats
from rabbitish.engine.vhost import VirtualHost
from rabbitish.management.clients import CLOSED_VIA_API, ClientsApi
from rabbitish.management.rates import Rates
from rabbitish.management.sessions import connection_json, endpoint_of


@dataclass(eq=False)
class StandIn:
    """Just the contract, nothing of either front end."""

    socket: SocketStats
    protocol: str = "AMQP 0-9-1"
    user: str | None = "guest"
    vhost: VirtualHost | None = None
    closed: list[tuple[int, str]] = field(default_factory=list)

    def view(self) -> ConnectionView:
        return ConnectionView(self.protocol, self.user, "/", "", 2047, 131072, 60)

    def server_close(self, reply_code: int, text: str) -> None:
        self.closed.append((reply_code, text))


def stand_in(**stats: object) -> FrontEndConnection:
    return StandIn(SocketStats(**stats))  # type: ignore[arg-type]


def test_a_connection_is_named_after_both_ends_of_its_socket():
    conn = stand_in(peer_host="10.0.0.7", peer_port=54321, host="10.0.0.1", port=5671)
    endpoint = endpoint_of(conn, amqp_port=5672)
    assert endpoint.name == "10.0.0.7:54321 -> 10.0.0.1:5671"
    assert (endpoint.peer_host, endpoint.peer_port, endpoint.host, endpoint.port) == (
        "10.0.0.7",
        54321,
        "10.0.0.1",
        5671,
    )


def test_a_socket_without_a_local_port_is_named_after_the_amqp_listener():
    endpoint = endpoint_of(stand_in(peer_host="127.0.0.1", peer_port=4000), amqp_port=5672)
    assert endpoint.name == "127.0.0.1:4000 -> 127.0.0.1:5672"


def test_the_socket_counters_are_reported_as_the_io_layer_keeps_them():
    conn = stand_in(
        peer_host="127.0.0.1",
        peer_port=4000,
        host="127.0.0.1",
        port=5672,
        connected_at=1700000000000,
        recv_oct=300,
        recv_cnt=3,
        send_oct=500,
        send_cnt=4,
    )
    doc = connection_json(conn.view(), endpoint_of(conn, 5672), Rates())
    assert {k: doc[k] for k in ("recv_oct", "recv_cnt", "send_oct", "send_cnt")} == {
        "recv_oct": 300,
        "recv_cnt": 3,
        "send_oct": 500,
        "send_cnt": 4,
    }
    assert doc["connected_at"] == 1700000000000
    assert (doc["protocol"], doc["user"], doc["vhost"]) == ("AMQP 0-9-1", "guest", "/")


def test_the_api_lists_and_closes_a_connection_through_the_contract():
    node = Node(ManualScheduler())
    conn = StandIn(SocketStats("127.0.0.1", 4000, "127.0.0.1", 5672), vhost=node.vhost("/"))
    node.connections.add(conn)
    api = ClientsApi(node, Config(data_dir=":memory:"), amqp_port=5672)
    guest = node.users.authenticate("guest", "guest")
    assert guest is not None
    [listed] = api.list_connections(guest)
    assert listed["name"] == "127.0.0.1:4000 -> 127.0.0.1:5672"
    api.close_connection(guest, listed["name"], None)
    assert conn.closed == [(320, CLOSED_VIA_API)]
