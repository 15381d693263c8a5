"""The one table of `serve` options (cli/serve_options.py) and the two command lines built from
it: argparse on the fast path (cli/serve.py, what `rabbitish serve` runs) and typer (what
`rabbitish serve --help` and docs/cli.md show). Both must take the same options, accept the same
values and start the broker with the same Config."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest
import typer.main
from rabbitish.cli import serve
from rabbitish.cli.commands import cli
from rabbitish.cli.serve_options import SERVE_OPTIONS, config_from
from typer.testing import CliRunner

from rabbitish.config import FSYNC_MODES, SCHEDULER_BIND_TYPES, Config
from rabbitish.tls import LOGIN_FROM

CONFIG_FIELDS = {f.name for f in dataclasses.fields(Config)}

# A value other than the default for every option that takes one, and the Config it makes.
CHANGED = {
    "--host": "0.0.0.0",
    "--port": "5673",
    "--data-dir": "/tmp/somewhere",
    "--fsync": "never",
    "--management-port": "0",
    "--prometheus-port": "0",
    "--half-check-interval": "0.25",
    "--half-check-max": "3",
    "--definitions": "defs.json",
    "--tls-port": "5671",
    "--certfile": "cert.pem",
    "--keyfile": "key.pem",
    "--cafile": "ca.pem",
    "--ssl-cert-login-from": "distinguished_name",
    "--memory-high-watermark": "512MiB",
    "--memory-paging-ratio": "0.75",
    "--disk-free-limit": "1GiB",
    "--max-message-size": "1024",
    "--consumer-timeout": "0",
    "--transaction-timeout": "2.5",
    "--busy-wait-us": "300",
    "--scheduler-bind-type": "u",
}
FLAGS = ["--verify-peer", "--management-tls", "--allow-remote-guest"]
EXPECTED = Config(
    host="0.0.0.0",
    port=5673,
    data_dir="/tmp/somewhere",
    fsync="never",
    management_port=0,
    prometheus_port=0,
    half_check_interval=0.25,
    half_check_max=3,
    definitions="defs.json",
    tls_port=5671,
    certfile="cert.pem",
    keyfile="key.pem",
    cafile="ca.pem",
    verify_peer=True,
    management_tls=True,
    loopback_users=(),
    ssl_cert_login_from="distinguished_name",
    memory_high_watermark="512MiB",
    memory_paging_ratio=0.75,
    disk_free_limit="1GiB",
    max_message_size=1024,
    consumer_timeout=0,
    transaction_timeout=2.5,
    busy_wait_us=300,
    scheduler_bind_type="u",
)


def full_options() -> set[str]:
    command = typer.main.get_command(cli).commands["serve"]  # type: ignore[attr-defined]
    return {opt for param in command.params for opt in param.opts} - {"--help"}


def test_every_option_fills_a_config_field_and_defaults_to_its_value():
    defaults = Config()
    for option in SERVE_OPTIONS:
        assert option.flag == "--" + option.name.replace("_", "-")
        if option.field is None:  # --check: the command's, not a setting
            assert option.kind is bool
            continue
        assert option.field in CONFIG_FIELDS, option.name
        if option.kind is bool:
            assert option.default is False
        else:
            assert option.default == getattr(defaults, option.field), option.name
    names = [option.name for option in SERVE_OPTIONS]
    assert len(names) == len(set(names))
    # No option is missing from the table of changes below, so every one is tested end to end.
    assert {option.flag for option in SERVE_OPTIONS} == {*CHANGED, *FLAGS, "--check"}


def test_both_command_lines_take_the_table_s_options():
    actions = [
        action for action in serve.parser()._actions if "--help" not in action.option_strings
    ]
    fast = {opt for action in actions for opt in action.option_strings}
    assert fast == full_options() == {option.flag for option in SERVE_OPTIONS}


def test_both_command_lines_accept_the_same_choices(monkeypatch):
    """Moved from the test that held the two former declarations together: a choice's values are
    the one tuple in config.py / tls.py, accepted by both and by nothing else."""
    actions = [
        action for action in serve.parser()._actions if "--help" not in action.option_strings
    ]
    choices = {
        action.option_strings[0]: tuple(action.choices) for action in actions if action.choices
    }
    assert choices == {
        "--fsync": FSYNC_MODES,
        "--ssl-cert-login-from": LOGIN_FROM,
        "--scheduler-bind-type": SCHEDULER_BIND_TYPES,
    }
    started: list[tuple[str, str, str]] = []

    def run(config: Any) -> int:
        started.append((config.fsync, config.ssl_cert_login_from, config.scheduler_bind_type))
        return 0

    monkeypatch.setattr(serve, "run", run)
    for option, accepted in choices.items():
        for value in (*accepted, "sometimes", accepted[0].upper(), ""):
            try:
                serve.parser().parse_args([option, value])
                fast_accepts = True
            except SystemExit:
                fast_accepts = False
            result = CliRunner().invoke(cli, ["serve", option, value])
            assert result.exit_code in (0, 2), result.output
            assert (result.exit_code == 0) == fast_accepts == (value in accepted), (option, value)
    assert started == (
        [(mode, "common_name", "db") for mode in FSYNC_MODES]
        + [("always", name, "db") for name in LOGIN_FROM]
        + [("always", "common_name", bind) for bind in SCHEDULER_BIND_TYPES]
    )


@pytest.mark.parametrize("changed", [False, True])
def test_both_command_lines_start_the_same_config(monkeypatch, changed):
    argv = [*(item for pair in CHANGED.items() for item in pair), *FLAGS] if changed else []
    started: list[Config] = []
    monkeypatch.setattr(serve, "run", lambda config: started.append(config) or 0)
    assert serve.main(argv) == 0
    result = CliRunner().invoke(cli, ["serve", *argv])
    assert result.exit_code == 0, result.output
    fast, full = started
    assert fast == full == (EXPECTED if changed else Config())
    assert type(full.fsync) is str and type(full.ssl_cert_login_from) is str


def test_check_runs_instead_of_the_broker(monkeypatch):
    checked: list[str] = []
    monkeypatch.setattr(serve, "check", lambda data_dir: checked.append(data_dir) or 2)
    monkeypatch.setattr(serve, "run", lambda config: pytest.fail("started the broker"))
    assert serve.main(["--check", "--data-dir", "d1"]) == 2
    assert CliRunner().invoke(cli, ["serve", "--check", "--data-dir", "d2"]).exit_code == 2
    assert checked == ["d1", "d2"]


def test_config_from_maps_allow_remote_guest_to_loopback_users():
    values = {option.name: option.default for option in SERVE_OPTIONS}
    assert config_from(values) == Config()
    assert config_from({**values, "allow_remote_guest": True}).loopback_users == ()


def test_the_fast_path_imports_neither_typer_nor_rich():
    """typer and rich cost more to import than the broker: `rabbitish serve` must not load them."""
    code = (
        "import sys\n"
        "from rabbitish.cli import main, serve\n"
        "serve.parser()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'rich', 'click'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
