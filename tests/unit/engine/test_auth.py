"""The user model: RabbitMQ's password hash format, permission regex semantics, the loopback
rule and the change feed the store persists."""

from __future__ import annotations

import base64
import hashlib

import pytest

from rabbitish.engine.auth import (
    MD5,
    SHA512,
    AccessChange,
    Peer,
    Permission,
    UserDatabase,
    check_password,
    hash_password,
    may_log_in_from,
    parse_tags,
)
from rabbitish.engine.errors import AMQPError

# Made by RabbitMQ 3.10.8 (PUT /api/users/u {"password": "pw"}, then GET /api/users/u).
RABBITMQ_HASH_OF_PW = "SZFSARJ/26sfHEvUirs7LC2MRtF0uuSzhLzRtHx7lvRhtMdF"


def test_a_hash_made_by_rabbitmq_checks() -> None:
    assert check_password("pw", RABBITMQ_HASH_OF_PW)
    assert not check_password("pW", RABBITMQ_HASH_OF_PW)


def test_hash_layout_is_salt_then_sha256_of_salt_and_password() -> None:
    salt = b"\x01\x02\x03\x04"
    raw = base64.b64decode(hash_password("päss", salt=salt))
    assert raw == salt + hashlib.sha256(salt + "päss".encode()).digest()


@pytest.mark.parametrize("algorithm", [SHA512, MD5])
def test_other_rabbitmq_algorithms(algorithm: str) -> None:
    assert check_password("x", hash_password("x", algorithm), algorithm)


@pytest.mark.parametrize("stored", ["", "not base64!", "AAAA"])
def test_empty_or_broken_hashes_match_nothing(stored: str) -> None:
    assert not check_password("", stored)


def test_patterns_search_unanchored_and_empty_means_only_empty() -> None:
    permission = Permission(configure="", write="w", read="^r$")
    assert permission.allows("write", "new")  # re:run finds "w" anywhere
    assert not permission.allows("read", "rr")
    assert not permission.allows("configure", "x")
    assert permission.allows("configure", "")


def test_default_exchange_is_checked_and_named_as_amq_default() -> None:
    users = UserDatabase.with_defaults({"u": "p"}, ["/"])
    users.set_permissions("u", "/", Permission(".*", "^amq\\.default$", ".*"))
    users.authorize("u", "/", "write", "exchange", "")
    users.set_permissions("u", "/", Permission(".*", "^x$", ".*"))
    with pytest.raises(AMQPError) as refused:
        users.authorize("u", "/", "write", "exchange", "")
    assert refused.value.reply_text == (
        "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'u'"
    )


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("192.0.2.7", False),
        ("fe80::1%eth0", False),
        ("", True),
    ],
)
def test_loopback_rule(address: str, local: bool) -> None:
    assert may_log_in_from("guest", Peer(address), ("guest",)) is local
    assert may_log_in_from("other", Peer(address), ("guest",))


def test_every_change_reaches_the_feed() -> None:
    changes: list[AccessChange] = []
    users = UserDatabase(on_change=changes.append)
    users.add_user("a", "pw", tags=parse_tags("management, monitoring"))
    users.set_permissions("a", "/", Permission())
    users.set_tags("a", ())
    users.clear_permissions("a", "/")
    users.delete_user("a")
    assert [(c.kind, c.key, c.value is None) for c in changes] == [
        ("user", ("a",), False),
        ("permission", ("a", "/"), False),
        ("user", ("a",), False),
        ("permission", ("a", "/"), True),
        ("user", ("a",), True),
    ]
