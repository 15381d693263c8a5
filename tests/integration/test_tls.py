"""TLS with a throwaway CA made here. On rabbitish and on a real RabbitMQ (TLS listener with
verify_peer, rabbitmq_auth_mechanism_ssl): AMQP 0-9-1 over TLS, the mechanisms offered with and
without a client certificate, EXTERNAL logging in as the certificate's CN and refusing an
unknown CN or a missing certificate with the same 403. On rabbitish: AMQP 1.0 on the same TLS
port (PLAIN and EXTERNAL), --verify-peer, the management API over HTTPS, bad TLS options."""

from __future__ import annotations

import json
import re
import socket
import ssl
import struct
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import frame as pamqp_frame
from pika.credentials import ExternalCredentials

from rabbitish.app import Broker
from rabbitish.engine.auth import Permission
from rabbitish.testing import call_in_loop, running_broker
from tests.support.broker_process import SCRIPT, BrokerProcess
from tests.support.management import Api
from tests.support.ports import ReservedPort
from tests.support.real_rabbitmq import rabbitmq_available
from tests.support.tls import ThrowawayCA, make_ca, rabbitmq_with_tls

CERT_USER = "tls-user"
EXTERNAL_REFUSED = (
    "ACCESS_REFUSED - Login was refused using authentication mechanism EXTERNAL. "
    "For details see the broker logfile."
)


@dataclass
class TlsBroker:
    kind: str
    port: int  # plain AMQP
    tls_port: int
    api: Api


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayCA:
    return make_ca(tmp_path_factory.mktemp("tls") / "ca")


def _with_cert_user(broker: TlsBroker) -> TlsBroker:
    """The user client certificates name: no password, every permission on '/'."""
    broker.api.ok("PUT", f"/api/users/{CERT_USER}", {"tags": ""})
    everything = {"configure": ".*", "write": ".*", "read": ".*"}
    broker.api.ok("PUT", f"/api/permissions/%2F/{CERT_USER}", everything)
    return broker


