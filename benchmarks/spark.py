"""The `amqp` Spark data source (rabbitish.spark) moving N messages, next to a plain pika loop
moving the same messages: rows/s for a batch write, a streaming write and a streaming read. One
local Spark session (local[2]) serves every broker; each Spark figure includes Spark's own
job and micro-batch overheads, as a user's job would.

    python -m benchmarks.spark [--rows 100000] [--body 100] [--prefetch N] [--progress]
                               [--cpu-split] [--read-only] [--repeat 3] [--only rabbitish]
                               [--url URL]

Each of --repeat rounds (default 3) runs every scenario on fresh brokers; the table gives the
medians of the rates, and each Spark scenario's ratio to its pika loop within each round with
their median.

--progress prints where each streaming query's time went, micro-batch by micro-batch (Spark's
durationMs); the load average is printed before and after each broker's run, and after each
scenario the CPU it cost per row: the broker's, and this process tree's (the pika loop or the
Spark driver, JVM and Python workers, reaped workers included): figures load distorts less
than rates. --cpu-split splits the streaming read's CPU by process (the JVM by thread group,
the source's planner process, the tasks' Python workers, this driver, the broker), before its
first micro-batch, within each micro-batch and between them. --read-only skips the streaming
write (the batch write stays: it fills the read's queue).

Needs the spark extra (pip install -e '.[spark]') and Java 17 or 21.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import statistics
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika

from benchmarks.measure import compile_bytecode, cpu_seconds, print_table, process_tree
from benchmarks.side_by_side import add_broker_options, side_by_side
from rabbitish.spark.options import DEFAULT_PREFETCH

SCENARIOS = (
    "pika publish loop (1 tx)",
    "spark batch write",
    "spark streaming write",
    "pika consume loop (tx acks)",
    "spark streaming read",
)


def session() -> Any:
    from tests.support.spark import local_session

    return local_session("local[2]", "rabbitish-bench")


def timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# Each Spark scenario against the pika loop moving the same messages in the same round.
RATIOS = (
    ("spark batch write", "pika publish loop (1 tx)"),
    ("spark streaming write", "pika publish loop (1 tx)"),
    ("spark streaming read", "pika consume loop (tx acks)"),
)


def run_query(writer: Any, started: list[Any]) -> float:
    """Start a streaming query and wait for its end (Trigger.AvailableNow): seconds; the
    query is appended to `started`."""
    start = time.perf_counter()
    started.append(writer.start())
    started[-1].awaitTermination()
    return time.perf_counter() - start


def fresh_queue(url: str) -> str:
    name = f"bench-spark-{uuid.uuid4().hex[:8]}"
    with _channel(url) as ch:
        ch.queue_declare(name, durable=True)
    return name


class _channel:
    """A channel on its own connection, closed on exit."""

    def __init__(self, url: str) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))

    def __enter__(self) -> Any:
        return self.conn.channel()

    def __exit__(self, *_: object) -> None:
        self.conn.close()


def depth(url: str, queue: str) -> int:
    with _channel(url) as ch:
        return ch.queue_declare(queue, passive=True).method.message_count


def drop(url: str, queue: str) -> None:
    with _channel(url) as ch:
        ch.queue_delete(queue)


def pika_publish(url: str, queue: str, rows: int, body: bytes) -> None:
    """What a task of the connector does, by hand: persistent messages, one tx."""
    with _channel(url) as ch:
        ch.tx_select()
        props = pika.BasicProperties(delivery_mode=2)
        for _ in range(rows):
            ch.basic_publish("", queue, body, props)
        ch.tx_commit()


def pika_consume(url: str, queue: str, rows: int, batch: int) -> None:
    """What the streaming reader does, by hand: a tx consumer, acks committed per batch."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=batch)
    ch.tx_select()
    for taken, (method, _props, _body) in enumerate(ch.consume(queue), 1):
        if taken % batch == 0 or taken == rows:
            ch.basic_ack(method.delivery_tag, multiple=True)
            ch.tx_commit()
        if taken == rows:
            break
    ch.cancel()
    conn.close()


def bodies(spark: Any, rows: int, size: int) -> Any:
    from pyspark.sql import functions as F

    padded = F.rpad(F.format_string("m%d", "id"), size, ".")
    return spark.range(rows, numPartitions=2).select(padded.alias("body"))


