"""`rabbitish users`, `permissions` and `vhosts` against a running rabbitish: each verb's
message, its effect seen through the API and over AMQP, and the errors scripts see."""

from __future__ import annotations

import json
from typing import Any

import pika
import pika.exceptions
import pytest
from rabbitish.cli.commands import cli
from typer.testing import CliRunner


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def ok(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result.stdout


def listed(*args: str) -> Any:
    return json.loads(ok(*args, "--json"))


def _connect(broker_url: str, user: str, password: str, vhost: str) -> None:
    host = broker_url.split("@", 1)[1].split("/", 1)[0]
    url = f"amqp://{user}:{password}@{host}/{vhost.replace('/', '%2F')}"
    pika.BlockingConnection(pika.URLParameters(url)).close()


def test_users_permissions_and_vhosts_round_trip(rabbitish_management_url, broker_url, uid):
    url = ("--url", rabbitish_management_url)
    user, vhost = f"cli-{uid}", f"cli-v-{uid}"
    assert ok("vhosts", "add", vhost, "--description", "for the CLI", *url).strip() == (
        f'Adding vhost "{vhost}" ...'
    )
    assert {"name": vhost, "description": "for the CLI"}.items() <= next(
        v for v in listed("vhosts", "list", *url) if v["name"] == vhost
    ).items()
    assert ok("users", "add", user, "pw1", "--tags", "monitoring", *url).strip() == (
        f'Adding user "{user}" ...'
    )
    assert run("users", "add", user, "pw1", *url).exit_code == 1
    out = ok("permissions", "set", user, "^c", ".*", ".*", "-p", vhost, *url)
    assert out.strip() == f'Setting permissions for user "{user}" in vhost "{vhost}" ...'
    assert listed("permissions", "list", "--user", user, *url) == [
        {"user": user, "vhost": vhost, "configure": "^c", "write": ".*", "read": ".*"}
    ]
    _connect(broker_url, user, "pw1", vhost)
    ok("users", "change-password", user, "pw2", *url)
    _connect(broker_url, user, "pw2", vhost)
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        _connect(broker_url, user, "pw1", vhost)
    out = ok("users", "set-tags", user, "management", "policymaker", *url)
    assert out.strip() == f'Setting tags for user "{user}" to [management, policymaker] ...'
    found = next(u for u in listed("users", "list", *url) if u["name"] == user)
    assert found["tags"] == ["management", "policymaker"]
    _connect(broker_url, user, "pw2", vhost)  # tags changed, password kept
    table = ok("users", "list", *url)
    assert any(user in line and "management, policymaker" in line for line in table.splitlines())
    ok("permissions", "clear", user, "-p", vhost, *url)
    assert listed("permissions", "list", "-p", vhost, *url) == []
    ok("users", "delete", user, *url)
    ok("vhosts", "delete", vhost, *url)
    assert vhost not in [v["name"] for v in listed("vhosts", "list", *url)]


def test_errors_are_one_line_with_exit_codes(rabbitish_management_url, uid):
    url = ("--url", rabbitish_management_url)
    missing = run("users", "delete", f"nobody-{uid}", *url)
    assert (missing.exit_code, missing.stderr) == (1, f"error: no user 'nobody-{uid}'\n")
    gone = run("vhosts", "delete", f"novhost-{uid}", *url)
    assert (gone.exit_code, gone.stderr) == (1, f"error: no vhost 'novhost-{uid}'\n")
    bad = run("permissions", "set", f"nobody-{uid}", ".*", ".*", ".*", *url)
    assert bad.exit_code == 1 and "vhost_or_user_not_found" in bad.stderr
    wrong = run("users", "list", "--url", rabbitish_management_url.replace("guest:guest", "x:y"))
    assert wrong.exit_code == 4
