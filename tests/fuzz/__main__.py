"""The long fuzz run (`make fuzz`): every target of tests/fuzz/targets.py with many generated
inputs, each Hypothesis example followed by mutated variants of itself. Prints a line per
target and a summary; exits 1 on the first input that breaks an invariant (Hypothesis shrinks
it and prints it).

    python -m tests.fuzz [--inputs 1000000] [--mutants 9] [--report fuzz.json]
                         [--targets connection,content]   (a share of --inputs each)"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.fuzz.run import TARGETS, Tally, build, configured

# Share of the inputs per target: the cheap byte-level checks take most, the connection-level
# ones (a handshake per input) fewer.
WEIGHTS = {
    "frame_reader": 0.25,
    "field_table": 0.25,
    "amqp10_codec": 0.25,
    "connection": 0.12,
    "content": 0.07,
    "amqp10_connection": 0.06,
}
CHUNK = 2000  # examples per Hypothesis run: a fresh engine each time keeps memory flat


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--inputs", type=int, default=1_000_000, help="inputs in all")
    parser.add_argument("--mutants", type=int, default=9, help="variants per generated input")
    parser.add_argument("--report", help="write the figures here (JSON)")
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help="comma-separated, each with its share"
    )
    args = parser.parse_args()
    started = time.monotonic()
    figures = {}
    for name in args.targets.split(","):
        quota = int(args.inputs * WEIGHTS[name])
        tally = Tally(mutants=args.mutants)
        t0 = time.monotonic()
        while tally.inputs < quota:
            left = quota - tally.inputs
            examples = max(1, min(CHUNK, left // (args.mutants + 1) + 1))
            configured(build(name, tally), examples, shrink=True)()
        seconds = time.monotonic() - t0
        figures[name] = {
            "inputs": tally.inputs,
            "seconds": round(seconds, 1),
            "slowest_input_ms": round(tally.slowest * 1000, 2),
        }
        slowest = tally.slowest * 1000
        print(f"{name}: {tally.inputs} inputs in {seconds:.0f} s, slowest {slowest:.1f} ms")
        sys.stdout.flush()
    total = sum(f["inputs"] for f in figures.values())
    summary = {"inputs": total, "seconds": round(time.monotonic() - started, 1), "targets": figures}
    print(json.dumps(summary), flush=True)
    if args.report:
        with open(args.report, "w") as out:
            json.dump(summary, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
