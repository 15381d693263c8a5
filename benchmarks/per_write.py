"""The suite's per-message-write driver: the same scenarios as the pipelined one, driven by
amqp091-go, RabbitMQ's Go client (benchmarks/go_driver/main.go). It writes every frame of a
publish, every ack and every commit as its own socket write, as the Go and Java clients do,
so the broker reads one frame at a time where the pipelined driver hands it a thousand.

The program is built with `go` against Debian's golang-github-rabbitmq-amqp091-go-dev, offline
(the library's source is vendored into the build directory), into a cache directory keyed by
the sources, the library and the Go version; later runs reuse it. Without `go` or the library
`unavailable()` says why and the suite leaves this driver out.

Each scenario is one run of the program: it connects and sets up, says "ready", and the broker's
CPU time is read from /proc just before it is told to go and right after its result, so neither
the program's start nor the connection's handshake counts."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pika

from benchmarks.measure import Figure, cpu_seconds

SOURCE = Path(__file__).parent / "go_driver"
# Debian's golang-github-rabbitmq-amqp091-go-dev; RABBITISH_AMQP091_GO names another checkout.
LIBRARY = Path(
    os.environ.get("RABBITISH_AMQP091_GO", "/usr/share/gocode/src/github.com/rabbitmq/amqp091-go")
)
MODULE = "github.com/rabbitmq/amqp091-go"
MODULE_VERSION = "v1.5.0"  # as go.mod requires it; vendoring takes whatever source is installed
ACK_EVERY = 50  # tx_ack: acks per tx.commit, as issue 25's Go client measured it
PREFETCH = 100
CONFIRM_WINDOW = 100
RUN_TIMEOUT = 300.0

# scenario -> what it measures, in the suite's order and with the pipelined driver's names
SCENARIOS = {
    "tx_commit_1": "1 persistent msg per tx.commit, commits/s",
    "tx_commit_100": "100 persistent msgs per tx.commit, msgs/s",
    "tx_ack": f"consume in a tx, prefetch {PREFETCH}, commit per {ACK_EVERY} acks, msgs/s",
    "confirm_publish": f"persistent, confirm mode, at most {CONFIRM_WINDOW} unconfirmed, msgs/s",
    "publish_plain": "transient, no confirms, msgs/s",
    "consume_ack": f"transient, prefetch {PREFETCH}, an ack each, msgs/s",
    "latency_p50": "transient publish -> deliver round trip, us",
    "latency_p99": "transient publish -> deliver round trip, us",
}


class DriverUnavailable(RuntimeError):
    """`go` or the amqp091-go library is missing, or the build failed."""


def unavailable() -> str | None:
    """Why the driver cannot be built here, or None when it can."""
    if shutil.which("go") is None:
        return "`go` is not on PATH (apt-get install golang-go)"
    if not (LIBRARY / "go.mod").is_file():
        package = "golang-github-rabbitmq-amqp091-go-dev"
        return f"amqp091-go is not at {LIBRARY} (apt-get install {package})"
    return None


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rabbitish" / "go_driver"


def _build_key(go: str) -> str:
    """Sources, the library's sources and the Go version: any change builds anew."""
    digest = hashlib.sha256()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True)
    digest.update(version.stdout.encode())
    for path in sorted(SOURCE.iterdir()) + sorted(LIBRARY.glob("*.go")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(cache: Path | None = None) -> Path:
    """The driver's binary, built unless the cache has it for these sources."""
    reason = unavailable()
    if reason is not None:
        raise DriverUnavailable(reason)
    go = shutil.which("go")
    assert go is not None
    binary = (cache or _cache_root()) / _build_key(go) / "go-driver"
    if binary.is_file():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=binary.parent) as tmp:
        work = Path(tmp)
        for path in SOURCE.iterdir():
            shutil.copy(path, work / path.name)
        vendored = work / "vendor" / MODULE
        vendored.mkdir(parents=True)
        for path in LIBRARY.glob("*.go"):
            if not path.name.endswith("_test.go"):
                shutil.copy(path, vendored / path.name)
        (work / "vendor" / "modules.txt").write_text(
            f"# {MODULE} {MODULE_VERSION}\n## explicit; go 1.16\n{MODULE}\n"
        )
        env = {
            **os.environ,
            "GOFLAGS": "-mod=vendor",
            "GOPROXY": "off",
            "GO111MODULE": "on",
            "GOCACHE": str(binary.parent / "gocache"),
            "GOTOOLCHAIN": "local",
        }
        built = subprocess.run(
            [go, "build", "-o", str(work / "go-driver"), "."],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        if built.returncode != 0:
            raise DriverUnavailable(f"go build failed:\n{built.stdout}{built.stderr}")
        os.replace(work / "go-driver", binary)
    return binary


@dataclass
class Outcome:
    """One scenario's result: operations, seconds, the broker's CPU per operation (us, None
    without pids) and, for the latency scenario, the sorted round trips (us)."""

    count: int
    seconds: float
    cpu_us: float | None
    latencies_us: list[float]

    @property
    def figure(self) -> Figure:
        return self.count / self.seconds, self.cpu_us


class DriverProcess:
    """The program connected and set up for one scenario against one broker: `run()` runs the
    scenario (again, on the same connection, as often as asked) with the broker's CPU read
    around it; leaving the `with` block closes its stdin, which ends it."""

    def __init__(
        self, binary: Path, url: str, pids: list[int], scenario: str, **options: object
    ) -> None:
        self.argv = [str(binary), "-url", url, "-scenario", scenario]
        for name, value in options.items():
            self.argv += [f"-{name.replace('_', '-')}", str(value)]
        self.scenario = scenario
        self.pids = pids
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> DriverProcess:
        proc = self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        if proc.stdout.readline().strip() != "ready":
            self._end()
            raise RuntimeError(f"{self.scenario}: {proc.stderr.read() or 'no ready line'}")
        return self

    def __exit__(self, *_exc: object) -> None:
        self._end()

    def run(self) -> Outcome:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        before = cpu_seconds(self.pids)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        after = cpu_seconds(self.pids)
        if not line:
            assert proc.stderr is not None
            raise RuntimeError(f"{self.scenario}: {proc.stderr.read() or 'no result'}")
        result = json.loads(line)
        count = result["count"]
        return Outcome(
            count,
            result["seconds"],
            (after - before) / count * 1e6 if self.pids else None,
            sorted(result.get("latencies_us") or []),
        )

    def _end(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def run_scenario(
    binary: Path, url: str, pids: list[int], scenario: str, **options: object
) -> Outcome:
    """One run of the program: set up, then the measured part with the broker's CPU read
    around it."""
    with DriverProcess(binary, url, pids, scenario, **options) as driver:
        return driver.run()


def run_broker(binary: Path, url: str, pids: list[int], args: argparse.Namespace) -> dict:
    """The counted scenarios once against one broker, on a durable queue and a transient one
    (filled by publish_plain for consume_ack), both declared here and deleted after; counts as
    the suite's options say. tx_commit, tx_ack and latency are interleaved between the brokers
    (benchmarks/interleaved.py)."""
    messages, transient, body = args.messages, args.transient, args.body
    tag = uuid.uuid4().hex[:8]
    durable, plain = f"bench-go-durable-{tag}", f"bench-go-{tag}"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(durable, durable=True)
    ch.queue_declare(plain)

    def run(scenario: str, queue: str, **options: object) -> Outcome:
        return run_scenario(binary, url, pids, scenario, queue=queue, body=body, **options)

    results: dict[str, Figure] = {}
    try:
        results["confirm_publish"] = run(
            "confirm_publish", durable, messages=messages, window=CONFIRM_WINDOW
        ).figure
        results["publish_plain"] = run("publish_plain", plain, messages=transient).figure
        results["consume_ack"] = run(
            "consume_ack", plain, messages=transient, prefetch=PREFETCH
        ).figure
    finally:
        ch.queue_delete(durable)
        ch.queue_delete(plain)
        conn.close()
    return results
