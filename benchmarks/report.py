"""The suite's results as text: what machine and settings they came from, and one row per
scenario with ratios, so a table pasted into docs/performance.md says where it was measured."""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
from pathlib import Path

from benchmarks.measure import Figure

# scenario -> what it measures and in what unit; the first six are throughputs, higher is better
SCENARIOS = {
    "tx_commit_1": "1 persistent msg per tx.commit, commits/s",
    "tx_commit_100": "100 persistent msgs per tx.commit, msgs/s",
    "tx_ack": "consume in a tx, prefetch 100, commit per 100 acks, msgs/s",
    "confirm_publish": "persistent, confirm mode, pipelined, msgs/s (its CPU/op is the broker "
    "CPU per persistent confirmed message)",
    "publish_plain": "transient, no confirms, msgs/s",
    "consume_ack": "transient, prefetch 100, an ack each, msgs/s",
    "latency_p50": "transient publish -> deliver round trip, us",
    "latency_p99": "transient publish -> deliver round trip, us",
}
THROUGHPUT = tuple(SCENARIOS)[:6]


def _first(path: str, key: str) -> str:
    """The value of the first `key: value` line of a /proc file, or "?"."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def machine(results: dict[str, dict[str, Figure]], args: argparse.Namespace) -> str:
    """Date, machine, software and settings, as a paragraph above the table."""
    memory = _first("/proc/meminfo", "MemTotal").split()[0]
    gib = f"{int(memory) / 2**20:.0f} GiB" if memory.isdigit() else "? GiB"
    return (
        f"Date: {datetime.date.today().isoformat()}. Machine: {os.cpu_count()} CPU "
        f"{_first('/proc/cpuinfo', 'model name')}, {gib} RAM, {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}. Brokers: "
        f"{', '.join(results)}. rabbitish started here runs "
        f"`{' '.join(['--fsync always', *args.serve_args])}` on a temporary "
        f"data dir. {args.messages:,} persistent and {args.transient:,} transient messages of "
        f"{args.body} bytes, tx cases {args.seconds:g} s each, {args.rounds:,} latency round "
        f"trips; median of {args.repeat} round(s). CPU: the broker's user + system time per "
        f"operation, from /proc."
    )


def _value(name: str, figure: Figure) -> str:
    unit = " us" if name.startswith("latency") else "/s"
    return f"{figure[0]:,.0f}{unit}"


def _cpu(figure: Figure) -> str:
    return "-" if figure[1] is None else f"{figure[1]:,.0f} us"


def _better(name: str, ours: Figure, theirs: Figure) -> float:
    """How many times better the first broker did: rates divide one way, latencies the other."""
    if name.startswith("latency"):
        return theirs[0] / ours[0]
    return ours[0] / theirs[0]


def rows(results: dict[str, dict[str, Figure]]) -> list[list[str]]:
    """Header and one row per scenario; ratios (first broker against the second) only when
    exactly two brokers ran, then a geometric-mean row over the throughput scenarios and the
    broker CPU per persistent confirmed message."""
    names = list(results)
    pair = len(names) == 2
    header = ["scenario", *names, *(f"{name} CPU/op" for name in names)]
    table = [header + (["ratio", "CPU ratio"] if pair else [])]
    for scenario in SCENARIOS:
        figures = [results[name][scenario] for name in names]
        row = [scenario, *(_value(scenario, f) for f in figures), *(_cpu(f) for f in figures)]
        if pair:
            ours, theirs = figures
            cpu = "-"
            if ours[1] is not None and theirs[1]:
                cpu = f"{ours[1] / theirs[1]:.2f}x"
            row += [f"{_better(scenario, ours, theirs):.2f}x", cpu]
        table.append(row)
    if pair:
        ratios = [_better(s, results[names[0]][s], results[names[1]][s]) for s in THROUGHPUT]
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        blank = [""] * (len(header) - 1)
        table.append(["geometric mean, 6 throughput scenarios", *blank, f"{mean:.2f}x", ""])
    return table


def legend() -> str:
    """What each scenario row measures, as a markdown list under the table."""
    return "\n".join(f"- {name}: {what}" for name, what in SCENARIOS.items())
