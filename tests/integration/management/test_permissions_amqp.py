"""Permissions on AMQP 0-9-1 operations, the same scenario on rabbitish and on a real RabbitMQ:
a user made through the management API with configure '^pc-', write '^pw-', read '^pr-' on
'/' runs every kind of operation; each must succeed or fail with the same code and text on
both brokers (RabbitMQ's table of which permission each operation needs on which resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pika
import pika.exceptions
import pytest

from tests.support.management import Api, q

PASSWORD = "s3cret"
OK = "ok"


def _url(api: Api, user: str, password: str, vhost: str = "/") -> str:
    parts = urlsplit(api.amqp_url)
    netloc = f"{quote(user)}:{quote(password)}@{parts.hostname}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, "/" + quote(vhost, safe=""), "", ""))


@pytest.fixture
def limited(api: Api) -> tuple[Api, str]:
    """The limited user and the objects its operations meet (declared by guest); returns the
    user's name. Idempotent, so both parametrisations share the brokers."""
    user = "perm-user"
    api.ok("PUT", f"/api/users/{user}", {"password": PASSWORD, "tags": ""})
    api.ok(
        "PUT",
        f"/api/permissions/%2F/{user}",
        {"configure": "^pc-", "write": "^pw-", "read": "^pr-"},
    )
    api.ok("PUT", "/api/vhosts/perm-vhost", {})
    for queue in ("px", "pw-q"):
        api.ok("PUT", f"/api/queues/%2F/{q(queue)}", {"durable": False})
    for exchange in ("pr-x", "pw-x"):
        api.ok("PUT", f"/api/exchanges/%2F/{q(exchange)}", {"type": "direct"})
    return api, user


def _outcome(url: str, operation: Callable[[Any], Any]) -> str:
    """ "ok", or the code and text the broker closed the channel or connection with."""
    try:
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            channel = conn.channel()
            operation(channel)
            return OK
    except pika.exceptions.ChannelClosedByBroker as err:
        return f"{err.reply_code} {err.reply_text}"
    except pika.exceptions.ConnectionClosedByBroker as err:
        return f"{err.reply_code} {err.reply_text}"
    except pika.exceptions.ProbableAccessDeniedError as err:
        return f"{err.args[0]}"
    except pika.exceptions.ProbableAuthenticationError as err:
        return f"{err.args[0]}"


def _publish(exchange: str) -> Callable[[Any], Any]:
    def run(ch: Any) -> None:
        ch.basic_publish(exchange, "k", b"m")
        ch.queue_declare("px", passive=True)  # a round trip: the refusal arrives first

    return run


def refused(kind: str, name: str) -> str:
    return f"403 ACCESS_REFUSED - access to {kind} '{name}' in vhost '/' refused for user '{{}}'"


DEFAULT_DENIED = "403 ACCESS_REFUSED - operation not permitted on the default exchange"

