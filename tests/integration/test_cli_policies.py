"""`rabbitish policies list|set|clear` against a running rabbitish: a policy set from the shell
acts on a queue at once; refusals and unknown names give one line and exit 1."""

from __future__ import annotations

import json

import pika
from rabbitish.cli.commands import cli
from typer.testing import CliRunner


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_policies_set_list_clear(rabbitish_management_url, broker_url, uid):
    url = ("--url", rabbitish_management_url)
    definition = json.dumps({"max-length": 1})
    done = run("policies", "set", uid, f"^{uid}$", definition, "--apply-to", "queues", *url)
    assert (done.exit_code, done.stdout) == (0, f"set policy '{uid}' in vhost '/'\n")
    with pika.BlockingConnection(pika.URLParameters(broker_url)) as conn:
        ch = conn.channel()
        ch.queue_declare(uid)
        for body in (b"1", b"2"):
            ch.basic_publish("", uid, body)
        assert ch.queue_declare(uid, passive=True).method.message_count == 1
        ch.queue_delete(uid)
    listed = json.loads(run("policies", "list", "--json", *url).stdout)
    assert {
        "vhost": "/",
        "name": uid,
        "pattern": f"^{uid}$",
        "apply-to": "queues",
        "definition": {"max-length": 1},
        "priority": 0,
    } in listed
    assert uid in run("policies", "list", *url).stdout
    done = run("policies", "clear", uid, *url)
    assert (done.exit_code, done.stdout) == (0, f"cleared policy '{uid}' in vhost '/'\n")
    done = run("policies", "clear", uid, *url)
    assert (done.exit_code, done.stderr) == (1, f"error: no policy '{uid}' in vhost '/'\n")


def test_policies_refusals(rabbitish_management_url, uid):
    url = ("--url", rabbitish_management_url)
    done = run("policies", "set", uid, ".*", '{"foo": 1}', *url)
    assert done.exit_code == 1
    assert done.stderr.startswith("error: 400 bad_request: Validation failed")
    done = run("policies", "set", uid, ".*", "{not json", *url)
    assert (done.exit_code, done.stderr) == (1, "error: definition is not JSON: {not json\n")
    operator = run("policies", "set", uid, f"^{uid}", '{"message-ttl": 5}', "--operator", *url)
    assert operator.exit_code == 0
    assert [
        p["name"] for p in json.loads(run("policies", "list", "--operator", "--json", *url).stdout)
    ] == [uid]
    assert run("policies", "clear", uid, "--operator", *url).exit_code == 0
