"""All broker settings in one place; the CLI, the embedding API and tests build one of these."""

from __future__ import annotations

from dataclasses import dataclass, field

# --fsync: "always" syncs every commit to disk before it is confirmed, "never" leaves it to the OS.
FSYNC_MODES = ("always", "never")


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 5672
    data_dir: str = "./data"  # ":memory:" for no files at all
    frame_max: int = 131072
    channel_max: int = 2047
    heartbeat: int = 60
    fsync: str = "always"  # one of FSYNC_MODES
    users: dict[str, str] = field(default_factory=lambda: {"guest": "guest"})
    vhosts: tuple[str, ...] = ("/",)
    # How long a connection may take to finish the handshake (RabbitMQ: 10 s).
    handshake_timeout: float = 10.0
    # Output buffered for a slow consumer before deliveries to it pause.
    max_pending_output: int = 4 * 1024 * 1024
    # Management HTTP API port (on `host`); 0: no management API.
    management_port: int = 15672
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

    @property
    def in_memory(self) -> bool:
        return self.data_dir == ":memory:"
