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
CHECK_HELP = (
    "Verify the data dir instead of serving: validate it and run the whole recovery without "
    "writing to it, print a summary and exit 0, or print why it cannot be loaded and exit 2."
)

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
    p.add_argument("--check", action="store_true", help=CHECK_HELP)
    return p


def main(argv: list[str], prog: str = "rabbitish serve") -> int:
    args = parser(prog).parse_args(argv)
    if args.check:
        return check(args.data_dir)
    return run(
        Config(
            host=args.host,
            port=args.port,
            data_dir=args.data_dir,
            fsync=args.fsync,
            management_port=args.management_port,
            half_check_interval=args.half_check_interval,
            half_check_max=args.half_check_max,
        )
    )


def check(data_dir: str) -> int:
    """`serve --check`: load `data_dir` as a start would, without serving or writing to it."""
    from rabbitish.engine.node import Node
    from rabbitish.protocol.codec import CODEC
    from rabbitish.store import StoreError, check_store

    if data_dir == ":memory:":
        sys.stderr.write("error: --check needs a data dir (:memory: holds nothing)\n")
        return 2

    async def load() -> int:
        from rabbitish.server.scheduler import LoopScheduler

        node = Node(LoopScheduler(asyncio.get_running_loop()), codec=CODEC)
        try:
            stats = check_store(data_dir, node, CODEC)
        except StoreError as err:
            sys.stderr.write(f"error: {err}\n")
            return 2
        sys.stdout.write(
            f"{data_dir}: loads: {stats.exchanges} exchanges, {stats.queues} queues, "
            f"{stats.bindings} bindings, {stats.messages} messages, "
            f"{stats.half_transactions} undecided half transactions; last stop "
            f"{'clean' if stats.clean_stop else 'unclean (messages come back redelivered)'} "
            f"(recovered in {stats.seconds:.2f} s)\n"
        )
        return 0

    return asyncio.run(load())


def run(config: Config) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    return asyncio.run(serve(config))


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
