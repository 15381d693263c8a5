"""`rabbitish serve`: run the broker in the foreground until SIGINT / SIGTERM, which close every
client connection with 320 CONNECTION_FORCED (as RabbitMQ does on shutdown) and exit 0."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable

from rabbitish.config import FSYNC_MODES, Config

DEFAULTS = Config()
GC_THRESHOLD = 10_000  # net new objects between young collections (CPython: 700)
READ_BUFFER_HINT = 1024 * 1024  # a block larger than asyncio's 256 KiB read (see settle_memory)
FSYNC_HELP = "Sync each commit to disk (always) or leave it to the OS (never)."
HALF_CHECK_INTERVAL_HELP = "Seconds between status checks of an undecided half transaction."
HALF_CHECK_MAX_HELP = "Status checks sent before an undecided half transaction is rolled back."

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
        )
    )


def settle_memory() -> None:
    """Once started: the objects start-up made (modules, recovered wiring and messages) move to
    the permanent generation, so later collections no longer walk them, and a young collection
    runs after GC_THRESHOLD net new objects instead of 700, so a burst of queued messages pauses
    the loop a few times instead of hundreds (each pause lands on some message's latency)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # asyncio reads a socket into a new 256 KiB bytes, over glibc malloc's initial 128 KiB mmap
    # threshold: each read was an mmap, an mremap and a munmap. Freeing one larger mmapped
    # block raises glibc's threshold past it, so reads come from the heap from then on.
    block = bytearray(READ_BUFFER_HINT)
    del block


def run(config: Config) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(serve(config))


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (`pip install rabbitish[speed]`), else asyncio's
    own; RABBITISH_EVENT_LOOP=asyncio picks asyncio's even then."""
    if os.environ.get("RABBITISH_EVENT_LOOP", "auto") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


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
    settle_memory()
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
