"""`rabbitish serve`: run the broker in the foreground until SIGINT / SIGTERM, which close every
client connection with 320 CONNECTION_FORCED (as RabbitMQ does on shutdown) and exit 0."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from rabbitish.config import FSYNC_MODES, Config

DEFAULTS = Config()
FSYNC_HELP = "Sync each commit to disk (always) or leave it to the OS (never)."
HALF_CHECK_INTERVAL_HELP = "Seconds between status checks of an undecided half transaction."
HALF_CHECK_MAX_HELP = "Status checks sent before an undecided half transaction is rolled back."
MEMORY_HELP = (
    "Memory high watermark: a fraction of RAM (or of the cgroup limit), e.g. 0.4, or an absolute "
    "size, e.g. 512MiB. Above it publishers are blocked."
)
PAGING_HELP = "Fraction of the watermark from which queues move message bodies to disk."
DISK_HELP = "Free disk space (data dir) under which publishers are blocked, e.g. 50MB or 1GiB."
MAX_MESSAGE_HELP = "Largest message body accepted, in bytes (at most 536870912)."
CONSUMER_TIMEOUT_HELP = "Milliseconds a delivery may stay unacknowledged (0: no limit)."

log = logging.getLogger("rabbitish")


def parser(prog: str = "rabbitish serve") -> argparse.ArgumentParser:
    """The options of `serve`; the typer declaration in commands.py mirrors them."""
    p = argparse.ArgumentParser(prog=prog, description="Run the broker in the foreground.")
    p.add_argument("--host", default=DEFAULTS.host, help="Address to listen on.")
    p.add_argument("--port", type=int, default=DEFAULTS.port, help="AMQP port (0: any free).")
    p.add_argument("--data-dir", default=DEFAULTS.data_dir, help="Data directory, or :memory:.")
    p.add_argument("--fsync", default=DEFAULTS.fsync, choices=FSYNC_MODES, help=FSYNC_HELP)
    p.add_argument(
        "--management-port",
        type=int,
        default=DEFAULTS.management_port,
        help="Management HTTP API port (0: disabled).",
    )
    p.add_argument(
        "--half-check-interval",
        type=float,
        default=DEFAULTS.half_check_interval,
        help=HALF_CHECK_INTERVAL_HELP,
    )
    p.add_argument(
        "--half-check-max", type=int, default=DEFAULTS.half_check_max, help=HALF_CHECK_MAX_HELP
    )
    p.add_argument(
        "--memory-high-watermark", default=DEFAULTS.memory_high_watermark, help=MEMORY_HELP
    )
    p.add_argument(
        "--memory-paging-ratio", type=float, default=DEFAULTS.memory_paging_ratio, help=PAGING_HELP
    )
    p.add_argument("--disk-free-limit", default=DEFAULTS.disk_free_limit, help=DISK_HELP)
    p.add_argument(
        "--max-message-size", type=int, default=DEFAULTS.max_message_size, help=MAX_MESSAGE_HELP
    )
    p.add_argument(
        "--consumer-timeout",
        type=int,
        default=DEFAULTS.consumer_timeout,
        help=CONSUMER_TIMEOUT_HELP,
    )
    return p


def main(argv: list[str], prog: str = "rabbitish serve") -> int:
    args = parser(prog).parse_args(argv)
    return run(
        Config(
            host=args.host,
            port=args.port,
            data_dir=args.data_dir,
            fsync=args.fsync,
            management_port=args.management_port,
            half_check_interval=args.half_check_interval,
            half_check_max=args.half_check_max,
            memory_high_watermark=args.memory_high_watermark,
            memory_paging_ratio=args.memory_paging_ratio,
            disk_free_limit=args.disk_free_limit,
            max_message_size=args.max_message_size,
            consumer_timeout=args.consumer_timeout,
        )
    )


def run(config: Config) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    problem = limits_problem(config)
    if problem is not None:
        log.error("cannot start: %s", problem)
        return 2
    return asyncio.run(serve(config))


def limits_problem(config: Config) -> str | None:
    """What is wrong with the resource limit settings, None if nothing."""
    from rabbitish.engine.resources import parse_size, parse_watermark

    try:
        parse_watermark(config.memory_high_watermark, 1)
        parse_size(config.disk_free_limit)
    except ValueError as err:
        return str(err)
    if config.memory_paging_ratio <= 0:
        return "--memory-paging-ratio must be above 0"
    if config.max_message_size < 0 or config.consumer_timeout < 0:
        return "--max-message-size and --consumer-timeout must not be negative"
    return None


async def serve(config: Config) -> int:
    """Start, log the one line saying where we listen, wait for a signal, stop."""
    from rabbitish.app import Broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from rabbitish.store import StoreError

    broker = Broker(config)
    try:
        await broker.start()
    except StoreError as err:
        log.error("cannot start: %s", err)
        return 2
    management = ""
    if broker.management_port:
        management = f"; management API on http://{config.host}:{broker.management_port}"
    log.info(
        "rabbitish accepting AMQP 0-9-1 connections on %s:%s (data: %s)%s",
        config.host,
        broker.port,
        config.data_dir,
        management,
    )
    await stop.wait()
    await broker.stop()
    return 0
