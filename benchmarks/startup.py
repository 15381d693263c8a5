"""Start-up time: how long `rabbitish serve` takes to complete its first AMQP handshake and, after
that, to answer the management API; how long an embedded `rabbitish.Broker` takes to start;
what the first AMQP 1.0 connection pays to load the bridge; and, when installed, a RabbitMQ node
started the same way the differential tests start one.

    python -m benchmarks.startup [--runs 7]

`rabbitish serve` runs on an empty in-memory store with the management API on a port of its
own. The client polls: it connects every millisecond until a handshake completes, then asks
`/api/overview` until it answers 200. The broker's CPU time (user + system, from /proc) at each
of the two moments is printed too: on a machine busy with other work wall time stretches, CPU
time much less. Before timing, the benchmark writes the package's bytecode itself, as
`pip install` does: a start that compiles the sources (an editable checkout under
PYTHONDONTWRITEBYTECODE=1 never keeps them) measures the compiler, 70-80 ms more here."""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from benchmarks.measure import compile_bytecode
from tests.support.ports import ReservedPort
from tests.support.raw_amqp import RawClient
from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq

TICKS = os.sysconf("SC_CLK_TCK")
AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
POLL = 0.001

# In a fresh interpreter: import the broker, start one (no management API, as in tests), then
# the one-off cost of the first AMQP 1.0 connection (the bridge's import). Seconds, one a line.
EMBEDDED = """
import asyncio, time
started = time.perf_counter()
from rabbitish.app import Broker
imported = time.perf_counter()
async def main():
    broker = Broker(port=0, data_dir=":memory:")
    begin = time.perf_counter()
    await broker.start()
    ready = time.perf_counter()
    import rabbitish.server.amqp10
    bridge = time.perf_counter()
    await broker.stop()
    print(imported - started, ready - begin, bridge - ready, sep="\\n")
asyncio.run(main())
"""


@dataclass
class ServeStart:
    amqp: float  # seconds from the process's start to the first completed handshake
    management: float  # seconds from then to the first 200 from /api/overview
    amqp_cpu: float  # the broker's CPU seconds at those two moments
    management_cpu: float


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def serve_start() -> ServeStart:
    with ReservedPort() as amqp, ReservedPort() as http:
        argv = [sys.executable, "-m", "rabbitish", "serve", "--data-dir", ":memory:"]
        ports = ["--port", str(amqp.port), "--management-port", str(http.port)]
        started = time.monotonic()
        proc = subprocess.Popen(
            [*argv, *ports, "--prometheus-port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"amqp://guest:guest@127.0.0.1:{amqp.port}/%2F"
            while True:
                try:
                    RawClient(url, timeout=5).open().close()
                    break
                except (ConnectionRefusedError, ConnectionResetError):
                    time.sleep(POLL)
            amqp_ready, amqp_cpu = time.monotonic(), cpu_seconds(proc.pid)
            api = f"http://127.0.0.1:{http.port}/api/overview"
            while True:
                try:
                    with urllib.request.urlopen(
                        urllib.request.Request(api, headers=AUTH), timeout=5
                    ):
                        break
                except (urllib.error.URLError, ConnectionError):
                    time.sleep(POLL)
            api_ready, api_cpu = time.monotonic(), cpu_seconds(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    return ServeStart(amqp_ready - started, api_ready - amqp_ready, amqp_cpu, api_cpu - amqp_cpu)


def embedded_start() -> tuple[float, float, float]:
    done = subprocess.run(
        [sys.executable, "-c", EMBEDDED], capture_output=True, text=True, check=True
    )
    imported, started, bridge = (float(line) for line in done.stdout.split())
    return imported, started, bridge


def rabbitmq_start() -> float:
    started = time.monotonic()
    with real_rabbitmq() as node:
        RawClient(node.url, timeout=5).open().close()
        return time.monotonic() - started


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:6.0f} ms (min {min(values) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    compiled = compile_bytecode()
    serve_start()  # files in the page cache
    serves = [serve_start() for _ in range(args.runs)]
    embedded = [embedded_start() for _ in range(args.runs)]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {args.runs}")
    print(f"bytecode of {compiled} modules written first, as an install does")
    print(f"rabbitish serve: AMQP ready        {ms([s.amqp for s in serves])}", end="")
    print(f"   broker CPU {ms([s.amqp_cpu for s in serves])}")
    print(f"  management API ready after it    {ms([s.management for s in serves])}", end="")
    print(f"   broker CPU {ms([s.management_cpu for s in serves])}")
    print(f"rabbitish.Broker: import           {ms([e[0] for e in embedded])}")
    print(f"  start() to accepting             {ms([e[1] for e in embedded])}")
    print(f"  first AMQP 1.0 connection loads  {ms([e[2] for e in embedded])} (once)")
    if rabbitmq_available():
        theirs = rabbitmq_start()
        ours = statistics.median(s.amqp for s in serves)
        print(f"RabbitMQ: AMQP ready               {theirs * 1000:6.0f} ms (one start)")
        print(f"ratio                              {theirs / ours:6.1f}x faster")


if __name__ == "__main__":
    main()
