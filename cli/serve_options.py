"""The options of `rabbitish serve`, in the one table both of its command lines are built from:
the fast path's argparse parser (serve.py) and the typer command that `--help` and docs/cli.md
show (commands.py). Plain data that imports only the settings it fills, so the fast path stays
as light as it was; each option's default is its Config field's own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from rabbitish.config import FSYNC_MODES, SCHEDULER_BIND_TYPES, Config
from rabbitish.tls import LOGIN_FROM

DEFAULTS = Config()


class ServeOption(NamedTuple):
    """`--NAME` (underscores as dashes), read as `kind` (bool: a flag), setting Config field
    `field` to the value (through `to_field` when given); no field: the command handles it.
    (A named tuple: far cheaper to define than a dataclass, and this module is on the fast path.)"""

    name: str
    kind: type
    help: str
    field: str | None
    choices: tuple[str, ...] = ()
    # Flags only: whether the full command line also takes --no-NAME (the fast path never has).
    negatable: bool = True
    to_field: Callable[[Any], Any] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def default(self) -> Any:
        """A flag is off unless given; any other option defaults to its Config field's value."""
        return False if self.kind is bool else getattr(DEFAULTS, self.field or "")


def _setting(name: str, kind: type, help: str, choices: tuple[str, ...] = ()) -> ServeOption:
    """An option setting the Config field of the same name."""
    return ServeOption(name, kind, help, field=name, choices=choices)


def _guest_users(allow_remote_guest: bool) -> tuple[str, ...]:
    return () if allow_remote_guest else DEFAULTS.loopback_users


# In the order `rabbitish serve --help` lists them.
SERVE_OPTIONS: tuple[ServeOption, ...] = (
    _setting("host", str, "Address to listen on."),
    _setting("port", int, "AMQP port (0 picks a free one)."),
    _setting("data_dir", str, "Data directory, or :memory: for none."),
    _setting(
        "fsync",
        str,
        "Sync each commit to disk (always) or leave it to the OS (never).",
        choices=FSYNC_MODES,
    ),
    _setting("management_port", int, "Management HTTP API port (0: disabled)."),
    _setting("prometheus_port", int, "Prometheus /metrics port (0: only on the management port)."),
    _setting(
        "half_check_interval",
        float,
        "Seconds between status checks of an undecided half transaction.",
    ),
    _setting(
        "half_check_max",
        int,
        "Status checks sent before an undecided half transaction is rolled back.",
    ),
    _setting("definitions", str, "Definitions file (RabbitMQ's JSON) to apply at start."),
    _setting(
        "tls_port",
        int,
        "AMQP 0-9-1 and 1.0 over TLS on this port (0: any free); needs the two files.",
    ),
    _setting("certfile", str, "The broker's TLS certificate (chain), PEM."),
    _setting("keyfile", str, "The private key of --certfile, PEM."),
    _setting(
        "cafile", str, "CA bundle that client certificates are verified against (enables EXTERNAL)."
    ),
    _setting("verify_peer", bool, "Refuse TLS clients without a certificate signed by --cafile."),
    _setting(
        "management_tls", bool, "Serve the management API over HTTPS with the same certificate."
    ),
    ServeOption(
        "allow_remote_guest",
        bool,
        "Let guest connect from other hosts (by default only from loopback).",
        field="loopback_users",
        to_field=_guest_users,
    ),
    _setting(
        "ssl_cert_login_from",
        str,
        "What names the EXTERNAL user: the certificate's common_name or distinguished_name.",
        choices=LOGIN_FROM,
    ),
    ServeOption(
        "check",
        bool,
        "Verify the data dir instead of serving: validate it and run the whole recovery without "
        "writing to it, print a summary and exit 0, or print why it cannot be loaded and exit 2.",
        field=None,
        negatable=False,
    ),
    _setting(
        "memory_high_watermark",
        str,
        "Memory high watermark: a fraction of RAM (or of the cgroup limit), e.g. 0.4, or an "
        "absolute size, e.g. 512MiB. Above it publishers are blocked.",
    ),
    _setting(
        "memory_paging_ratio",
        float,
        "Fraction of the watermark from which queues move message bodies to disk.",
    ),
    _setting(
        "disk_free_limit",
        str,
        "Free disk space (data dir) under which publishers are blocked, e.g. 50MB or 1GiB.",
    ),
    _setting(
        "max_message_size", int, "Largest message body accepted, in bytes (at most 536870912)."
    ),
    _setting(
        "consumer_timeout", int, "Milliseconds a delivery may stay unacknowledged (0: no limit)."
    ),
    _setting(
        "transaction_timeout",
        float,
        "Seconds an open transaction holding uncommitted work may stay idle before the broker "
        "ends it: a 0-9-1 tx channel is closed with 406, a 1.0 transaction rolled back "
        "(0: no limit).",
    ),
    _setting(
        "busy_wait_us",
        int,
        "Microseconds the event loop polls before it sleeps while clients send in short gaps "
        "(lower latency for request/response clients, more CPU per round trip; 0: off, the "
        "default, as RabbitMQ's +sbwt none).",
    ),
    _setting(
        "scheduler_bind_type",
        str,
        "db: bind the event loop's thread to the CPU it starts on, as RabbitMQ binds its "
        "schedulers by default (+stbt db); u: leave it unbound.",
        choices=SCHEDULER_BIND_TYPES,
    ),
)


def config_from(values: Mapping[str, Any]) -> Config:
    """The Config the parsed options (by option name) describe."""
    settings = {}
    for option in SERVE_OPTIONS:
        if option.field is not None:
            value = values[option.name]
            settings[option.field] = value if option.to_field is None else option.to_field(value)
    return Config(**settings)
