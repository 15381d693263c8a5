"""What every benchmark needs around its scenarios: the broker's CPU time from /proc (wall-clock
is noisy on a small shared machine, CPU per operation much less so) and tables to print."""

from __future__ import annotations

import compileall
import os
from collections.abc import Callable, Sequence
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (which may contain spaces)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def process_tree(root: int) -> list[int]:
    """`root` and its live descendants: RabbitMQ runs beam.smp under a shell wrapper."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, ValueError):
                continue  # gone meanwhile
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of `pids` (including reaped threads of each process)."""
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


Figure = tuple[float, float | None]  # operations/s (or microseconds), broker CPU us per operation


def timed(pids: list[int], run: Callable[[], tuple[int, float]]) -> Figure:
    """`run()` returns (operations, seconds); its rate and the broker's CPU per operation
    (None when the broker's processes are not known, as for a remote URL)."""
    before = cpu_seconds(pids)
    count, elapsed = run()
    cpu = (cpu_seconds(pids) - before) / count * 1e6 if pids else None
    return count / elapsed, cpu


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell, for a terminal."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """The first row as the header, ready to paste into docs/performance.md."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def compile_bytecode() -> int:
    """Write `__pycache__` for every module of the package, whatever the environment says
    (PYTHONDONTWRITEBYTECODE): as `pip install` does, so no timed process compiles rabbitish
    from source. Returns how many modules there are."""
    import rabbitish.cli  # binds rabbitish too

    roots = [*rabbitish.__path__, *rabbitish.cli.__path__]
    for root in roots:
        if not compileall.compile_dir(root, quiet=1):
            raise SystemExit(f"could not compile {root}")
    return sum(1 for root in roots for _ in Path(root).rglob("*.py"))
