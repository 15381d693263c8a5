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
from typing import Any

from rabbitish.config import FSYNC_MODES, Config
from rabbitish.server.busy_wait import BusyWaitSelector, CpuContention
from rabbitish.tls import LOGIN_FROM

DEFAULTS = Config()
GC_THRESHOLD = 10_000  # net new objects between young collections (CPython: 700)
READ_BUFFER_HINT = 1024 * 1024  # a block larger than asyncio's 256 KiB read (see settle_memory)
FSYNC_HELP = "Sync each commit to disk (always) or leave it to the OS (never)."
PROMETHEUS_PORT_HELP = "Prometheus /metrics port (0: only on the management port)."
HALF_CHECK_INTERVAL_HELP = "Seconds between status checks of an undecided half transaction."
HALF_CHECK_MAX_HELP = "Status checks sent before an undecided half transaction is rolled back."
DEFINITIONS_HELP = "Definitions file (RabbitMQ's JSON) to apply at start."
TLS_PORT_HELP = "AMQP 0-9-1 and 1.0 over TLS on this port (0: any free); needs the two files."
CERTFILE_HELP = "The broker's TLS certificate (chain), PEM."
KEYFILE_HELP = "The private key of --certfile, PEM."
CAFILE_HELP = "CA bundle that client certificates are verified against (enables EXTERNAL)."
VERIFY_PEER_HELP = "Refuse TLS clients without a certificate signed by --cafile."
MANAGEMENT_TLS_HELP = "Serve the management API over HTTPS with the same certificate."
LOGIN_FROM_HELP = (
    "What names the EXTERNAL user: the certificate's common_name or distinguished_name."
)
ALLOW_REMOTE_GUEST_HELP = "Let guest connect from other hosts (by default only from loopback)."
CHECK_HELP = (
    "Verify the data dir instead of serving: validate it and run the whole recovery without "
    "writing to it, print a summary and exit 0, or print why it cannot be loaded and exit 2."
)
MEMORY_HELP = (
    "Memory high watermark: a fraction of RAM (or of the cgroup limit), e.g. 0.4, or an absolute "
    "size, e.g. 512MiB. Above it publishers are blocked."
)
PAGING_HELP = "Fraction of the watermark from which queues move message bodies to disk."
DISK_HELP = "Free disk space (data dir) under which publishers are blocked, e.g. 50MB or 1GiB."
MAX_MESSAGE_HELP = "Largest message body accepted, in bytes (at most 536870912)."
CONSUMER_TIMEOUT_HELP = "Milliseconds a delivery may stay unacknowledged (0: no limit)."
BUSY_WAIT_HELP = (
    "Microseconds the event loop polls before it sleeps while clients send in short gaps "
    "(lower latency for request/response clients, some CPU while they are active; 0: off)."
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
        "--prometheus-port",
        type=int,
        default=DEFAULTS.prometheus_port,
        help=PROMETHEUS_PORT_HELP,
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
    p.add_argument("--definitions", default=None, help=DEFINITIONS_HELP)
    p.add_argument("--tls-port", type=int, default=None, help=TLS_PORT_HELP)
    p.add_argument("--certfile", default=None, help=CERTFILE_HELP)
    p.add_argument("--keyfile", default=None, help=KEYFILE_HELP)
    p.add_argument("--cafile", default=None, help=CAFILE_HELP)
    p.add_argument("--verify-peer", action="store_true", help=VERIFY_PEER_HELP)
    p.add_argument("--management-tls", action="store_true", help=MANAGEMENT_TLS_HELP)
    p.add_argument(
        "--ssl-cert-login-from",
        default=DEFAULTS.ssl_cert_login_from,
        choices=LOGIN_FROM,
        help=LOGIN_FROM_HELP,
    )
    p.add_argument("--allow-remote-guest", action="store_true", help=ALLOW_REMOTE_GUEST_HELP)
    p.add_argument("--check", action="store_true", help=CHECK_HELP)
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
    p.add_argument("--busy-wait-us", type=int, default=DEFAULTS.busy_wait_us, help=BUSY_WAIT_HELP)
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
            prometheus_port=args.prometheus_port,
            half_check_interval=args.half_check_interval,
            half_check_max=args.half_check_max,
            definitions=args.definitions,
            **security_options(
                args.tls_port,
                args.certfile,
                args.keyfile,
                args.cafile,
                args.verify_peer,
                args.management_tls,
                args.allow_remote_guest,
                args.ssl_cert_login_from,
            ),
            memory_high_watermark=args.memory_high_watermark,
            memory_paging_ratio=args.memory_paging_ratio,
            disk_free_limit=args.disk_free_limit,
            max_message_size=args.max_message_size,
            consumer_timeout=args.consumer_timeout,
            busy_wait_us=args.busy_wait_us,
        )
    )


