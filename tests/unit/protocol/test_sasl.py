"""SASL as 0-9-1 speaks it in start-ok (rabbitish/protocol/sasl.py): what is offered, AMQPLAIN,
the strictness RabbitMQ parses with and its 403 text."""

from __future__ import annotations

import pytest

from rabbitish.engine.auth import Peer, UserDatabase
from rabbitish.frontend.sasl import Login, Refusal
from rabbitish.protocol import sasl
from rabbitish.protocol.field_tables import encode_table

CERT_PEER = Peer("127.0.0.1", tls=True, cert_auth=True, cert_user="alice")


@pytest.fixture
def users() -> UserDatabase:
    db = UserDatabase()
    db.add_user("guest", "guest")
    db.add_user("alice", "secret")
    return db


def _amqplain(**fields: object) -> bytes:
    return encode_table(fields)[4:]  # the field table without its length prefix


def test_offered_mechanisms():
    assert sasl.offered(Peer()) == ("PLAIN", "AMQPLAIN")
    assert sasl.offered(CERT_PEER) == ("PLAIN", "AMQPLAIN", "EXTERNAL")


@pytest.mark.parametrize(
    ("mechanism", "response", "user"),
    [
        ("PLAIN", b"\0alice\0secret", "alice"),
        ("PLAIN", "\0alice\0secret", "alice"),  # pamqp hands over a str
        ("AMQPLAIN", _amqplain(LOGIN="alice", PASSWORD="secret"), "alice"),
        ("PLAIN", b"\0alice\0wrong", None),
    ],
)
def test_login(users, mechanism, response, user):
    assert sasl.login(users, Peer(), mechanism, response).user == user


@pytest.mark.parametrize(
    ("mechanism", "response", "reason"),
    [
        ("PLAIN", b"alice\0alice\0secret", "malformed PLAIN response"),  # no authzid taken
        ("PLAIN", b"\0alice", "malformed PLAIN response"),
        ("AMQPLAIN", _amqplain(LOGIN="alice"), "malformed AMQPLAIN response"),
        ("AMQPLAIN", _amqplain(LOGIN="alice", PASSWORD=5), "malformed AMQPLAIN response"),
        ("AMQPLAIN", b"\x05LOGIN", "malformed AMQPLAIN response"),
        ("EXTERNAL", b"", "unknown authentication mechanism 'EXTERNAL'"),  # not offered
        ("CRAM-MD5", b"", "unknown authentication mechanism 'CRAM-MD5'"),
    ],
)
def test_malformed_responses_and_mechanisms_not_offered(users, mechanism, response, reason):
    with pytest.raises(sasl.MalformedResponse, match=f"^{reason}$"):
        sasl.login(users, Peer(), mechanism, response)


def test_external_and_the_loopback_rule(users):
    assert sasl.login(users, CERT_PEER, "EXTERNAL", b"").user == "alice"
    remote = Peer("192.0.2.7")
    refused = sasl.login(users, remote, "PLAIN", b"\0guest\0guest", ("guest",))
    assert refused == Login(refusal=Refusal.LOOPBACK_ONLY, refused_user="guest")


def test_the_403_text_is_rabbitmqs():
    assert sasl.refused_text("PLAIN") == (
        "Login was refused using authentication mechanism PLAIN. "
        "For details see the broker logfile."
    )
