"""`python -m compat_matrix` (what `make compat` runs): both brokers, every scenario, the table.

Exits 1 when a difference is not in expected_differences.toml, when a scenario fails on the
reference, when the reference records a scenario differently in two runs (unstable), or when an
allowance names no scenario."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from compat_matrix.matrix import REFERENCE_PASSES, MatrixRun, run_matrix, select, url_target
from compat_matrix.report import DOC_PATH, render, summary


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m compat_matrix", description=__doc__)
    p.add_argument("-k", dest="pattern", help="only scenarios whose key contains this")
    p.add_argument("--docs", type=Path, default=DOC_PATH, help="where to write the table")
    p.add_argument("--no-docs", action="store_true", help="do not write the table")
    p.add_argument("--results", type=Path, help="write each target's records (JSON) here")
    p.add_argument("--ours", help="URL of a running rabbitish (no restart scenarios)")
    p.add_argument("--reference", help="URL of a running RabbitMQ (no restart scenarios)")
    p.add_argument(
        "--reference-runs",
        type=int,
        default=REFERENCE_PASSES,
        metavar="N",
        help=f"run every scenario N times on RabbitMQ to check its records are stable "
        f"(default {REFERENCE_PASSES}; 1 skips the check)",
    )
    p.add_argument("--list", action="store_true", help="list scenarios and their features")
    return p


def _write_results(run: MatrixRun, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for name, results in run.raw.items():
        records = {key: result.record for key, result in results.items()}
        (where / f"{name}.json").write_text(json.dumps(records, indent=1, ensure_ascii=False))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    scenarios = select(args.pattern)
    if args.reference_runs < 1:
        print("--reference-runs needs at least 1", file=sys.stderr)
        return 2
    if args.list:
        for s in scenarios:
            print(f"{s.key:60} {', '.join(s.features)}")
        print(f"{len(scenarios)} scenarios")
        return 0
    factories = None
    if args.ours or args.reference:
        if not (args.ours and args.reference):
            print("--ours and --reference go together", file=sys.stderr)
            return 2
        factories = (
            functools.partial(url_target, "rabbitish", args.ours),
            functools.partial(url_target, "RabbitMQ", args.reference),
        )
    passes = args.reference_runs
    if factories:
        run = run_matrix(scenarios, factories=factories, reference_passes=passes)
    else:
        run = run_matrix(scenarios, reference_passes=passes)
    print(summary(run.comparisons))
    print(f"matrix run took {run.seconds:.1f} s")
    if args.results:
        _write_results(run, args.results)
    complete = args.pattern is None and factories is None
    if complete and not args.no_docs:
        args.docs.write_text(render(run.comparisons, run.versions, run.reference_passes))
        print(f"wrote {args.docs}")
    for name in run.stale:
        print(f"expected_differences.toml names no scenario: {name}", file=sys.stderr)
    failed = bool(run.unexpected or run.reference_failures or run.unstable or run.stale)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