@pytest.fixture(scope="module")
def rabbitish_tls(ca: ThrowawayCA) -> Iterator[Broker]:
    with running_broker(
        management=True,
        tls_port=0,
        certfile=ca.server.cert,
        keyfile=ca.server.key,
        cafile=ca.cafile,
        management_tls=True,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def rabbitish_side(rabbitish_tls: Broker, ca: ThrowawayCA) -> TlsBroker:
    assert rabbitish_tls.tls_port is not None
    base = f"https://localhost:{rabbitish_tls.management_port}"
    api = Api(rabbitish_tls.url, base, "rabbitish", ca.client_context())
    side = TlsBroker("rabbitish", rabbitish_tls.port or 0, rabbitish_tls.tls_port, api)
    return _with_cert_user(side)


@pytest.fixture(scope="module")
def rabbitmq_side(ca: ThrowawayCA) -> Iterator[TlsBroker]:
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    with ReservedPort() as tls_port, rabbitmq_with_tls(ca, tls_port.port) as node:
        api = Api(node.url, f"http://127.0.0.1:{node.management_port}", "rabbitmq")
        yield _with_cert_user(TlsBroker("rabbitmq", node.port, tls_port.port, api))


@pytest.fixture(params=["rabbitish", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def tls(request: pytest.FixtureRequest) -> TlsBroker:
    return request.getfixturevalue(f"{request.param}_side")


def _params(port: int, context: ssl.SSLContext, **kwargs) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(
        "localhost",
        port,
        ssl_options=pika.SSLOptions(context, "localhost"),
        connection_attempts=1,
        **kwargs,
    )


def _offered(port: int, context: ssl.SSLContext | None) -> set[str]:
    """The mechanisms of connection.start, read from a raw (TLS) socket."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname="localhost") if context else raw
    with sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        data = b""
        while len(data) < 7 or len(data) < 8 + struct.unpack(">I", data[3:7])[0]:
            chunk = sock.recv(65536)
            assert chunk, "closed before connection.start"
            data += chunk
        _size, _channel, start = pamqp_frame.unmarshal(data)
    return set(start.mechanisms.split())


def _external_error(port: int, context: ssl.SSLContext) -> str | None:
    try:
        pika.BlockingConnection(_params(port, context, credentials=ExternalCredentials())).close()
    except pika.exceptions.ProbableAuthenticationError as err:
        return str(err.args[0])
    return None


# ---------------------------------------------------------------------- both brokers
def test_amqp_091_over_tls(tls: TlsBroker, ca: ThrowawayCA, uid: str) -> None:
    credentials = pika.PlainCredentials("guest", "guest")
    with pika.BlockingConnection(
        _params(tls.tls_port, ca.client_context(), credentials=credentials)
    ) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, auto_delete=True)
        ch.basic_publish("", uid, b"over tls")
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"over tls"
        large = bytes(range(256)) * (3 * 4096 + 1)  # many frames, written unjoined
        ch.basic_publish("", uid, large)
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert body == large


def test_external_is_offered_on_tls_only(tls: TlsBroker, ca: ThrowawayCA) -> None:
    everything = {"PLAIN", "AMQPLAIN", "EXTERNAL"}
    assert _offered(tls.tls_port, ca.client_context()) == everything
    assert _offered(tls.tls_port, ca.client_context(ca.client(CERT_USER))) == everything
    if tls.kind == "rabbitish":  # RabbitMQ with the plugin offers EXTERNAL on plain TCP too
        assert _offered(tls.port, None) == {"PLAIN", "AMQPLAIN"}


def test_external_logs_in_as_the_certificate_cn(tls: TlsBroker, ca: ThrowawayCA) -> None:
    assert _external_error(tls.tls_port, ca.client_context(ca.client(CERT_USER))) is None


@pytest.mark.parametrize("client", ["unknown-cn", None], ids=["unknown CN", "no certificate"])
def test_external_refusals(tls: TlsBroker, ca: ThrowawayCA, client: str | None) -> None:
    context = ca.client_context(ca.client(client) if client else None)
    assert EXTERNAL_REFUSED in (_external_error(tls.tls_port, context) or "")


# ---------------------------------------------------------------------- rabbitish
def test_amqp_10_over_tls_on_the_same_port(
    rabbitish_side: TlsBroker, ca: ThrowawayCA, uid: str
) -> None:
    proton = pytest.importorskip("proton")
    from proton.utils import BlockingConnection

    if not proton.SSL.present():
        pytest.skip("qpid-proton was built without TLS")
    for user, mechanisms, client in (("guest:guest@", "PLAIN", None), ("", "EXTERNAL", CERT_USER)):
        domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
        domain.set_trusted_ca_db(ca.cafile)
        domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER_NAME)
        if client is not None:
            pair = ca.client(client)
            domain.set_credentials(pair.cert, pair.key, None)
        conn = BlockingConnection(
            f"amqps://{user}localhost:{rabbitish_side.tls_port}",
            ssl_domain=domain,
            allowed_mechs=mechanisms,
            timeout=10,
        )
        try:
            sender = conn.create_sender(f"/queue/{uid}")
            sender.send(proton.Message(body=f"hello {mechanisms}"))
            receiver = conn.create_receiver(f"/queue/{uid}")
            message = receiver.receive(timeout=10)
            receiver.accept()
            assert message.body == f"hello {mechanisms}"
        finally:
            conn.close()


def test_management_over_https(rabbitish_tls: Broker, ca: ThrowawayCA) -> None:
    def get(path: str) -> Any:
        request = urllib.request.Request(
            f"https://localhost:{rabbitish_tls.management_port}{path}",
            headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
        )
        with urllib.request.urlopen(request, context=ca.client_context(), timeout=10) as reply:
            return json.loads(reply.read())

    assert get("/api/whoami") == {"name": "guest", "tags": ["administrator"]}
    listeners = {(lis["protocol"], lis["port"]) for lis in get("/api/overview")["listeners"]}
    assert listeners == {
        ("amqp", rabbitish_tls.port),
        ("amqp/ssl", rabbitish_tls.tls_port),
        ("https", rabbitish_tls.management_port),
    }


def test_the_command_line_over_https(
    rabbitish_tls: Broker, ca: ThrowawayCA, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI trusts the CA named by SSL_CERT_FILE, as Python's ssl module does."""
    from rabbitish.cli.commands import cli
    from typer.testing import CliRunner

    monkeypatch.setenv("SSL_CERT_FILE", ca.cafile)
    url = f"https://guest:guest@localhost:{rabbitish_tls.management_port}"
    result = CliRunner().invoke(cli, ["users", "list", "--url", url, "--json"])
    assert result.exit_code == 0, result.output
    assert "guest" in [u["name"] for u in json.loads(result.stdout)]


def test_verify_peer_refuses_clients_without_a_certificate(ca: ThrowawayCA) -> None:
    with running_broker(
        tls_port=0,
        certfile=ca.server.cert,
        keyfile=ca.server.key,
        cafile=ca.cafile,
        verify_peer=True,
    ) as strict:
        assert strict.tls_port is not None
        creds = pika.PlainCredentials("guest", "guest")
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            pika.BlockingConnection(
                _params(strict.tls_port, ca.client_context(), credentials=creds)
            )
        context = ca.client_context(ca.client("anyone"))
        with pika.BlockingConnection(_params(strict.tls_port, context, credentials=creds)):
            pass


def test_without_a_ca_no_certificate_is_asked_for_and_external_is_not_offered(
    ca: ThrowawayCA,
) -> None:
    with running_broker(tls_port=0, certfile=ca.server.cert, keyfile=ca.server.key) as simple:
        assert simple.tls_port is not None
        assert _offered(simple.tls_port, ca.client_context()) == {"PLAIN", "AMQPLAIN"}


def test_external_with_distinguished_names(ca: ThrowawayCA) -> None:
    with running_broker(
        tls_port=0,
        certfile=ca.server.cert,
        keyfile=ca.server.key,
        cafile=ca.cafile,
        ssl_cert_login_from="distinguished_name",
    ) as by_dn:
        assert by_dn.tls_port is not None
        dn_user = "O=rabbitish tests,CN=dn-user"
        call_in_loop(by_dn, by_dn.node.users.add_user, dn_user)
        call_in_loop(by_dn, by_dn.node.users.set_permissions, dn_user, "/", Permission())
        assert _external_error(by_dn.tls_port, ca.client_context(ca.client("dn-user"))) is None
        call_in_loop(by_dn, by_dn.node.users.add_user, "cn-only")
        call_in_loop(by_dn, by_dn.node.users.set_permissions, "cn-only", "/", Permission())
        refused = _external_error(by_dn.tls_port, ca.client_context(ca.client("cn-only")))
        assert EXTERNAL_REFUSED in (refused or "")


def test_bad_tls_options_fail_the_start(tmp_path: Path, ca: ThrowawayCA) -> None:
    from rabbitish.tls import TlsConfigError

    def start(**options: object) -> None:
        with running_broker(tls_port=0, **options):
            pass

    with pytest.raises(TlsConfigError, match="--verify-peer needs --cafile"):
        start(certfile=ca.server.cert, keyfile=ca.server.key, verify_peer=True)
    with pytest.raises(TlsConfigError, match="cannot load"):
        start(certfile=str(tmp_path / "none.pem"), keyfile="x")


def test_rabbitish_serve_with_tls_options(ca: ThrowawayCA) -> None:
    """The command line: the ready line names the TLS port, which serves AMQP; a bad
    combination of options exits 2 with one line."""
    tls_options = ("--tls-port", "0", "--certfile", ca.server.cert, "--keyfile", ca.server.key)
    with BrokerProcess(*tls_options, "--cafile", ca.cafile) as broker:
        found = re.search(r"AMQP over TLS on .+:(\d+)", broker.output())
        assert found is not None, broker.output()
        tls_port = int(found[1])
        assert _offered(tls_port, ca.client_context()) == {"PLAIN", "AMQPLAIN", "EXTERNAL"}
    bad = subprocess.run(
        [*SCRIPT, "serve", "--port", "0", "--data-dir", ":memory:", *tls_options, "--verify-peer"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "cannot start: --verify-peer needs --cafile" in bad.stderr
