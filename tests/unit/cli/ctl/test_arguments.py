"""rabbitmqctl's command line: general options before or after the verb, verb options, values."""

from __future__ import annotations

import pytest
from rabbitish.cli.ctl.arguments import UsageError, parse, verb_options


def test_options_anywhere():
    invocation = parse(
        ["-n", "rabbit@ci", "list_queues", "name", "-p", "v1", "-q", "--url=http://h"]
    )
    assert (invocation.verb, invocation.args) == ("list_queues", ["name"])
    assert invocation.values == {"node": "rabbit@ci", "vhost": "v1", "url": "http://h"}
    assert invocation.quiet and not invocation.silent
    assert invocation.formatter == "table"


def test_verb_options_and_unknown_ones():
    invocation = parse(["set_policy", "--priority", "2", "--apply-to", "queues", "p", "^q", "{}"])
    assert verb_options(invocation) == {"priority", "apply_to"}
    assert invocation.args == ["p", "^q", "{}"]
    assert parse(["list_users", "--bogus"]).unknown == ["--bogus"]
    assert parse(["set_permissions", "u", "-", ".*", ".*"]).args == ["u", "-", ".*", ".*"]


def test_an_option_without_its_value_is_a_usage_error():
    with pytest.raises(UsageError):
        parse(["list_queues", "-p"])