CASES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "declare queue without configure": (lambda ch: ch.queue_declare("px"), refused("queue", "px")),
    "declare queue with configure": (lambda ch: ch.queue_declare("pc-q"), OK),
    "passive declare needs nothing": (lambda ch: ch.queue_declare("px", passive=True), OK),
    "reserved queue name first": (
        lambda ch: ch.queue_declare("amq.x"),
        "403 ACCESS_REFUSED - queue name 'amq.x' contains reserved prefix 'amq.*'",
    ),
    "declare exchange without configure": (
        lambda ch: ch.exchange_declare("px", "direct"),
        refused("exchange", "px"),
    ),
    "declare amq.direct": (
        lambda ch: ch.exchange_declare("amq.direct", "direct"),
        refused("exchange", "amq.direct"),
    ),
    "declare exchange with configure": (lambda ch: ch.exchange_declare("pc-x", "direct"), OK),
    "alternate exchange needs read on the exchange": (
        lambda ch: ch.exchange_declare("pc-ae", "direct", arguments={"alternate-exchange": "zz"}),
        refused("exchange", "pc-ae"),
    ),
    "dead-letter exchange needs read on the queue": (
        lambda ch: ch.queue_declare("pc-dlq", arguments={"x-dead-letter-exchange": "zz"}),
        refused("queue", "pc-dlq"),
    ),
    "delete exchange without configure": (
        lambda ch: ch.exchange_delete("pr-x"),
        refused("exchange", "pr-x"),
    ),
    "delete missing exchange with configure": (lambda ch: ch.exchange_delete("pc-none"), OK),
    "delete queue without configure": (lambda ch: ch.queue_delete("px"), refused("queue", "px")),
    "delete missing queue with configure": (lambda ch: ch.queue_delete("pc-none"), OK),
    "purge needs read": (lambda ch: ch.queue_purge("px"), refused("queue", "px")),
    "bind needs write on the queue": (
        lambda ch: ch.queue_bind("px", "amq.direct", "k"),
        refused("queue", "px"),
    ),
    "bind needs read on the exchange": (
        lambda ch: ch.queue_bind("pw-q", "amq.direct", "k"),
        refused("exchange", "amq.direct"),
    ),
    "bind with both": (lambda ch: ch.queue_bind("pw-q", "pr-x", "k"), OK),
    "bind to the default exchange": (lambda ch: ch.queue_bind("pw-q", "", "k"), DEFAULT_DENIED),
    "unbind needs write on the queue": (
        lambda ch: ch.queue_unbind("px", "amq.direct", "k"),
        refused("queue", "px"),
    ),
    "exchange bind needs read on the source": (
        lambda ch: ch.exchange_bind("pw-x", "amq.direct", "k"),
        refused("exchange", "amq.direct"),
    ),
    "publish to the default exchange": (_publish(""), refused("exchange", "amq.default")),
    "publish to amq.direct": (_publish("amq.direct"), refused("exchange", "amq.direct")),
    "publish to a missing exchange": (_publish("nosuch"), refused("exchange", "nosuch")),
    "publish with write": (_publish("pw-x"), OK),
    "consume needs read": (
        lambda ch: ch.basic_consume("px", lambda *a: None),
        refused("queue", "px"),
    ),
    "get needs read": (lambda ch: ch.basic_get("px"), refused("queue", "px")),
    "get with read, missing queue": (
        lambda ch: ch.basic_get("pr-none"),
        "404 NOT_FOUND - no queue 'pr-none' in vhost '/'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_operation_permissions(limited: tuple[Api, str], case: str) -> None:
    api, user = limited
    operation, expected = CASES[case]
    assert _outcome(_url(api, user, PASSWORD), operation) == expected.replace("{}", user)


def test_server_named_queue_is_checked_under_its_generated_name(limited: tuple[Api, str]) -> None:
    api, user = limited
    outcome = _outcome(_url(api, user, PASSWORD), lambda ch: ch.queue_declare(""))
    assert outcome.startswith("403 ACCESS_REFUSED - access to queue 'amq.gen-")
    assert outcome.endswith(f"' in vhost '/' refused for user '{user}'")


def test_vhost_without_permissions_is_refused_at_open(limited: tuple[Api, str]) -> None:
    api, user = limited
    outcome = _outcome(_url(api, user, PASSWORD, "perm-vhost"), lambda ch: None)
    assert f"(530) \"NOT_ALLOWED - access to vhost 'perm-vhost' refused for user '{user}'\"" in (
        outcome
    )


def test_wrong_password_is_refused_with_the_safe_text(limited: tuple[Api, str]) -> None:
    api, user = limited
    outcome = _outcome(_url(api, user, "wrong"), lambda ch: None)
    assert (
        "(403) 'ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
        "For details see the broker logfile.'" in outcome
    )


def test_a_user_without_a_password_cannot_log_in_with_one(api: Api) -> None:
    api.ok("PUT", "/api/users/perm-nopassword", {"tags": ""})
    api.ok(
        "PUT", "/api/permissions/%2F/perm-nopassword", {"configure": "", "write": "", "read": ""}
    )
    outcome = _outcome(_url(api, "perm-nopassword", ""), lambda ch: None)
    assert "(403) 'ACCESS_REFUSED - Login was refused" in outcome


def test_empty_pattern_allows_nothing_but_the_empty_name(api: Api) -> None:
    """'' is RabbitMQ's "^$": a user with only '' patterns may not even publish to the default
    exchange (checked as amq.default)."""
    api.ok("PUT", "/api/users/perm-empty", {"password": PASSWORD, "tags": ""})
    api.ok("PUT", "/api/permissions/%2F/perm-empty", {"configure": "", "write": "", "read": ""})
    outcome = _outcome(_url(api, "perm-empty", PASSWORD), _publish(""))
    assert outcome == refused("exchange", "amq.default").replace("{}", "perm-empty")
