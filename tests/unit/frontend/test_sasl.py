"""Who logs in, whatever the protocol: PLAIN's response, EXTERNAL, the configured user and the
loopback rule (rabbitish/frontend/sasl.py)."""

from __future__ import annotations

import pytest

from rabbitish.engine.auth import Peer, UserDatabase
from rabbitish.frontend.sasl import (
    EXTERNAL,
    PLAIN,
    Authenticator,
    Login,
    PlainResponse,
    Refusal,
    plain_response,
    with_external,
)

LOCAL = Peer("127.0.0.1")
REMOTE = Peer("192.0.2.7")
CERT_PEER = Peer("192.0.2.7", tls=True, cert_auth=True, cert_user="alice")


@pytest.fixture
def users() -> UserDatabase:
    db = UserDatabase()
    db.add_user("guest", "guest")
    db.add_user("alice", "secret")
    db.add_user("cert-only")  # no password: only a certificate logs it in
    return db


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        (b"\0guest\0guest", PlainResponse(b"", "guest", "guest")),
        (b"admin\0guest\0pw", PlainResponse(b"admin", "guest", "pw")),
        (b"\xff\0guest\0pw", PlainResponse(b"\xff", "guest", "pw")),  # authzid stays bytes
        (b"\0\0", PlainResponse(b"", "", "")),
        (b"\0guest", None),
        (b"\0a\0b\0c", None),
        (b"", None),
        (b"\0gu\xffest\0pw", None),
        (b"\0guest\0\xff", None),
    ],
)
def test_plain_response_has_three_parts_and_utf8_names(raw, parsed):
    assert plain_response(raw) == parsed


def test_external_is_offered_last_and_only_where_certificates_are_verified():
    assert with_external(("PLAIN",), LOCAL) == ("PLAIN",)
    assert with_external(("PLAIN",), Peer("10.0.0.1", tls=True)) == ("PLAIN",)
    assert with_external(("A", PLAIN), CERT_PEER) == ("A", PLAIN, EXTERNAL)


def test_a_password_logs_in_its_user(users):
    assert Authenticator(users, LOCAL).password("alice", "secret") == Login("alice")
    refused = Login(refusal=Refusal.BAD_CREDENTIALS)
    assert Authenticator(users, LOCAL).password("alice", "wrong") == refused
    assert Authenticator(users, LOCAL).password("nobody", "secret") == refused
    assert Authenticator(users, LOCAL).password("cert-only", "") == refused


def test_a_loopback_user_logs_in_only_from_a_loopback_address(users):
    loopback = ("guest",)
    assert Authenticator(users, LOCAL, loopback).password("guest", "guest") == Login("guest")
    assert Authenticator(users, Peer("::1"), loopback).password("guest", "guest").user == "guest"
    assert Authenticator(users, REMOTE, loopback).password("guest", "guest") == Login(
        refusal=Refusal.LOOPBACK_ONLY, refused_user="guest"
    )
    assert Authenticator(users, REMOTE, loopback).password("alice", "secret") == Login("alice")
    assert Authenticator(users, REMOTE).password("guest", "guest") == Login("guest")
    # wrong credentials are refused as such, before the loopback rule names the user
    assert Authenticator(users, REMOTE, loopback).password("guest", "x").refusal is (
        Refusal.BAD_CREDENTIALS
    )


@pytest.mark.parametrize(
    ("cert_user", "login"),
    [
        ("alice", Login("alice")),
        ("cert-only", Login("cert-only")),
        ("mallory", Login(refusal=Refusal.BAD_CREDENTIALS)),
        (None, Login(refusal=Refusal.BAD_CREDENTIALS)),
    ],
)
def test_external_logs_in_the_user_the_certificate_names(users, cert_user, login):
    peer = Peer("127.0.0.1", tls=True, cert_auth=True, cert_user=cert_user)
    assert Authenticator(users, peer).external() == login


def test_external_obeys_the_loopback_rule(users):
    peer = Peer("192.0.2.7", tls=True, cert_auth=True, cert_user="guest")
    assert Authenticator(users, peer, ("guest",)).external() == Login(
        refusal=Refusal.LOOPBACK_ONLY, refused_user="guest"
    )


def test_the_configured_user_logs_in_without_credentials(users):
    assert Authenticator(users, LOCAL, ("guest",)).configured("guest") == Login("guest")
    not_offered = Login(refusal=Refusal.NOT_OFFERED)
    assert Authenticator(users, LOCAL).configured(None) == not_offered
    assert Authenticator(users, LOCAL).configured("") == not_offered
    assert Authenticator(users, LOCAL).configured("nobody") == not_offered
    assert Authenticator(users, REMOTE, ("guest",)).configured("guest").refusal is (
        Refusal.LOOPBACK_ONLY
    )