def security_options(
    tls_port: int | None,
    certfile: str | None,
    keyfile: str | None,
    cafile: str | None,
    verify_peer: bool,
    management_tls: bool,
    allow_remote_guest: bool,
    ssl_cert_login_from: str = DEFAULTS.ssl_cert_login_from,
) -> dict[str, Any]:
    """The Config fields of the TLS and guest options (shared by both declarations of serve)."""
    return {
        "tls_port": tls_port,
        "certfile": certfile,
        "keyfile": keyfile,
        "cafile": cafile,
        "verify_peer": verify_peer,
        "management_tls": management_tls,
        "ssl_cert_login_from": ssl_cert_login_from,
        "loopback_users": () if allow_remote_guest else DEFAULTS.loopback_users,
    }


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
    problem = limits_problem(config)
    if problem is not None:
        log.error("cannot start: %s", problem)
        return 2
    selector = busy_wait_selector(config)
    with asyncio.Runner(loop_factory=event_loop_factory(selector)) as runner:
        return runner.run(serve(config, selector))


def busy_wait_selector(config: Config) -> BusyWaitSelector | None:
    """The selector that polls before sleeping (server/busy_wait.py), None when it is off or
    uvloop runs the loop (it has no selector to replace)."""
    if config.busy_wait_us <= 0 or _uvloop_factory() is not None:
        return None
    from rabbitish.server.socket_protocol import SocketWrites

    selector = BusyWaitSelector(config.busy_wait_us / 1e6, replies=lambda: SocketWrites.count)
    selector.hold_while(CpuContention().high)
    return selector


def event_loop_factory(
    selector: BusyWaitSelector | None = None,
) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (`pip install rabbitish[speed]`), else asyncio's
    own, on `selector` when given; RABBITISH_EVENT_LOOP=asyncio picks asyncio's even then."""
    uvloop_factory = _uvloop_factory()
    if uvloop_factory is not None:
        return uvloop_factory
    if selector is not None:
        return lambda: asyncio.SelectorEventLoop(selector)
    return None


def _uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    if os.environ.get("RABBITISH_EVENT_LOOP", "auto") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


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
    if config.busy_wait_us < 0:
        return "--busy-wait-us must not be negative"
    return None


async def serve(config: Config, selector: BusyWaitSelector | None = None) -> int:
    """Start, log the one line saying where we listen, wait for a signal, stop."""
    from rabbitish.app import Broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from rabbitish.management.definitions import DefinitionsError
    from rabbitish.store import StoreError
    from rabbitish.tls import TlsConfigError

    broker = Broker(config)
    try:
        await broker.start()
    except (StoreError, DefinitionsError, TlsConfigError) as err:
        log.error("cannot start: %s", err)
        return 2
    if selector is not None and broker.journal is not None:
        selector.hold_while(broker.journal.writing)
    management = ""
    if broker.tls_port:
        management = f"; AMQP over TLS on {config.host}:{broker.tls_port}"
    if broker.management_port:
        scheme = "https" if config.management_tls else "http"
        management += f"; management API on {scheme}://{config.host}:{broker.management_port}"
    settle_memory()
    log.info(
        "rabbitish accepting AMQP 0-9-1 connections on %s:%s (data: %s)%s",
        config.host,
        broker.port,
        config.data_dir,
        management,
    )
    prometheus = broker.management.prometheus_port if broker.management is not None else None
    if prometheus:
        log.info("Prometheus metrics on http://%s:%s/metrics", config.host, prometheus)
    await stop.wait()
    await broker.stop()
    return 0
