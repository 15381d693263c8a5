"""The shell part of docs/getting-started.md's "Replace RabbitMQ in your CI" (its ```sh ci block),
run as written with bash: `rabbitish serve` in the background, `rabbitmqctl await_startup`, then
rabbitmqctl, rabbitmqadmin (RabbitMQ's own, when installed) and rabbitmq-diagnostics calls.

The block uses RabbitMQ's default ports; here the broker gets free ones instead, through a
`rabbitish` on PATH that adds `--port` and `--management-port` to `serve`, `RABBITISH_URL` for
the aliases and a ~/.rabbitmqadmin.conf for rabbitmqadmin. Nothing else changes. The block runs
in a process group of its own, which the test ends (the broker it started in it)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from tests.support.ctl_aliases import ROOT, install_aliases
from tests.support.ports import ReservedPort
from tests.support.waiting import wait_until

DOC = ROOT / "docs" / "getting-started.md"
RABBITMQADMIN = shutil.which("rabbitmqadmin")
BLOCK = re.compile(r"^```sh ci\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_doc_has_one_ci_block():
    assert len(BLOCK.findall(DOC.read_text())) == 1


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.skipif(RABBITMQADMIN is None, reason="rabbitmqadmin (rabbitmq-server) not installed")
def test_the_ci_recipe_runs_as_written(tmp_path):
    match = BLOCK.search(DOC.read_text())
    assert match is not None
    tools = install_aliases(tmp_path / "aliases")
    with ReservedPort() as amqp, ReservedPort() as http:
        rabbitish = tools / "rabbitish"
        rabbitish.write_text(
            "#!/bin/sh\n"
            'if [ "$1" = serve ]; then shift; set -- serve --port '
            f'{amqp.port} --management-port {http.port} --prometheus-port 0 "$@"; fi\n'
            f'exec {sys.executable} -m rabbitish "$@"\n'
        )
        rabbitish.chmod(0o755)
        home = tmp_path / "home"
        home.mkdir()
        (home / ".rabbitmqadmin.conf").write_text(
            f"[default]\nhostname = 127.0.0.1\nport = {http.port}\n"
        )
        env = {
            **os.environ,
            "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(home),
            "RABBITISH_URL": f"http://guest:guest@127.0.0.1:{http.port}",
        }
        script = "set -euo pipefail\n" + match["code"]
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=90)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            wait_until(lambda: _gone(process.pid), timeout=15, message="the broker did not stop")
    log = (tmp_path / "rabbitish.log").read_text() if (tmp_path / "rabbitish.log").exists() else ""
    assert process.returncode == 0, f"{output}\n--- rabbitish.log\n{log}"
    assert 'Adding vhost "ci" ...' in output
