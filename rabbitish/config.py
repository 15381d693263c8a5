"""All broker settings in one place; the CLI, the embedding API and tests build one of these."""

from __future__ import annotations

from dataclasses import dataclass, field

# --fsync: "always" syncs every commit to disk before it is confirmed, "never" leaves it to the OS.
FSYNC_MODES = ("always", "never")
# --scheduler-bind-type: "db" binds `rabbitish serve`'s event loop thread to one CPU, as
# RabbitMQ binds its schedulers by default (+stbt db); "u" leaves it unbound.
SCHEDULER_BIND_TYPES = ("db", "u")


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 5672
    data_dir: str = "./data"  # ":memory:" for no files at all
    frame_max: int = 131072
    channel_max: int = 2047
    heartbeat: int = 60
    fsync: str = "always"  # one of FSYNC_MODES
    # The default users and vhosts (RabbitMQ's default_user / default_vhost): created, users as
    # administrators with every permission, when a data dir is first used (every start in
    # :memory: mode); afterwards the data dir's own users and vhosts count.
    users: dict[str, str] = field(default_factory=lambda: {"guest": "guest"})
    vhosts: tuple[str, ...] = ("/",)
    # Users that may only connect from a loopback address (RabbitMQ's loopback_users);
    # `--allow-remote-guest` empties it.
    loopback_users: tuple[str, ...] = ("guest",)
    # TLS listener for AMQP 0-9-1 and 1.0 (None: none; 0: any free port), its certificate and
    # key (PEM), the CA bundle client certificates are checked against, and whether a client
    # must present one. A client certificate also allows the EXTERNAL mechanism.
    tls_port: int | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cafile: str | None = None
    verify_peer: bool = False
    # Which part of a client certificate names the EXTERNAL user (RabbitMQ's
    # ssl_cert_login_from): "common_name", or "distinguished_name" (RabbitMQ's default).
    ssl_cert_login_from: str = "common_name"
    # Serve the management API over TLS with the same certificate.
    management_tls: bool = False
    # How long a connection may take to finish the handshake (RabbitMQ: 10 s).
    handshake_timeout: float = 10.0
    # Output buffered for a slow consumer before deliveries to it pause.
    max_pending_output: int = 4 * 1024 * 1024
    # Management HTTP API port (on `host`); 0: no management API.
    management_port: int = 15672
    # Prometheus `/metrics` port (RabbitMQ's prometheus plugin: 15692); 0: only on the
    # management port. Needs the management API.
    prometheus_port: int = 15692
    # Who an AMQP 1.0 client logs in as with SASL ANONYMOUS or no SASL at all (RabbitMQ's
    # `default_user`); None refuses both.
    anonymous_user: str | None = "guest"
    # Half messages (engine/half.py): seconds between status checks of an undecided transaction
    # once its x-check-immunity has passed, and how many checks before it is rolled back.
    half_check_interval: float = 5.0
    half_check_max: int = 15
    # While store writes fail: bytes of unwritten persistent messages kept for the retries before
    # durable queues refuse (nack) more.
    store_backlog_limit: int = 64 * 1024 * 1024
    # Bytes of ready messages a durable queue keeps in memory; past them (or past 1000 messages)
    # the bodies of persistent messages stay on disk only and are read back ahead of consumers.
    page_out_bytes: int = 16 * 1024 * 1024
    # A definitions file (RabbitMQ's JSON) applied at every start, after recovery.
    definitions: str | None = None
    # Resource limits (docs/operations.md "Resource limits"). The memory high watermark: a
    # fraction of the machine's (or cgroup's) memory ("0.4", RabbitMQ's
    # vm_memory_high_watermark.relative) or an absolute size ("512MiB"); RSS above it blocks
    # publishers, and from `memory_paging_ratio` of it on, queues write message bodies to disk.
    memory_high_watermark: str = "0.4"
    memory_paging_ratio: float = 0.5
    # Free disk space under which publishers are blocked (RabbitMQ's disk_free_limit, 50 MB).
    disk_free_limit: str = "50MB"
    # Largest message body accepted (RabbitMQ's max_message_size; at most 512 MiB).
    max_message_size: int = 134217728
    # Milliseconds a delivery may stay unacknowledged before its channel is closed (RabbitMQ's
    # consumer_timeout; 0: never).
    consumer_timeout: int = 1_800_000
    # Seconds an open, unprepared transaction holding work may stay idle before it is ended: a
    # 0-9-1 tx channel is closed with 406, a 1.0 transaction rolled back (0: never, as RabbitMQ).
    transaction_timeout: float = 0.0
    # Microseconds `rabbitish serve`'s event loop polls before it sleeps while clients send in
    # short gaps (server/busy_wait.py): lower round-trip latency for more CPU per round trip.
    # 0, the default: never (RabbitMQ 3.10 starts its schedulers with +sbwt none, no busy
    # waiting, too). Brokers embedded in another program's loop (rabbitish.testing) never poll.
    busy_wait_us: int = 0
    # One of SCHEDULER_BIND_TYPES (server/cpu_binding.py).
    scheduler_bind_type: str = "db"

    @property
    def in_memory(self) -> bool:
        return self.data_dir == ":memory:"
