"""The long mixed soak (`python -m benchmarks.soak --mixed`): one broker with a durable data dir
and a low memory high watermark, under every kind of work and fault at once, for `--minutes`
(30 for the published figures; not part of the suite):

- 0-9-1 clients (pika): publisher confirms, transactions across two queues (some rolled back),
  half messages with status checks, prepared transactions that ack their input and publish an
  output; consumers on aio-pika; 1.0 clients (qpid-proton): transactions, some aborted;
- policies: soak.ttl has a message TTL and soak.len a length limit, both dead-lettering to
  soak.dead; a burst client fills memory past the watermark and drains it, again and again;
- client kills: every `--kill-every` seconds a random client process gets SIGKILL (and is
  started again); network faults: every `--fault-every` seconds the fault proxy, which every
  client but the checker and the burst client goes through, stalls, cuts mid-frame, trickles or
  vanishes (half-open) one connection, at a random byte or at a tx.commit, discharge or publish.

Every few seconds the broker's RSS, open file descriptors (/proc/PID/fd), memory alarm, the
confirm/commit rate and its p99 latency are sampled. At the end the producers stop, the
consumers drain every queue (status checks settle what killed producers left undecided), every
client closes, and the ledgers (benchmarks/mixed_ledger.py) must be exact, nothing left behind
(connections, channels, consumers, unacked, half or prepared messages), RSS and fds flat over the
last 20 minutes (or the last two thirds of a shorter run) and p99 steady. Flat: the least-squares
line through the samples of that window changes by less than max(5 % of the mean, 8 MiB) for
RSS and by at most 10 descriptors for fds across the window. Steady: the median p99 of the
window's last third is at most twice that of its first third plus 50 ms.

    python -m benchmarks.soak --mixed [--minutes 30] [--plot docs/images/mixed-soak.png]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.backlog import rss_bytes
from benchmarks.measure import process_tree
from benchmarks.mixed_ledger import Ledgers, check, totals
from rabbitish.engine.resources import parse_size
from tests.support import fault_proxy as fp
from tests.support.broker_process import BrokerProcess
from tests.support.ports import ReservedPort

MIB = 1024 * 1024
QUEUES = [
    "soak.confirm", "soak.tx.a", "soak.tx.b", "soak.half", "soak.prep.in", "soak.prep.out",
    "soak.amqp10", "soak.ttl", "soak.len", "soak.dead", "soak.burst",
]  # fmt: skip
PRODUCERS = ["confirm", "tx", "half", "amqp10", "ttl", "len"]
CONSUMED = ["soak.confirm", "soak.tx.a", "soak.tx.b", "soak.half", "soak.prep.out", "soak.amqp10"]
CONSUMED += ["soak.ttl", "soak.len", "soak.dead"]
DIRECT = {"checker", "burst"}  # not through the proxy, not killed: they keep the run settling


@dataclass
class Worker:
    kind: str
    argv: list[str]
    env: dict[str, str]
    errors: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        """Its stderr (why it ended, when not killed) goes to `errors`, for a look afterwards."""
        with open(self.errors, "ab") as errors:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdout=subprocess.DEVNULL, stderr=errors
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


@dataclass
class Sample:
    t: float
    rss: int
    fds: int
    rate: float
    p99: float
    alarm: bool


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    kills: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    fired: int = 0  # armed faults that met their trigger before the next one replaced them
    armed: fp.Fault | None = None
    offsets: dict[Path, int] = field(default_factory=dict)


def _api(management: str, path: str, method: str = "GET", body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        management + path,
        data=data,
        method=method,
        headers={
            "Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        raw = reply.read()
    return json.loads(raw) if raw else None


def _alarm(management: str) -> bool:
    try:
        _api(management, "/api/health/checks/local-alarms")
    except urllib.error.HTTPError as error:
        return error.code == 503
    return False


def _declare(url: str, management: str) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    channel = conn.channel()
    for queue in QUEUES:
        channel.queue_declare(queue, durable=queue != "soak.burst")
    channel.queue_declare("soak.checks", durable=True)
    channel.exchange_declare("soak.dlx", "fanout", durable=True)
    channel.queue_bind("soak.dead", "soak.dlx")
    conn.close()
    policies = {
        "soak-ttl": ("^soak\\.ttl$", {"message-ttl": 1000, "dead-letter-exchange": "soak.dlx"}),
        "soak-len": ("^soak\\.len$", {"max-length": 20, "dead-letter-exchange": "soak.dlx"}),
    }
    for name, (pattern, definition) in policies.items():
        body = {"pattern": pattern, "definition": definition, "apply-to": "queues"}
        _api(management, f"/api/policies/%2F/{name}", "PUT", body)


def _new_ledger_lines(run: Run, folder: Path) -> list[str]:
    lines: list[str] = []
    for path in folder.glob("*.log"):
        start = run.offsets.get(path, 0)
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        run.offsets[path] = start + end
        lines += data[:end].decode().splitlines()
    return lines


def _sample(run: Run, pids: list[int], folder: Path, management: str, began: float) -> None:
    latencies = []
    for line in _new_ledger_lines(run, folder):
        fields = line.split()
        if fields and fields[0] == "C" and len(fields) == 3:
            latencies.append(float(fields[2]))
    now = time.monotonic()
    since = run.samples[-1].t if run.samples else 0.0
    elapsed = max(now - began - since, 1e-3)
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 2 else 0.0
    try:
        fds = len(os.listdir(f"/proc/{pids[0]}/fd"))
    except OSError:
        fds = 0
    run.samples.append(
        Sample(now - began, rss_bytes(pids), fds, len(latencies) / elapsed, p99, _alarm(management))
    )


def _fault(proxy: fp.FaultProxy, rng: random.Random, run: Run) -> None:
    if run.armed is not None and run.armed.fired:
        run.fired += 1
    proxy.disarm()
    proxy.heal()
    action_name = rng.choice(["stall", "cut", "trickle", "vanish"])
    action = {
        "stall": lambda: fp.stall(rng.uniform(1, 4)),
        "cut": lambda: fp.cut(rng.randrange(0, 8)),
        "trickle": lambda: fp.trickle(0.002),
        "vanish": fp.vanish,
    }[action_name]()
    where = rng.choice(["bytes", "Tx.Commit", "discharge", "Basic.Publish", "transfer"])
    if where == "bytes":
        direction = rng.choice([fp.TO_BROKER, fp.TO_CLIENT])
        trigger = fp.after_bytes(direction, rng.randrange(1, 4000))
    elif where == "discharge":
        trigger = fp.on_frame(fp.TO_BROKER, fp.discharge())
    elif where == "transfer":
        trigger = fp.on_frame(fp.TO_BROKER, fp.performative("transfer"))
    else:
        trigger = fp.on_frame(fp.TO_BROKER, fp.method(where))
    run.armed = proxy.arm(trigger, action)
    key = f"{action_name} at {where}"
    run.faults[key] = run.faults.get(key, 0) + 1


def _settled(management: str) -> bool:
    """Every soak queue empty: nothing ready, unacked, half or prepared."""
    for queue in _api(management, "/api/queues"):
        if not queue["name"].startswith("soak.") or queue["name"] in ("soak.checks", "soak.burst"):
            continue
        counts = ("messages", "messages_unacknowledged", "messages_half", "messages_prepared")
        if any(queue.get(k, 0) for k in counts):
            return False
    return True


def _leftovers(management: str) -> dict[str, int]:
    queues = _api(management, "/api/queues")
    left = {
        "connections": len(_api(management, "/api/connections")),
        "channels": len(_api(management, "/api/channels")),
        "consumers": len(_api(management, "/api/consumers")),
    }
    # soak.burst is transient filler: a burst client killed while blocked has publishes in
    # its socket that the broker reads once the alarm clears, after the purge.
    counted = [q for q in queues if q["name"] not in ("soak.checks", "soak.burst")]
    for key in ("messages", "messages_unacknowledged", "messages_half", "messages_prepared"):
        left[key] = sum(q.get(key, 0) for q in counted)
    return left


def _slope_change(points: list[tuple[float, float]]) -> float:
    """How much the least-squares line through `points` changes across them."""
    if len(points) < 3:
        return 0.0
    ts = [t for t, _ in points]
    mean_t, mean_v = statistics.fmean(ts), statistics.fmean(v for _, v in points)
    var = sum((t - mean_t) ** 2 for t in ts)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / var if var else 0.0
    return slope * (ts[-1] - ts[0])


def _verdicts(run: Run, minutes: float) -> dict[str, Any]:
    length = minutes * 60
    window_start = max(length - 20 * 60, length / 3)
    window = [s for s in run.samples if s.t >= window_start]
    rss_change = _slope_change([(s.t, s.rss) for s in window])
    rss_mean = statistics.fmean(s.rss for s in window) if window else 0
    fd_change = _slope_change([(s.t, s.fds) for s in window])
    third = len(window) // 3 or 1
    p99_first = statistics.median(s.p99 for s in window[:third]) if window else 0.0
    p99_last = statistics.median(s.p99 for s in window[-third:]) if window else 0.0
    return {
        "window (s from start)": [round(window_start), round(length)],
        "RSS trend over window MiB": round(rss_change / MIB, 2),
        "RSS flat": abs(rss_change) < max(0.05 * rss_mean, 8 * MIB),
        "fd trend over window": round(fd_change, 1),
        "fds flat": abs(fd_change) <= 10,
        "p99 ms, window first third": round(p99_first, 1),
        "p99 ms, window last third": round(p99_last, 1),
        "p99 steady": p99_last <= 2 * p99_first + 50,
    }


def plot(run: Run, path: Path, watermark: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [s.t / 60 for s in run.samples]
    fig, (rss_ax, rate_ax) = plt.subplots(2, 1, figsize=(7, 4.2), sharex=True, dpi=80)
    rss_ax.plot(minutes, [s.rss / MIB for s in run.samples], color="tab:blue", lw=1)
    for s in run.samples:
        if s.alarm:
            rss_ax.axvline(s.t / 60, color="tab:red", alpha=0.15, lw=2)
    rss_ax.axhline(watermark / MIB, color="tab:red", ls="--", lw=0.8)
    rss_ax.set_ylabel("broker RSS (MiB)")
    rss_ax.set_title(
        "mixed soak: RSS (dashed: watermark; red: alarm on) and confirm/commit rate", fontsize=10
    )
    rate_ax.plot(minutes, [s.rate for s in run.samples], color="tab:green", lw=1)
    rate_ax.set_ylabel("confirmed/s")
    rate_ax.set_xlabel("minutes")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def _workers(ledger: Path, proxied: str, direct: str, env: dict[str, str]) -> list[Worker]:
    module = [sys.executable, "-m", "benchmarks.mixed_workers"]
    workers = []
    for kind in [*PRODUCERS, "prepared", "checker", "burst"]:
        url = direct if kind in DIRECT else proxied
        workers.append(Worker(kind, [*module, kind, str(ledger), url], env, ledger / f"{kind}.err"))
    for queue in CONSUMED:
        workers.append(
            Worker(
                "consume",
                [*module, f"consume-{queue}", str(ledger), proxied, queue],
                env,
                ledger / f"consume-{queue}.err",
            )
        )
    return workers


def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    env = {**os.environ, "SOAK_RATE": str(args.rate), "SOAK_BURST_MIB": str(args.burst_mib)}
    run = Run()
    with (
        tempfile.TemporaryDirectory(prefix="rabbitish-mixed-soak-") as scratch,
        ReservedPort() as mport,
    ):
        data = Path(scratch) / "data"
        ledger = Path(args.ledger_dir) if args.ledger_dir else Path(scratch) / "ledger"
        data.mkdir()
        ledger.mkdir(parents=True, exist_ok=True)
        mport.release()
        serve = ["--management-port", str(mport.port), "--memory-high-watermark", args.watermark]
        serve += ["--memory-paging-ratio", str(args.paging_ratio)]
        serve += ["--half-check-interval", "2", "--half-check-max", "1000"]
        with BrokerProcess(*serve, data_dir=data) as broker:
            assert broker.proc is not None and broker.port is not None
            management = f"http://127.0.0.1:{mport.port}"
            pids = process_tree(broker.proc.pid)
            _declare(broker.url, management)
            with fp.FaultProxy(broker.port) as proxy:
                heartbeat = "?heartbeat=5"
                workers = _workers(ledger, proxy.url(broker.url) + heartbeat, broker.url, env)
                result = _drive(args, rng, run, workers, proxy, pids, ledger, management)
            _api(management, "/api/queues/%2F/soak.burst/contents", "DELETE")  # transient filler
            left = _leftovers(management)
            deadline = time.monotonic() + 60
            while any(left.values()) and time.monotonic() < deadline:
                time.sleep(1)
                left = _leftovers(management)
            ledgers = Ledgers().read(ledger)
            problems = check(ledgers)
    summary: dict[str, Any] = {
        "minutes": args.minutes,
        "samples": len(run.samples),
        "client processes started": sum(w.starts for w in workers),
        "client kills (SIGKILL)": run.kills,
        "network faults armed": sum(run.faults.values()),
        "network faults fired": run.fired,
        "faults by kind": dict(sorted(run.faults.items())),
        "samples with the memory alarm on": sum(1 for s in run.samples if s.alarm),
        "memory alarm transitions": sum(
            1 for a, b in zip(run.samples, run.samples[1:], strict=False) if a.alarm != b.alarm
        ),
        "RSS min / max MiB": [
            round(min(s.rss for s in run.samples) / MIB, 1),
            round(max(s.rss for s in run.samples) / MIB, 1),
        ],
        "fds min / max": [min(s.fds for s in run.samples), max(s.fds for s in run.samples)],
        "rate mean /s": round(statistics.fmean(s.rate for s in run.samples), 1),
        **totals(ledgers),
        **result,
        **_verdicts(run, args.minutes),
        **{f"left: {k}": v for k, v in left.items()},
        **{f"ledger {k}": len(v) for k, v in problems.items()},
    }
    print(json.dumps(summary, indent=2))
    for rule, ids in problems.items():
        for line in ids[:10]:
            print(f"{rule}: {line}")
    if args.plot:
        plot(run, Path(args.plot), parse_size(args.watermark))
        print(f"plot: {args.plot}")
    if args.samples:
        Path(args.samples).write_text(json.dumps([s.__dict__ for s in run.samples]))
    ok = not any(problems.values()) and not any(left.values()) and result["settled"]
    ok = ok and summary["RSS flat"] and summary["fds flat"] and summary["p99 steady"]
    return 0 if ok else 1


def _drive(
    args: argparse.Namespace,
    rng: random.Random,
    run: Run,
    workers: list[Worker],
    proxy: fp.FaultProxy,
    pids: list[int],
    ledger: Path,
    management: str,
) -> dict[str, Any]:
    """The timed part, then the drain: returns whether every queue settled and how long it took."""
    for worker in workers:
        worker.start()
    began = time.monotonic()
    end = began + args.minutes * 60
    next_sample = began + args.sample_every
    next_kill = began + args.kill_every
    next_fault = began + args.fault_every
    killable = [w for w in workers if w.kind not in DIRECT]
    while time.monotonic() < end:
        time.sleep(0.2)
        now = time.monotonic()
        for worker in workers:
            if not worker.alive():
                worker.start()
        if now >= next_kill:
            rng.choice(killable).kill()
            run.kills += 1
            next_kill = now + args.kill_every
        if now >= next_fault:
            _fault(proxy, rng, run)
            next_fault = now + args.fault_every
        if now >= next_sample:
            _sample(run, pids, ledger, management, began)
            next_sample = now + args.sample_every
    proxy.disarm()
    proxy.heal()
    for worker in workers:
        if worker.kind in PRODUCERS or worker.kind == "burst":
            worker.kill()
    drain_start = time.monotonic()
    settled = False
    while time.monotonic() < drain_start + args.drain_timeout:
        for worker in workers:
            if worker.kind not in PRODUCERS and worker.kind != "burst" and not worker.alive():
                worker.start()
        if _settled(management):
            settled = True
            break
        time.sleep(1)
    time.sleep(2)  # the last deliveries' ledger lines
    for worker in workers:
        if worker.alive():
            assert worker.proc is not None
            worker.proc.send_signal(signal.SIGTERM)
            try:
                worker.proc.wait(10)
            except subprocess.TimeoutExpired:
                worker.kill()
    return {"settled": settled, "drain seconds": round(time.monotonic() - drain_start, 1)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak --mixed", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="transactions/s per producer")
    parser.add_argument("--kill-every", type=float, default=6.0, help="seconds between kills")
    parser.add_argument("--fault-every", type=float, default=4.0, help="seconds between faults")
    parser.add_argument("--sample-every", type=float, default=5.0)
    parser.add_argument("--watermark", default="80MiB", help="--memory-high-watermark")
    parser.add_argument("--paging-ratio", type=float, default=5.0, help="--memory-paging-ratio")
    parser.add_argument("--burst-mib", type=int, default=80, help="MiB per memory burst")
    parser.add_argument("--drain-timeout", type=float, default=180.0)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--ledger-dir", help="keep the ledgers (and client errors) here")
    parser.add_argument("--plot", help="write a PNG of RSS and rate over time here")
    parser.add_argument("--samples", help="write the samples as JSON here")
    return soak(parser.parse_args(argv))
