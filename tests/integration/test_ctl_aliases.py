"""The `rabbitmqctl` and `rabbitmq-diagnostics` commands of `rabbitish[ctl-aliases]` (installed by
tests/support/ctl_aliases.py) run against a broker, as do `rabbitish ctl` and
`python -m rabbitish diagnostics`."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.ctl_aliases import ALIASES, ROOT, install_aliases
from tests.support.ports import ReservedPort

RABBITISH = Path(sys.executable).parent / "rabbitish"


@pytest.fixture(scope="module")
def aliases(tmp_path_factory) -> Path:
    """The folder pip put the two commands in."""
    return install_aliases(tmp_path_factory.mktemp("aliases"))


def _run(command: list[str], url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RABBITISH_URL": url}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_the_extra_depends_on_the_aliases_distribution():
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    theirs = tomllib.loads((ALIASES / "pyproject.toml").read_text())["project"]
    assert ours["optional-dependencies"]["ctl-aliases"] == [
        f"{theirs['name']}=={theirs['version']}"
    ]
    assert theirs["version"] == ours["version"]
    assert theirs["scripts"] == {
        "rabbitmqctl": "rabbitish.cli.ctl.main:rabbitmqctl",
        "rabbitmq-diagnostics": "rabbitish.cli.ctl.main:diagnostics",
    }


def test_the_aliases_run(aliases, rabbitish_management_url):
    listed = _run([str(aliases / "rabbitmqctl"), "list_vhosts"], rabbitish_management_url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("Listing vhosts ...\nname\n")  # the session's broker:
    assert "/" in listed.stdout.splitlines()  # other tests may have left vhosts
    pinged = _run([str(aliases / "rabbitmq-diagnostics"), "-q", "ping"], rabbitish_management_url)
    assert (pinged.returncode, pinged.stdout) == (0, "Ping succeeded\n")
    unknown = _run([str(aliases / "rabbitmqctl"), "stop_app"], rabbitish_management_url)
    assert unknown.returncode == 64 and "Command 'stop_app' not found" in unknown.stderr


def test_a_node_that_is_down_exits_69(aliases):
    with ReservedPort() as nothing_listens:  # bound, not listening: connections are refused
        url = f"http://guest:guest@127.0.0.1:{nothing_listens.port}"
        down = _run([str(aliases / "rabbitmqctl"), "list_queues"], url)
        assert (down.returncode, down.stdout) == (69, "")  # no banner: the node was not reached
        assert down.stderr.startswith(
            "Error: unable to perform an operation on node 'rabbitish@localhost'."
        )
        pinged = _run([str(aliases / "rabbitmq-diagnostics"), "ping"], url)
        assert pinged.returncode == 69
        assert pinged.stdout.startswith("Will ping rabbitish@localhost. ")
        assert pinged.stderr == (
            "Error:\nFailed to connect and authenticate to rabbitish@localhost in 60000 ms\n"
        )


def test_rabbitish_ctl_and_diagnostics_run_as_commands(rabbitish_management_url):
    users = _run([str(RABBITISH), "ctl", "-s", "list_users"], rabbitish_management_url)
    assert users.returncode == 0, users.stderr
    assert "guest\t[administrator]" in users.stdout.splitlines()
    running = _run(
        [sys.executable, "-m", "rabbitish", "diagnostics", "check_running", "-n", "rabbit@ci"],
        rabbitish_management_url,
    )
    assert running.returncode == 0, running.stderr
    assert running.stdout == (
        "Checking if RabbitMQ is running on node rabbit@ci ...\n"
        "RabbitMQ on node rabbit@ci is fully booted and running\n"
    )