def client_cpu(broker: list[int]) -> float:
    """CPU seconds of this process and its descendants but the broker, reaped ones included
    (their time is in their parents' cutime and cstime)."""
    total = 0
    for pid in process_tree(os.getpid()):
        if pid in broker:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += sum(int(field) for field in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def costed(name: str, rows: int, broker: list[int], run: Callable[[], float]) -> float:
    """rows/s of `run()` (which returns seconds), printing the CPU per row it cost."""
    broker_before, client_before = cpu_seconds(broker), client_cpu(broker)
    seconds = run()
    broker_us = (cpu_seconds(broker) - broker_before) / rows * 1e6
    client_us = (client_cpu(broker) - client_before) / rows * 1e6
    print(
        f"{name}: {rows / seconds:,.0f} rows/s; CPU per row: broker {broker_us:.1f} us, "
        f"client {client_us:.1f} us",
        flush=True,
    )
    return rows / seconds


_TICKS = os.sysconf("SC_CLK_TCK")


def _times(stat: Path) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds from a /proc stat file."""
    text = stat.read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS, (
        int(fields[13]) + int(fields[14])
    ) / _TICKS


def process_kind(pid: int) -> str:
    """What a process of this tree is, from its command line."""
    if pid == os.getpid():
        return "benchmark driver"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    line = b" ".join(argv).decode(errors="replace")
    if os.path.basename(argv[0].decode(errors="replace")) == "java":
        return "jvm"
    if "python_streaming_source_runner" in line:
        return "source runner"
    if "pyspark.daemon" in line or "pyspark.worker" in line:
        return "python workers"
    if "pyspark" in line:
        return "python planners"
    return "other"


def _command(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(a.decode(errors="replace") for a in argv)[:160]


def thread_group(name: str) -> str:
    """A JVM thread's name (15 characters, from /proc) without its number."""
    return re.sub(r"[#\-\s]*\d+$", "", name.strip()) or name


class CpuSplit:
    """Samples, every INTERVAL seconds while a scenario runs, the CPU time of this process tree
    by kind of process (the JVM by thread group) and of the broker, so that the scenario's CPU
    can be split by process and by micro-batch. A process's CPU counts from its first sample
    (from 0 if it started after the first one); the tail of a process reaped between two
    samples, and processes too short-lived to be seen, show as "unattributed"."""

    INTERVAL = 0.2

    def __init__(self, broker: list[int]) -> None:
        self.broker = broker
        self.samples: list[tuple[float, dict[str, float]]] = []  # epoch seconds, cumulative
        self._first: dict[tuple[int, int], float] = {}  # (pid, tid or 0) -> CPU at first sight
        self._last: dict[tuple[int, int], tuple[str, float]] = {}  # -> (kind, CPU last seen)
        self._commands: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-split", daemon=True)
        self._start_total = 0.0
        self._total = 0.0

    def __enter__(self) -> CpuSplit:
        self._start_total = client_cpu(self.broker)
        self._sample(first=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self._total = client_cpu(self.broker) - self._start_total

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self._sample()

    def _sample(self, first: bool = False) -> None:
        now = time.time()
        for pid in process_tree(os.getpid()):
            if pid in self.broker:
                continue
            kind = self._last.get((pid, 0), (None, 0.0))[0] or process_kind(pid)
            if pid not in self._commands:
                self._commands[pid] = _command(pid)
            try:
                own, _children = _times(Path(f"/proc/{pid}/stat"))
            except (OSError, ValueError):
                continue
            self._seen((pid, 0), kind, own, first)
            if kind == "jvm":
                for task in Path(f"/proc/{pid}/task").glob("*"):
                    try:
                        name = (task / "comm").read_text()
                        cpu, _ = _times(task / "stat")
                    except (OSError, ValueError):
                        continue
                    self._seen((pid, int(task.name)), "jvm: " + thread_group(name), cpu, first)
        totals: dict[str, float] = defaultdict(float)
        for key, (kind, cpu) in self._last.items():
            totals[kind] += cpu - self._first[key]
        totals["broker"] = cpu_seconds(self.broker) if self.broker else 0.0
        self.samples.append((now, dict(totals)))

    def _seen(self, key: tuple[int, int], kind: str, cpu: float, first: bool) -> None:
        if key not in self._first:
            self._first[key] = cpu if first else 0.0
        self._last[key] = (kind, cpu)

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by kind between two epoch times (the nearest samples)."""

        def at(when: float) -> dict[str, float]:
            return min(self.samples, key=lambda sample: abs(sample[0] - when))[1]

        before, after = at(start), at(end)
        return {kind: after.get(kind, 0.0) - before.get(kind, 0.0) for kind in after}

    def report(self, query: Any, rows: int) -> Iterator[str]:
        """Lines: the whole scenario by process (the JVM by its busiest thread groups), then
        its phases: the query's start, each micro-batch, the gaps between them."""
        whole = self.between(self.samples[0][0], self.samples[-1][0])
        processes = {k: v for k, v in whole.items() if not k.startswith("jvm: ")}
        attributed = sum(v for k, v in processes.items() if k != "broker")
        processes["unattributed"] = self._total - attributed
        yield (
            "CPU (s) by process: "
            + _cpu_line(processes)
            + "; per row (us): "
            + ", ".join(f"{k} {v / rows * 1e6:.1f}" for k, v in processes.items() if v >= 0.005)
        )
        threads = sorted(
            ((k[5:], v) for k, v in whole.items() if k.startswith("jvm: ")), key=lambda kv: -kv[1]
        )
        shown = dict(threads[:12])
        shown["other threads"] = sum(v for _, v in threads[12:])
        yield "JVM CPU (s) by thread group: " + _cpu_line(shown)
        for (pid, tid), (kind, cpu) in self._last.items():
            if tid == 0 and kind not in ("jvm", "benchmark driver"):
                used = cpu - self._first[(pid, tid)]
                yield f"  process {pid} ({kind}): {used:.2f} s: {self._commands.get(pid, '')}"
        begin = self.samples[0][0]
        for batch in query.recentProgress:
            started = dt.datetime.fromisoformat(batch["timestamp"].replace("Z", "+00:00"))
            start = started.timestamp()
            end = start + batch["durationMs"].get("triggerExecution", 0) / 1000
            if start > begin + self.INTERVAL:
                yield f"  before batch {batch['batchId']}: {start - begin:.2f} s; " + _cpu_line(
                    _processes(self.between(begin, start))
                )
            yield (
                f"  batch {batch['batchId']} ({batch['numInputRows']} rows): {end - start:.2f} s; "
                + _cpu_line(_processes(self.between(start, end)))
            )
            begin = end
        end = self.samples[-1][0]
        yield f"  after the last batch: {end - begin:.2f} s; " + _cpu_line(
            _processes(self.between(begin, end))
        )


def _processes(split: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in split.items() if not k.startswith("jvm: ")}


def _cpu_line(split: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in split.items() if abs(v) >= 0.005) or "-"


def load() -> str:
    return "load average " + " ".join(f"{n:.2f}" for n in os.getloadavg())


def progress(query: Any) -> None:
    """Each micro-batch's rows and Spark's durationMs (ms), in the order Spark reports them."""
    for batch in query.recentProgress:
        durations = " ".join(f"{k}={v}" for k, v in batch["durationMs"].items())
        print(f"  batch {batch['batchId']}: {batch['numInputRows']} rows; {durations}")


def run_broker(url: str, pids: list[int], args: argparse.Namespace) -> dict[str, float]:
    """The pika loops use the stream reader's batch size: `--prefetch`, else its default."""
    spark, rows, body = args.spark, args.rows, b"x" * args.body
    batch = args.prefetch or DEFAULT_PREFETCH
    rates: dict[str, float] = {}
    print(f"{url.rsplit('@', 1)[-1]}: {load()}", flush=True)

    queue = fresh_queue(url)
    warm_up(spark, url, queue)
    rates[SCENARIOS[0]] = costed(
        SCENARIOS[0], rows, pids, lambda: timed(lambda: pika_publish(url, queue, rows, body))
    )
    assert depth(url, queue) == rows
    rates[SCENARIOS[3]] = costed(
        SCENARIOS[3], rows, pids, lambda: timed(lambda: pika_consume(url, queue, rows, batch))
    )
    drop(url, queue)

    queue = fresh_queue(url)
    frame = bodies(spark, rows, args.body)
    writer = frame.write.format("amqp").option("url", url).option("routingKey", queue)
    rates[SCENARIOS[1]] = costed(
        SCENARIOS[1], rows, pids, lambda: timed(lambda: writer.mode("append").save())
    )
    assert depth(url, queue) == rows

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as work:
        stream = stream_read(spark, url, queue, str(Path(work, "read")), args.prefetch)
        started: list[Any] = []
        split = CpuSplit(pids)
        with split if args.cpu_split else contextlib.nullcontext():
            rates[SCENARIOS[4]] = costed(
                SCENARIOS[4], rows, pids, lambda: run_query(stream, started)
            )
        if args.progress:
            print("spark streaming read:")
            progress(started[0])
        if args.cpu_split:
            print("spark streaming read, CPU (this driver's includes the sampling):")
            for line in split.report(started[0], rows):
                print(line)
        assert depth(url, queue) == 0
        drop(url, queue)
        if args.read_only:
            print(f"{url.rsplit('@', 1)[-1]}: {load()}", flush=True)
            return rates

        source = str(Path(work, "parquet"))
        bodies(spark, rows, args.body).write.parquet(source)
        queue = fresh_queue(url)
        query = (
            spark.readStream.schema("body string")
            .parquet(source)
            .writeStream.format("amqp")
            .option("url", url)
            .option("routingKey", queue)
            .option("checkpointLocation", str(Path(work, "write")))
            .trigger(availableNow=True)
        )
        started.clear()
        rates[SCENARIOS[2]] = costed(SCENARIOS[2], rows, pids, lambda: run_query(query, started))
        if args.progress:
            print("spark streaming write:")
            progress(started[0])
        assert depth(url, queue) == rows
        drop(url, queue)
    print(f"{url.rsplit('@', 1)[-1]}: {load()}", flush=True)
    return rates


def stream_read(spark: Any, url: str, queue: str, checkpoint: str, prefetch: int | None) -> Any:
    """The streaming read of `queue` into Spark's noop sink, Trigger.AvailableNow, not started.
    The reader gets the checkpoint too: on RabbitMQ it keeps its write-ahead log there."""
    source = spark.readStream.format("amqp").option("url", url).option("queue", queue)
    if prefetch:
        source = source.option("prefetch", prefetch)
    return (
        source.option("checkpointLocation", checkpoint)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
    )


def warm_up(spark: Any, url: str, queue: str) -> None:
    """Spark's first jobs pay for starting Python workers, not the connector's cost: a batch
    write starts the tasks' workers, and a streaming read of 1,000 messages the daemon that
    runs PySpark's read planner (started once per application, on the first streaming read of
    a Python data source: about 1 s of CPU here, PySpark importing itself). Each measured
    query still starts its own source runner process, as every query does."""

    bodies(spark, 1000, 10).write.format("amqp").option("url", url).option(
        "routingKey", queue
    ).mode("append").save()
    with tempfile.TemporaryDirectory(prefix="bench-spark-warm-") as work:
        query = stream_read(spark, url, queue, work, None).start()
        query.awaitTermination()
    assert depth(url, queue) == 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--body", type=int, default=100, help="body size in bytes")
    parser.add_argument(
        "--prefetch",
        type=int,
        help=f"stream read batch bound (the reader's default: {DEFAULT_PREFETCH})",
    )
    parser.add_argument("--progress", action="store_true", help="per micro-batch durations")
    parser.add_argument(
        "--cpu-split", action="store_true", help="the streaming read's CPU by process and phase"
    )
    parser.add_argument(
        "--read-only", action="store_true", help="skip the streaming write scenario"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds, each on fresh brokers, one broker after the other (default 3): medians",
    )
    add_broker_options(parser)
    args = parser.parse_args()
    compile_bytecode()  # Spark's Python processes import the connector as installed
    args.spark = session()
    rounds = []
    for number in range(1, args.repeat + 1):
        if args.repeat > 1:
            print(f"round {number} of {args.repeat}", flush=True)
        rounds.append(side_by_side(args, run_broker))
    names = list(rounds[0])
    table = [["rows/s (median)", *names]]
    for scenario in SCENARIOS:
        if all(scenario in rounds[0][name] for name in names):
            medians = [statistics.median(r[name][scenario] for r in rounds) for name in names]
            table.append([scenario, *(f"{m:,.0f}" for m in medians)])
    for spark_scenario, loop in RATIOS:
        if all(spark_scenario in rounds[0][name] for name in names):
            cells = []
            for name in names:
                each = [r[name][spark_scenario] / r[name][loop] for r in rounds]
                listed = ", ".join(f"{x:.2f}" for x in each)
                cells.append(
                    f"{statistics.median(each):.2f}x" + (f" ({listed})" if len(each) > 1 else "")
                )
            table.append([f"{spark_scenario} / {loop}", *cells])
    print(
        f"{args.rows:,} messages of {args.body} bytes; Spark local[2]; {len(rounds)} round(s), "
        f"medians, ratios within each round; {load()}"
    )
    print_table(table)
    args.spark.stop()


if __name__ == "__main__":
    main()
