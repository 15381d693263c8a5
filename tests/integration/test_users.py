"""Users beyond the handshake: guest only from loopback (RabbitMQ's loopback_users) unless
allowed, and users, permissions and vhosts kept in the data dir across restarts, with the
default user created on a fresh data dir only."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pika
import pika.exceptions
import pytest
from rabbitish.bridge.codec import AMQP_HEADER, SASL_HEADER

from rabbitish.engine.auth import Permission
from rabbitish.testing import call_in_loop, running_broker
from tests.support.amqp10 import Raw
from tests.support.management import Api
from tests.support.real_rabbitmq import RealRabbit, rabbitmq_available, real_rabbitmq

LOGIN_REFUSED = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
    "For details see the broker logfile."
)


def _outside_address() -> str:
    """An address of this host that is not loopback (the one outbound traffic would use)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
            address = probe.getsockname()[0]
    except OSError:
        address = ""
    if not address or address.startswith("127."):
        pytest.skip("this host has no non-loopback IPv4 address")
    return address


def _login_error(url: str) -> str | None:
    try:
        pika.BlockingConnection(pika.URLParameters(url)).close()
    except pika.exceptions.ProbableAuthenticationError as err:
        return str(err.args[0])
    return None


def test_guest_may_only_connect_from_loopback() -> None:
    address = _outside_address()
    with running_broker(management=True, host="0.0.0.0") as broker:
        call_in_loop(broker, broker.node.users.add_user, "remote", "pw")
        call_in_loop(broker, broker.node.users.set_permissions, "remote", "/", Permission())
        remote_guest = f"amqp://guest:guest@{address}:{broker.port}/%2F"
        assert LOGIN_REFUSED in (_login_error(remote_guest) or "")
        assert _login_error(f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F") is None
        assert _login_error(f"amqp://remote:pw@{address}:{broker.port}/%2F") is None
        api = Api("", f"http://{address}:{broker.management_port}", "rabbitish")
        reply = api.call("GET", "/api/whoami")
        assert (reply.status, reply.json) == (
            401,
            {"error": "not_authorised", "reason": "User can only log in via localhost"},
        )


def test_guest_over_amqp_10_only_from_loopback() -> None:
    """SASL PLAIN as guest from another host fails (sasl-outcome auth); so does a client that
    skips SASL and would be guest, the anonymous user."""
    address = _outside_address()
    with running_broker(host="0.0.0.0") as broker:
        remote = Raw(f"amqp://guest:guest@{address}:{broker.port}/%2F")
        try:
            assert int(remote.sasl_plain().code) == 1
        finally:
            remote.close()
        local = Raw(f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F")
        try:
            assert int(local.sasl_plain().code) == 0
        finally:
            local.close()
        anonymous = Raw(f"amqp://{address}:{broker.port}")
        try:
            anonymous.send(AMQP_HEADER)
            assert anonymous.header() == SASL_HEADER  # no anonymous login from there
            assert anonymous.closed()
        finally:
            anonymous.close()


class _AllInterfacesRabbit(RealRabbit):
    """RabbitMQ with its defaults for guest (loopback only), listening on every interface."""

    def _write_config(self) -> None:
        super()._write_config()
        conf = self.data_dir / "rabbitmq.conf"
        text = conf.read_text().replace("loopback_users = none\n", "")
        text = text.replace(f"127.0.0.1:{self.port}", str(self.port))
        conf.write_text(
            text.replace("management.tcp.ip = 127.0.0.1", "management.tcp.ip = 0.0.0.0")
        )


@pytest.mark.rabbitmq
def test_rabbitmq_refuses_remote_guest_the_same_way() -> None:
    address = _outside_address()
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with real_rabbitmq(enable_management=True, node_class=_AllInterfacesRabbit) as node:
        assert LOGIN_REFUSED in (
            _login_error(f"amqp://guest:guest@{address}:{node.port}/%2F") or ""
        )
        api = Api("", f"http://{address}:{node.management_port}", "rabbitmq")
        reply = api.call("GET", "/api/whoami")
        assert (reply.status, reply.json) == (
            401,
            {"error": "not_authorised", "reason": "User can only log in via localhost"},
        )


def test_allow_remote_guest() -> None:
    address = _outside_address()
    with running_broker(host="0.0.0.0", loopback_users=()) as broker:
        assert _login_error(f"amqp://guest:guest@{address}:{broker.port}/%2F") is None


def test_users_permissions_and_vhosts_survive_a_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with running_broker(management=True, data_dir=data) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        api.ok("PUT", "/api/vhosts/kept", {"description": "kept vhost", "tags": "t"})
        api.ok("PUT", "/api/users/alice", {"password": "pw", "tags": "management"})
        api.ok("PUT", "/api/permissions/kept/alice", {"configure": "^a", "write": "", "read": ".*"})
        api.ok("PUT", "/api/users/admin", {"password": "pw", "tags": "administrator"})
        api.ok("PUT", "/api/permissions/%2F/admin", {"configure": "", "write": "", "read": ""})
        users_before = api.ok("GET", "/api/users")
        permissions_before = api.ok("GET", "/api/permissions")
        api.ok("DELETE", "/api/users/guest")
    with running_broker(management=True, data_dir=data, users={"admin": "pw"}) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        admin = ("admin", "pw")
        users = api.call("GET", "/api/users", auth=admin).json
        assert users == [u for u in users_before if u["name"] != "guest"]
        assert api.call("GET", "/api/permissions", auth=admin).json == [
            p for p in permissions_before if p["user"] != "guest"
        ]
        vhost = api.call("GET", "/api/vhosts/kept", auth=admin).json
        assert (vhost["description"], vhost["tags"]) == ("kept vhost", ["t"])
        assert api.call("GET", "/api/whoami", auth=("guest", "guest")).status == 401
        pika.BlockingConnection(
            pika.URLParameters(f"amqp://alice:pw@127.0.0.1:{broker.port}/kept")
        ).close()


def test_a_fresh_data_dir_gets_the_default_user(tmp_path: Path) -> None:
    with running_broker(data_dir=str(tmp_path / "fresh")) as broker:
        users = broker.node.users
        assert list(users.users) == ["guest"]
        assert users.users["guest"].tags == ("administrator",)
        assert users.permission("guest", "/") == Permission(".*", ".*", ".*")
        pika.BlockingConnection(pika.URLParameters(broker.url)).close()


def test_a_data_dir_from_before_stored_users_keeps_its_vhosts_open(tmp_path: Path) -> None:
    """A data dir whose access tables were never written (made before users were stored): its
    vhosts come back and the default users get every permission in them, as before."""
    data = tmp_path / "old"
    with running_broker(management=True, data_dir=str(data)) as broker:
        api = Api(broker.url, f"http://127.0.0.1:{broker.management_port}", "rabbitish")
        api.ok("PUT", "/api/vhosts/legacy", {})
        api.ok(
            "PUT", "/api/permissions/legacy/guest", {"configure": ".*", "write": ".*", "read": ".*"}
        )
        api.ok("PUT", "/api/queues/legacy/kept", {"durable": True})
    db = sqlite3.connect(data / "rabbitish.db")
    with db:
        db.execute("DELETE FROM meta WHERE key = 'access_seeded'")
        for table in ("users", "permissions", "vhosts"):
            db.execute(f"DELETE FROM {table}")
    db.close()
    with running_broker(data_dir=str(data)) as broker:
        assert set(broker.node.vhosts) == {"/", "legacy"}
        assert broker.node.users.permission("guest", "legacy") == Permission()
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/legacy"
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            conn.channel().queue_declare("kept", passive=True, durable=True)
