"""`python -m benchmarks.profile`: the top of a py-spy profile of `rabbitish serve` while one
transient scenario runs, so a change to the hot path can show its profile before and after.

It starts rabbitish (`:memory:`) in its own process, attaches `py-spy record` (raw output, the
sampling rate given) for the scenario's duration, and prints the functions with the largest
share of the samples taken in the event loop thread, by own time (any function) and including
callees (the broker's own functions). py-spy
must be on PATH (`pip install py-spy`; it needs ptrace, so run as root or with ptrace allowed).

    python -m benchmarks.profile [--scenario publish_plain|latency] [--messages N] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pamqp import commands

from benchmarks import transient
from benchmarks.interleaved import RawRoundTrips
from benchmarks.wire import open_channel
from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import RawClient

LOOP_FRAME = "BaseEventLoop._run_once"  # samples under it are the event loop thread's


def run_scenario(url: str, scenario: str, messages: int) -> None:
    with RawClient(url).open() as client:
        if scenario == "latency":
            RawRoundTrips(client, 100, messages).run()
            return
        open_channel(client)
        client.send_method(1, commands.Queue.Declare(queue="", exclusive=True))
        queue = client.expect("Queue.DeclareOk").queue
        transient.publish_plain(client, queue, messages, 100)


def tops(raw: Path, count: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(own, inclusive) shares of the loop thread's samples, largest first."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = stack.split(";")
        if not any(LOOP_FRAME in frame for frame in frames):
            continue
        n = int(samples)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            if "rabbitish/" in frame and "__main__" not in frame:  # the broker's own code
                inclusive[frame] += n
    if not total:
        return [], []

    def share(counter: collections.Counter[str]) -> list[tuple[str, float]]:
        return [(name, n * 100 / total) for name, n in counter.most_common(count)]

    return share(own), share(inclusive)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--scenario", choices=["publish_plain", "latency"], default="latency")
    parser.add_argument("--messages", type=int, default=20_000, help="messages or round trips")
    parser.add_argument("--rate", type=int, default=1000, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        sys.exit("py-spy is not on PATH: pip install py-spy")
    with tempfile.TemporaryDirectory() as tmp, BrokerProcess() as broker:
        assert broker.proc is not None
        run_scenario(broker.url, args.scenario, 2000)  # warm up before sampling
        raw = Path(tmp) / "profile.txt"
        record = [spy, "record", "-r", str(args.rate), "-f", "raw", "-o", str(raw)]
        proc = subprocess.Popen(
            [*record, "-p", str(broker.proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # py-spy attaches
        run_scenario(broker.url, args.scenario, args.messages)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        own, inclusive = tops(raw, args.top)
    print(f"py-spy, {args.scenario}, {args.messages} messages, event loop thread samples\n")
    for title, rows in (("own time", own), ("including callees", inclusive)):
        print(f"| {title} | share |\n|---|---|")
        for name, pct in rows:
            print(f"| `{name}` | {pct:.1f}% |")
        print()


if __name__ == "__main__":
    main()
