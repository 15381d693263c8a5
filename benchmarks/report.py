"""The suite's results as text: what machine and settings they came from, and one row per
scenario with ratios, so a table pasted into docs/performance.md says where it was measured."""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
from collections.abc import Mapping
from pathlib import Path

from benchmarks.interleaved import BLOCK, TX_SLICE
from benchmarks.measure import Figure

# scenario -> what it measures and in what unit; all but latency are throughputs, higher is better
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
        f"{args.body} bytes, tx cases {args.seconds:g} s each and {args.rounds:,} latency "
        f"round trips per broker, alternating in slices of {TX_SLICE:g} s and "
        f"{min(BLOCK, args.rounds)} round trips; median of "
        f"{args.repeat} round(s). CPU: the broker's user + system time per operation, from "
        "/proc."
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


def _throughput(scenarios: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(name for name in scenarios if not name.startswith("latency"))


def geometric_mean(ratios: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def rows(
    results: dict[str, dict[str, Figure]], scenarios: Mapping[str, str] = SCENARIOS
) -> list[list[str]]:
    """Header and one row per scenario; ratios (first broker against the second) only when
    exactly two brokers ran, then a geometric-mean row over the throughput scenarios and the
    broker CPU per persistent confirmed message."""
    names = list(results)
    throughput = _throughput(scenarios)
    pair = len(names) == 2
    header = ["scenario", *names, *(f"{name} CPU/op" for name in names)]
    table = [header + (["ratio", "CPU ratio"] if pair else [])]
    for scenario in scenarios:
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
        ratios = [_better(s, results[names[0]][s], results[names[1]][s]) for s in throughput]
        mean = geometric_mean(ratios)
        blank = [""] * (len(header) - 1)
        label = f"geometric mean, {len(throughput)} throughput scenarios"
        table.append([label, *blank, f"{mean:.2f}x", ""])
    return table


def drivers_rows(
    per_driver: Mapping[str, dict[str, dict[str, Figure]]], scenarios: Mapping[str, str]
) -> list[list[str]]:
    """Both drivers' ratios and CPU ratios beside each other, one row per scenario (the first
    broker against the second, as in `rows`), then each driver's geometric mean."""
    drivers = list(per_driver)
    header = ["scenario", *(f"{d} ratio" for d in drivers), *(f"{d} CPU ratio" for d in drivers)]
    table = [header]
    ratios: dict[str, list[float]] = {d: [] for d in drivers}
    for scenario in scenarios:
        better, cpu = [], []
        for driver in drivers:
            ours, theirs = (figures[scenario] for figures in per_driver[driver].values())
            ratio = _better(scenario, ours, theirs)
            if not scenario.startswith("latency"):
                ratios[driver].append(ratio)
            better.append(f"{ratio:.2f}x")
            cpu.append(f"{ours[1] / theirs[1]:.2f}x" if ours[1] and theirs[1] else "-")
        table.append([scenario, *better, *cpu])
    means = [f"{geometric_mean(ratios[d]):.2f}x" for d in drivers]
    table.append(["geometric mean, throughput", *means, *([""] * len(drivers))])
    return table


def legend(scenarios: Mapping[str, str] = SCENARIOS) -> str:
    """What each scenario row measures, as a markdown list under the table."""
    return "\n".join(f"- {name}: {what}" for name, what in scenarios.items())
