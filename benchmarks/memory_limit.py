"""Memory under a transient backlog: `rabbitish serve` (its own process, :memory: data dir) with
a memory high watermark; one fast publisher sends `--mib` MiB of transient messages to a
transient queue without confirms, then the queue is drained by a consumer (or purged) and a
last message is published. Prints the broker's RSS (start, peak (VmHWM), after the fill, after
the drain or purge), whether and how often the publisher got connection.blocked, and whether
every message arrived intact.

    python -m benchmarks.memory_limit [--mib 200] [--body 65536] [--watermark 128MiB]
        [--paging-ratio 0.5] [--purge]
    python -m benchmarks.memory_limit --watermark 1.0 --paging-ratio 100   (no limit: baseline)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pika

from tests.support.broker_process import BrokerProcess

MIB = 1024 * 1024


def proc_status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def body_for(i: int, size: int) -> bytes:
    stamp = i.to_bytes(4, "big")
    return (stamp * (size // 4 + 1))[:size]


def fill(url: str, queue: str, count: int, size: int, blocked: list[str]) -> None:
    """Publish without confirms as fast as pika goes; blocked/unblocked events are recorded
    (on the I/O callbacks, so they are heard while a publish waits for the broker to read)."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    conn._impl.add_on_connection_blocked_callback(lambda _c, f: blocked.append(f.method.reason))
    conn._impl.add_on_connection_unblocked_callback(lambda _c, _f: blocked.append("unblocked"))
    ch = conn.channel()
    for i in range(count):
        ch.basic_publish("", queue, body_for(i, size))
    # Wait for the broker to have read it all (it may be blocked for a while).
    probe = pika.BlockingConnection(pika.URLParameters(url)).channel()
    while probe.queue_declare(queue, passive=True).method.message_count < count:
        conn.process_data_events(time_limit=0.1)
    probe.connection.close()
    conn.process_data_events(time_limit=0.2)
    conn.close()


def drain(url: str, queue: str, count: int, size: int) -> bool:
    """Consume everything; True if every message arrived once, in order, intact."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=200)
    ok = True
    got = 0
    for method, _props, body in ch.consume(queue, inactivity_timeout=30):
        if method is None:
            break
        ok = ok and body == body_for(got, size)
        got += 1
        ch.basic_ack(method.delivery_tag)
        if got == count:
            break
    ch.cancel()
    conn.close()
    return ok and got == count


def run(args: argparse.Namespace) -> dict[str, object]:
    count = args.mib * MIB // args.body
    queue = "memory-limit"
    flags = ["--memory-high-watermark", args.watermark]
    flags += ["--memory-paging-ratio", str(args.paging_ratio)]
    with BrokerProcess(*flags) as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        setup = pika.BlockingConnection(pika.URLParameters(broker.url))
        setup.channel().queue_declare(queue)
        start = proc_status(pid, "VmRSS")
        blocked: list[str] = []
        began = time.monotonic()
        fill(broker.url, queue, count, args.body, blocked)
        fill_seconds = time.monotonic() - began
        after_fill = proc_status(pid, "VmRSS")
        peak = proc_status(pid, "VmHWM")
        if args.purge:
            setup.channel().queue_purge(queue)
            intact = None
        else:
            intact = drain(broker.url, queue, count, args.body)
        time.sleep(3)  # let the broker's periodic trim run (a figure, not a test)
        after = proc_status(pid, "VmRSS")
        ch = setup.channel()
        ch.confirm_delivery()
        ch.basic_publish("", queue, b"after")  # publishing works again
        setup.close()
    return {
        "messages": count,
        "body": args.body,
        "watermark": args.watermark,
        "paging_ratio": args.paging_ratio,
        "rss_start_mib": round(start / MIB, 1),
        "rss_peak_mib": round(peak / MIB, 1),
        "rss_after_fill_mib": round(after_fill / MIB, 1),
        "rss_after_" + ("purge" if args.purge else "drain") + "_mib": round(after / MIB, 1),
        "blocked_events": len([b for b in blocked if b != "unblocked"]),
        "reasons": sorted(set(b for b in blocked if b != "unblocked")),
        "intact": intact,
        "fill_seconds": round(fill_seconds, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=200)
    p.add_argument("--body", type=int, default=65536)
    p.add_argument("--watermark", default="128MiB")
    p.add_argument("--paging-ratio", type=float, default=0.5)
    p.add_argument("--purge", action="store_true")
    for key, value in run(p.parse_args()).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
