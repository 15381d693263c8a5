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
from collections.abc import Callable, Mapping
from typing import Any

from rabbitish.cli.serve_options import SERVE_OPTIONS, config_from

from rabbitish.config import Config
from rabbitish.server.busy_wait import BusyWaitSelector, CpuContention
from rabbitish.server.cpu_binding import bind_loop_thread
from rabbitish.sysinfo import keep_large_blocks_in_heap

GC_THRESHOLD = 10_000  # net new objects between young collections (CPython: 700)

log = logging.getLogger("rabbitish")


def parser(prog: str = "rabbitish serve") -> argparse.ArgumentParser:
    """The options of `serve` (serve_options.py), as the fast path parses them."""
    p = argparse.ArgumentParser(prog=prog, description="Run the broker in the foreground.")
    for option in SERVE_OPTIONS:
        if option.kind is bool:
            p.add_argument(option.flag, action="store_true", help=option.help)
        else:
            p.add_argument(
                option.flag,
                type=option.kind,
                default=option.default,
                choices=option.choices or None,
                help=option.help,
            )
    return p


def main(argv: list[str], prog: str = "rabbitish serve") -> int:
    return start(vars(parser(prog).parse_args(argv)))


def start(values: Mapping[str, Any]) -> int:
    """What both command lines run once they parsed the options (by name): check the data dir,
    or run the broker until a signal stops it. The exit code."""
    if values["check"]:
        return check(values["data_dir"])
    return run(config_from(values))


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
    the loop a few times instead of hundreds (each pause lands on some message's latency).
    Collection is off until then (`run`): start-up makes objects that live as long as the
    broker, and collecting them over and over while they pile up found nothing (about 50
    collections, 5-15 ms, while the management API loads alone)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    gc.enable()
    # asyncio reads a socket into a new 256 KiB bytes, over glibc malloc's initial 128 KiB mmap
    # threshold (each read an mmap, an mremap and a munmap), and large message bodies are copied
    # into fresh blocks several times: all of them come from the heap from now on.
    keep_large_blocks_in_heap()


def run(config: Config) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    problem = limits_problem(config)
    if problem is not None:
        log.error("cannot start: %s", problem)
        return 2
    selector = busy_wait_selector(config)
    gc.disable()  # until settle_memory, once started
    try:
        with asyncio.Runner(loop_factory=event_loop_factory(selector)) as runner:
            return runner.run(serve(config, selector))
    finally:
        gc.enable()


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
    """uvloop's event loop (a dependency where it has wheels), else asyncio's own, on `selector`
    when given; RABBITISH_EVENT_LOOP=asyncio picks asyncio's even then."""
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
    if config.transaction_timeout < 0:
        return "--transaction-timeout must not be negative"
    return None


def start_errors() -> tuple[type[Exception], ...]:
    """What a bad data dir, definitions file or TLS option raises at start. Evaluated only when
    a start fails, so a broker on :memory: without definitions never imports the store or the
    definitions loader to be able to catch them."""
    from rabbitish.management.definitions import DefinitionsError
    from rabbitish.store import StoreError
    from rabbitish.tls import TlsConfigError

    return (StoreError, DefinitionsError, TlsConfigError)


async def serve(config: Config, selector: BusyWaitSelector | None = None) -> int:
    """Start, log the one line saying where we listen, wait for a signal, stop."""
    from rabbitish.app import Broker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    broker = Broker(config)
    try:
        await broker.start()
    except start_errors() as err:
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
    bind_loop_thread(config.scheduler_bind_type)
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
