"""TLS with a throwaway CA made here: AMQP 0-9-1 (pika) and 1.0 (qpid-proton) on one TLS port,
the EXTERNAL mechanism for client certificates (user from the CN, offered only to a client
that presented one), --verify-peer, and the management API over HTTPS."""

from __future__ import annotations

import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions
import pytest
from pika.credentials import ExternalCredentials

from rabbitish.app import Broker
from rabbitish.engine.auth import Permission
from rabbitish.testing import call_in_loop, running_broker
from tests.support.tls import ThrowawayCA, make_ca

CERT_USER = "tls-user"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayCA:
    return make_ca(tmp_path_factory.mktemp("tls") / "ca")


@pytest.fixture(scope="module")
def broker(ca: ThrowawayCA) -> Iterator[Broker]:
    with running_broker(
        management=True,
        tls_port=0,
        certfile=ca.server.cert,
        keyfile=ca.server.key,
        cafile=ca.cafile,
        management_tls=True,
    ) as running:
        call_in_loop(running, running.node.users.add_user, CERT_USER, None)
        call_in_loop(running, running.node.users.set_permissions, CERT_USER, "/", Permission())
        yield running


def _params(broker: Broker, context: ssl.SSLContext, **kwargs) -> pika.ConnectionParameters:
    return pika.ConnectionParameters(
        "localhost",
        broker.tls_port,
        ssl_options=pika.SSLOptions(context, "localhost"),
        connection_attempts=1,
        **kwargs,
    )


def test_amqp_091_over_tls(broker: Broker, ca: ThrowawayCA, uid: str) -> None:
    params = _params(
        broker, ca.client_context(), credentials=pika.PlainCredentials("guest", "guest")
    )
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.queue_declare(uid, auto_delete=True)
        ch.basic_publish("", uid, b"over tls")
        _method, _props, body = ch.basic_get(uid, auto_ack=True)
        assert body == b"over tls"
        assert conn._impl.server_properties["capabilities"]["authentication_failure_close"]


def test_external_logs_in_as_the_certificate_cn(broker: Broker, ca: ThrowawayCA) -> None:
    context = ca.client_context(ca.client(CERT_USER))
    with pika.BlockingConnection(_params(broker, context, credentials=ExternalCredentials())):
        pass
    users = {c.view().user for c in call_in_loop(broker, lambda: list(broker.node.connections))}
    assert CERT_USER not in users  # closed again
    conn = pika.BlockingConnection(_params(broker, context, credentials=ExternalCredentials()))
    try:
        views = call_in_loop(broker, lambda: [c.view() for c in broker.node.connections])
        assert CERT_USER in {v.user for v in views}
    finally:
        conn.close()


def test_external_refuses_a_certificate_of_an_unknown_user(broker: Broker, ca: ThrowawayCA) -> None:
    context = ca.client_context(ca.client("nobody-here"))
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as refused:
        pika.BlockingConnection(_params(broker, context, credentials=ExternalCredentials()))
    assert "Login was refused using authentication mechanism EXTERNAL" in str(refused.value)


def test_external_is_offered_only_with_a_client_certificate(
    broker: Broker, ca: ThrowawayCA
) -> None:
    with pytest.raises(pika.exceptions.AuthenticationError):
        pika.BlockingConnection(
            _params(broker, ca.client_context(), credentials=ExternalCredentials())
        )
    plain = pika.ConnectionParameters(
        "127.0.0.1", broker.port, credentials=ExternalCredentials(), connection_attempts=1
    )
    with pytest.raises(pika.exceptions.AuthenticationError):
        pika.BlockingConnection(plain)


def test_amqp_10_over_tls_on_the_same_port(broker: Broker, ca: ThrowawayCA, uid: str) -> None:
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
            f"amqps://{user}localhost:{broker.tls_port}",
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


def test_management_over_https(broker: Broker, ca: ThrowawayCA) -> None:
    request = urllib.request.Request(
        f"https://localhost:{broker.management_port}/api/whoami",
        headers={"Authorization": "Basic Z3Vlc3Q6Z3Vlc3Q="},
    )
    with urllib.request.urlopen(request, context=ca.client_context(), timeout=10) as reply:
        assert json.loads(reply.read()) == {"name": "guest", "tags": ["administrator"]}


def test_verify_peer_refuses_clients_without_a_certificate(ca: ThrowawayCA) -> None:
    with running_broker(
        tls_port=0,
        certfile=ca.server.cert,
        keyfile=ca.server.key,
        cafile=ca.cafile,
        verify_peer=True,
    ) as strict:
        creds = pika.PlainCredentials("guest", "guest")
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            pika.BlockingConnection(_params(strict, ca.client_context(), credentials=creds))
        context = ca.client_context(ca.client("anyone"))
        with pika.BlockingConnection(_params(strict, context, credentials=creds)):
            pass


def test_bad_tls_options_fail_the_start(tmp_path: Path, ca: ThrowawayCA) -> None:
    from rabbitish.tls import TlsConfigError

    def start(**options: object) -> None:
        with running_broker(tls_port=0, **options):
            pass

    with pytest.raises(TlsConfigError, match="--verify-peer needs --cafile"):
        start(certfile=ca.server.cert, keyfile=ca.server.key, verify_peer=True)
    with pytest.raises(TlsConfigError, match="cannot load"):
        start(certfile=str(tmp_path / "none.pem"), keyfile="x")
