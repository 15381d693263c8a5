"""SASL as AMQP 1.0 speaks it (bridge/sasl.py): the mechanisms offered and the sasl-outcome code
each sasl-init earns."""

from __future__ import annotations

import pytest
from rabbitish.bridge import sasl

from rabbitish.engine.auth import Peer, UserDatabase

CERT_PEER = Peer("127.0.0.1", tls=True, cert_auth=True, cert_user="alice")
REMOTE = Peer("192.0.2.7")


@pytest.fixture
def users() -> UserDatabase:
    db = UserDatabase()
    db.add_user("guest", "guest")
    db.add_user("alice", "secret")
    return db


def test_mechanisms():
    assert sasl.mechanisms("guest") == ["ANONYMOUS", "PLAIN"]
    assert sasl.mechanisms(None) == ["PLAIN"]
    assert sasl.mechanisms(None, CERT_PEER) == ["PLAIN", "EXTERNAL"]


@pytest.mark.parametrize(
    ("mechanism", "response", "outcome"),
    [
        ("PLAIN", b"\0alice\0secret", sasl.Outcome(sasl.OK, "alice")),
        ("PLAIN", b"anyone\0alice\0secret", sasl.Outcome(sasl.OK, "alice")),  # authzid ignored
        ("PLAIN", b"\0alice\0wrong", sasl.Outcome(sasl.AUTH)),
        ("PLAIN", b"\0alice", sasl.Outcome(sasl.AUTH)),  # malformed: bad credentials
        ("PLAIN", None, sasl.Outcome(sasl.AUTH)),
        ("PLAIN", b"\0al\xffice\0secret", sasl.Outcome(sasl.AUTH)),
        ("ANONYMOUS", None, sasl.Outcome(sasl.OK, "guest")),
        ("EXTERNAL", b"", sasl.Outcome(sasl.SYS_PERM)),  # not offered without a certificate
        ("CRAM-MD5", b"", sasl.Outcome(sasl.SYS_PERM)),
    ],
)
def test_outcomes(users, mechanism, response, outcome):
    assert sasl.authenticate(users, "guest", mechanism, response) == outcome


def test_anonymous_needs_a_configured_user_that_exists(users):
    assert sasl.authenticate(users, None, "ANONYMOUS", None) == sasl.Outcome(sasl.SYS_PERM)
    assert sasl.authenticate(users, "nobody", "ANONYMOUS", None) == sasl.Outcome(sasl.SYS_PERM)


def test_external_names_the_certificates_user(users):
    assert sasl.authenticate(users, None, "EXTERNAL", b"", CERT_PEER) == sasl.Outcome(
        sasl.OK, "alice"
    )
    unknown = Peer("127.0.0.1", tls=True, cert_auth=True, cert_user="mallory")
    assert sasl.authenticate(users, None, "EXTERNAL", b"", unknown) == sasl.Outcome(sasl.AUTH)


@pytest.mark.parametrize(
    ("mechanism", "response"), [("PLAIN", b"\0guest\0guest"), ("ANONYMOUS", None)]
)
def test_a_loopback_user_from_elsewhere_is_refused_as_bad_credentials(users, mechanism, response):
    refused = sasl.authenticate(users, "guest", mechanism, response, REMOTE, ("guest",))
    assert refused == sasl.Outcome(sasl.AUTH)
    allowed = sasl.authenticate(users, "guest", mechanism, response, REMOTE, ())
    assert allowed == sasl.Outcome(sasl.OK, "guest")
