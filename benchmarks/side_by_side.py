"""One benchmark against rabbitish (its own process on a temporary data dir, `--fsync always`)
and a local RabbitMQ when installed, in the same run, or against one running broker (`--url`),
so that every figure it prints has its counterpart measured under the same load."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from benchmarks.measure import process_tree
from tests.support.broker_process import BrokerProcess

T = TypeVar("T")
Run = Callable[[str, list[int], argparse.Namespace], T]


def add_broker_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=["rabbitish", "rabbitmq"])
    parser.add_argument("--url", help="only this running broker")
    parser.add_argument("--pid", type=int, action="append", default=[], help="its process(es)")
    add_native_option(parser)


def add_native_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--native",
        action="store_true",
        help="run rabbitish with its hot modules compiled, as RABBITISH_COMPILE=1 installs it",
    )


def rabbitish_env(args: argparse.Namespace) -> dict[str, str] | None:
    """The environment that runs the compiled package (`--native`), built first if stale."""
    if not args.native:
        return None
    from tests.support.native_build import build

    return {"PYTHONPATH": str(build()), "PYTHONSAFEPATH": "1"}


def side_by_side(args: argparse.Namespace, run: Run[T]) -> dict[str, T]:
    """`run(url, pids, args)` per broker, keyed by the broker's name."""
    columns: dict[str, T] = {}
    if args.url:
        columns[args.url] = run(args.url, args.pid, args)
        return columns
    if args.only != "rabbitmq":
        env = rabbitish_env(args)
        with (
            tempfile.TemporaryDirectory(prefix="rabbitish-bench-") as data_dir,
            BrokerProcess("--fsync", "always", data_dir=data_dir, env=env) as broker,
        ):
            assert broker.proc is not None
            name = "rabbitish (compiled)" if args.native else "rabbitish"
            columns[name] = run(broker.url, [broker.proc.pid], args)
    from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

    if args.only != "rabbitish" and rabbitmq_available():
        with real_rabbitmq() as node:
            columns[f"RabbitMQ {node.version}"] = run(node.url, process_tree(node.pid), args)
    return columns


def start_both(
    stack: contextlib.ExitStack,
    data_dir: str | Path,
    serve_args: Sequence[str] = (),
    with_rabbitmq: bool = True,
    args: argparse.Namespace | None = None,
) -> dict[str, tuple[str, list[int]]]:
    """rabbitish (`--fsync always` on `data_dir`; compiled with `args.native`) and, when
    installed and wanted, a RabbitMQ node, both running until `stack` closes, for benchmarks
    that interleave rounds between them: name -> (url, the processes whose CPU counts)."""
    from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

    env = rabbitish_env(args) if args is not None else None
    ours = stack.enter_context(
        BrokerProcess("--fsync", "always", *serve_args, data_dir=data_dir, env=env)
    )
    assert ours.proc is not None
    running = {"rabbitish (compiled)" if env else "rabbitish": (ours.url, [ours.proc.pid])}
    if with_rabbitmq and rabbitmq_available():
        node = stack.enter_context(real_rabbitmq())
        running[f"RabbitMQ {node.version}"] = (node.url, process_tree(node.pid))
    return running
