"""Dispatch and rabbitmqctl's usage errors (exit 64), and a start-up that loads neither typer nor
rich: scripts call these commands in loops."""

from __future__ import annotations

import subprocess
import sys

from rabbitish.cli.ctl.main import rabbitmqctl


def test_usage_errors_exit_64(capsys):
    assert rabbitmqctl(["nosuchverb"]) == 64
    assert "Command 'nosuchverb' not found." in capsys.readouterr().err
    assert rabbitmqctl(["set_permissions", "bob", ".*", ".*"]) == 64
    err = capsys.readouterr().err
    assert err.startswith("Error (argument validation): not enough arguments.\nArguments given:\n")
    assert rabbitmqctl(["list_queues", "nosuchcol", "other"]) == 64
    assert capsys.readouterr().err.startswith(
        "Error (argument validation): Info key(s) nosuchcol,other are not supported\n"
    )
    assert rabbitmqctl(["list_users", "--apply-to", "x"]) == 64
    assert "Invalid options for this command:\n--apply-to : " in capsys.readouterr().err


def test_the_fast_path_imports_neither_typer_nor_rich():
    code = (
        "import sys\n"
        "from rabbitish.cli.main import app\n"
        "app(['ctl', 'help', 'list_queues'])\n"
        "print(sorted(m for m in ('typer', 'rich', 'aiohttp') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
    assert "list_queues [--vhost <vhost>]" in done.stdout
