"""`python -m benchmarks`: the project's benchmark suite, printed as markdown tables, one per
driver: the pipelined one (a raw socket that packs many frames into each write, and pika for the
tx scenarios) and, when `go` and Debian's amqp091-go are installed, the per-message-write one
(RabbitMQ's Go client, every frame its own socket write: benchmarks/per_write.py).

With `--url` (repeatable) it runs against brokers already running; the broker's CPU is then not
measured. Without, it compares: rabbitish in its own process on a temporary data dir with
`--fsync always`, and a local RabbitMQ when one is installed, both started here and run in
alternating rounds, the median round reported. Within a round the tx_commit, tx_ack and
latency scenarios alternate between the brokers in slices of half a second, 2,000 messages or
500 round trips (benchmarks/interleaved.py): their figures drift with the machine. The ratio
column reads "times better than RabbitMQ" (rate over rate, or its latency over ours); the CPU
ratio is ours over RabbitMQ's.
Nothing here asserts a speed: the numbers are for people to read.

    python -m benchmarks [--messages 20000] [--seconds 3] [--repeat 1] [--url URL ...]
                         [--driver pipelined|per-write ...]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shlex
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from benchmarks import durable, interleaved, per_write, transient
from benchmarks.measure import Figure, markdown_table
from benchmarks.report import SCENARIOS, drivers_rows, legend, machine, rows
from benchmarks.side_by_side import add_native_option, start_both

Brokers = dict[str, tuple[str, list[int]]]  # name -> (url, pids whose CPU counts)
Suite = Callable[[str, list[int], argparse.Namespace], dict[str, Figure]]
# The interleaved scenarios on all the brokers at once: broker -> scenario -> figure.
Interleaved = Callable[[Brokers, argparse.Namespace], dict[str, dict[str, Figure]]]
PIPELINED, PER_WRITE = "pipelined", "per-write"
TITLES = {
    PIPELINED: "Pipelined driver (raw socket, many frames per write; pika for the tx cases)",
    PER_WRITE: "Per-message-write driver (amqp091-go: every frame its own socket write)",
}
LEGENDS = {PIPELINED: SCENARIOS, PER_WRITE: per_write.SCENARIOS}


@dataclass(frozen=True)
class Driver:
    """How one driver runs its counted scenarios on one broker, and its interleaved ones on
    all of them."""

    suite: Suite
    interleaved: Interleaved


def run_suite(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, Figure]:
    """The counted scenarios once against one broker, pipelined."""
    results = durable.run_broker(url, pids, args.messages, args.body)
    results.update(transient.run_broker(url, pids, args.transient, args.body))
    return results


def pipelined_interleaved(
    brokers: Brokers, args: argparse.Namespace
) -> dict[str, dict[str, Figure]]:
    return interleaved.pipelined(brokers, args.rounds, args.seconds, args.messages, args.body)


def per_write_interleaved(
    binary: Path, brokers: Brokers, args: argparse.Namespace
) -> dict[str, dict[str, Figure]]:
    return interleaved.per_write(
        binary, brokers, args.rounds, args.seconds, args.messages, args.body
    )


def median_round(rounds: list[dict[str, Figure]]) -> dict[str, Figure]:
    """Per scenario, the median of the rounds (rate and CPU each), so one noisy round neither
    flatters nor sinks a broker."""
    merged: dict[str, Figure] = {}
    for name in rounds[0]:
        cpus = [cpu for r in rounds if (cpu := r[name][1]) is not None]
        merged[name] = (
            statistics.median(r[name][0] for r in rounds),
            statistics.median(cpus) if cpus else None,
        )
    return merged


def run(
    brokers: Brokers, drivers: dict[str, Driver], args: argparse.Namespace
) -> dict[str, dict[str, dict[str, Figure]]]:
    """`args.repeat` rounds, each running every driver's suite on every broker in turn, then
    its interleaved scenarios on all of them; per driver, per broker, the median round."""
    rounds: dict[str, dict[str, list[dict[str, Figure]]]] = {
        driver: {name: [] for name in brokers} for driver in drivers
    }
    for _ in range(args.repeat):
        for driver, runs in drivers.items():
            found = {name: runs.suite(url, pids, args) for name, (url, pids) in brokers.items()}
            for name, figures in runs.interleaved(brokers, args).items():
                found[name].update(figures)
            for name, figures in found.items():
                rounds[driver][name].append(figures)
    return {
        driver: {name: median_round(results) for name, results in per_broker.items()}
        for driver, per_broker in rounds.items()
    }


def choose_drivers(args: argparse.Namespace) -> dict[str, Driver]:
    """The drivers asked for (both by default); the per-message-write one is built here, or
    left out with a line saying why."""
    drivers: dict[str, Driver] = {}
    for driver in args.driver or (PIPELINED, PER_WRITE):
        if driver == PIPELINED:
            drivers[driver] = Driver(run_suite, pipelined_interleaved)
            continue
        try:
            binary = per_write.build()
        except per_write.DriverUnavailable as why:
            print(f"Per-message-write driver skipped: {why}\n")
            continue
        drivers[driver] = Driver(
            functools.partial(per_write.run_broker, binary),
            functools.partial(per_write_interleaved, binary),
        )
    return drivers


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--url", action="append", help="a running broker (repeatable)")
    parser.add_argument("--messages", type=int, default=20_000, help="persistent, per scenario")
    parser.add_argument("--transient", type=int, default=50_000, help="transient, per scenario")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="tx_commit time per broker and round"
    )
    # /proc counts CPU in 10 ms ticks, read around each block of 500 (benchmarks/latency.py):
    # over 10,000 round trips per broker the ticks' rounding, up or down in every block, adds up
    # to a spread of about 1 us of the 35-90 a round trip costs a broker.
    parser.add_argument(
        "--rounds", type=int, default=10_000, help="latency round trips per broker and round"
    )
    parser.add_argument("--body", type=int, default=100, help="body size in bytes")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the median is reported")
    parser.add_argument("--no-rabbitmq", action="store_true", help="rabbitish alone")
    parser.add_argument(
        "--driver",
        action="append",
        choices=[PIPELINED, PER_WRITE],
        help="only this driver (repeatable; default both, per-write when go is installed)",
    )
    parser.add_argument(
        "--serve-args",
        type=shlex.split,
        default=[],
        help='more `rabbitish serve` options, e.g. --serve-args="--busy-wait-us 0"',
    )
    add_native_option(parser)
    return parser.parse_args()


def main() -> None:
    args = parse()
    drivers = choose_drivers(args)
    if not drivers:
        raise SystemExit("no driver to run")
    with contextlib.ExitStack() as stack:
        brokers: Brokers = {}
        for url in args.url or ():
            brokers[urlparse(url).netloc.rpartition("@")[2]] = (url, [])
        if not args.url:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rabbitish-bench-"))
            brokers.update(
                start_both(stack, data_dir, args.serve_args, not args.no_rabbitmq, args=args)
            )
        results = run(brokers, drivers, args)
    print(machine(next(iter(results.values())), args))
    for driver, per_broker in results.items():
        print(f"\n### {TITLES[driver]}\n")
        print(markdown_table(rows(per_broker, LEGENDS[driver])))
        print()
        print(legend(LEGENDS[driver]))
    if len(results) == 2 and len(brokers) == 2:
        print("\n### Both drivers: ratio to the second broker, and CPU ratio\n")
        print(markdown_table(drivers_rows(results, SCENARIOS)))


if __name__ == "__main__":
    main()
