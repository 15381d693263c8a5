"""The scaling results (benchmarks/scaling.py) as markdown tables for docs/performance.md and as
one PNG figure: a row per dimension, with rate, broker CPU per operation and RSS side by side.
The PNG is saved with a reduced palette, so it stays small in the repository."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.measure import markdown_table

if TYPE_CHECKING:
    from benchmarks.scaling import Point, Result

COLOURS = ("tab:orange", "tab:blue", "tab:green", "tab:red")
PALETTE = 24  # colours in the saved PNG


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _small(value: float | None) -> str:
    """One decimal below 10 (MiB/s of small messages), none above."""
    return _number(value, 1 if value is not None and abs(value) < 10 else 0)


def _x(dimension: str, x: int) -> str:
    if dimension == "size":
        for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
            if x >= scale and x % scale == 0:
                return f"{x // scale} {unit}"
        return f"{x} B"
    return f"{x:,}"


def table(result: Result) -> list[list[str]]:
    """One row per point; per broker the rate, the CPU per operation, the RSS and any extra
    column; with two brokers, the rate and CPU ratios of the first over the second."""
    from benchmarks.scaling import DIMENSIONS

    dimension = DIMENSIONS[result.dimension]
    names = list(result.brokers)
    series = [result.brokers[name] for name in names]
    extras = list(series[0][0].extra) if series and series[0] else []
    header = [result.dimension]
    header += [f"{name} {dimension.unit}" for name in names]
    header += [f"{name} CPU us/op" for name in names]
    header += [f"{name} RSS MiB" for name in names]
    # a column the brokers share (offered rate, message count) once, the others per broker
    shared = [e for e in extras if len({repr([p.extra.get(e) for p in s]) for s in series}) == 1]
    apart = [e for e in extras if e not in shared]
    header += shared
    header += [f"{name} {extra}" for extra in apart for name in names]
    pair = len(names) == 2
    if pair:
        header += ["ratio", "CPU ratio"]
    rows = [header]
    for index, point in enumerate(series[0]):
        points: list[Point] = [s[index] for s in series]
        row = [_x(result.dimension, point.x)]
        row += [_number(p.rate) for p in points]
        row += [_number(p.cpu_us, 1 if (p.cpu_us or 0) < 100 else 0) for p in points]
        row += [_number(p.rss_mib) for p in points]
        row += [_small(point.extra.get(extra)) for extra in shared]
        row += [_small(p.extra.get(extra)) for extra in apart for p in points]
        if pair:
            ours, theirs = points
            row.append(f"{ours.rate / theirs.rate:.2f}x" if theirs.rate else "-")
            cpu = "-"
            if ours.cpu_us is not None and theirs.cpu_us:
                cpu = f"{ours.cpu_us / theirs.cpu_us:.2f}x"
            row.append(cpu)
        rows.append(row)
    return rows


def markdown(results: list[Result]) -> str:
    from benchmarks.scaling import DIMENSIONS

    parts = []
    for result in results:
        before = ", ".join(f"{v:.1f}" for v in result.load_before)
        after = ", ".join(f"{v:.1f}" for v in result.load_after)
        parts.append(
            f"{DIMENSIONS[result.dimension].axis}: {result.began}, load average {before} "
            f"before, {after} after\n\n{markdown_table(table(result))}\n"
        )
    return "\n".join(parts)


def draw(results: list[Result], path: Path) -> None:
    """Rate, CPU per operation and RSS against each dimension; x on a log scale (depth 0 at
    the origin), rate and CPU on log scales too, so per-operation growth shows as a slope."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from benchmarks.scaling import DIMENSIONS

    fig, axes = plt.subplots(
        len(results), 3, figsize=(10, 2.3 * len(results) + 0.4), dpi=72, squeeze=False
    )
    for row, result in zip(axes, results, strict=True):
        dimension = DIMENSIONS[result.dimension]
        rate_ax, cpu_ax, rss_ax = row
        for colour, (name, points) in zip(COLOURS, result.brokers.items(), strict=False):
            xs = [p.x for p in points]
            rate_ax.plot(xs, [p.rate for p in points], "o-", color=colour, lw=1.2, ms=3, label=name)
            cpus = [p.cpu_us for p in points]
            if any(c is not None for c in cpus):
                cpu_ax.plot(xs, cpus, "o-", color=colour, lw=1.2, ms=3, label=name)
            rss = [p.rss_mib for p in points]
            if any(r is not None for r in rss):
                rss_ax.plot(xs, rss, "o-", color=colour, lw=1.2, ms=3, label=name)
            if points and "consume msgs/s" in points[0].extra:
                rate_ax.plot(
                    xs,
                    [p.extra["consume msgs/s"] for p in points],
                    "s--",
                    color=colour,
                    lw=1,
                    ms=3,
                    label=f"{name} consume",
                )
                cpu_ax.plot(
                    xs,
                    [p.extra["consume CPU us/msg"] for p in points],
                    "s--",
                    color=colour,
                    lw=1,
                    ms=3,
                    label=f"{name} consume",
                )
            if points and "offered msgs/s" in points[0].extra:
                rate_ax.plot(
                    xs,
                    [p.extra["offered msgs/s"] for p in points],
                    ":",
                    color="grey",
                    lw=1,
                    label="offered" if colour == COLOURS[0] else None,
                )
        rate_ax.set_ylabel(dimension.unit, fontsize=8)
        cpu_ax.set_ylabel("broker CPU us/op", fontsize=8)
        rss_ax.set_ylabel("broker RSS MiB", fontsize=8)
        for ax in row:
            ax.set_xscale("symlog", linthresh=1)
            ax.set_xlabel(dimension.axis, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="major", lw=0.3, color="0.85")
        rate_ax.set_yscale("log")
        cpu_ax.set_yscale("log")
        rss_ax.set_ylim(bottom=0)
        rate_ax.legend(fontsize=6, loc="best")
    fig.suptitle(
        "How cost grows: rate, broker CPU per operation and RSS, rabbitish and RabbitMQ",
        fontsize=10,
    )
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    buffer.seek(0)
    image = Image.open(buffer).convert("RGB").quantize(colors=PALETTE)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, optimize=True)
