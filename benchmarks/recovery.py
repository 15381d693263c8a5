"""Start-up with many persistent messages on disk: fills a data dir with N messages (default
100k, 1 KiB bodies) on durable queues, then starts `rabbitish serve` on it and prints the time
until it accepts AMQP connections and the process's resident memory once it does.

    python -m benchmarks.recovery [--messages 100000] [--body 1024] [--queues 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pika

from tests.support.broker_process import BrokerProcess


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fill(url: str, messages: int, body_size: int, queues: int) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    names = [f"recovery-{i}" for i in range(queues)]
    for name in names:
        ch.queue_declare(name, durable=True)
    ch.tx_select()
    body = b"x" * body_size
    props = pika.BasicProperties(delivery_mode=2, headers={"n": 1})
    for i in range(messages):
        ch.basic_publish("", names[i % queues], body, props)
        if i % 1000 == 999:
            ch.tx_commit()
    ch.tx_commit()
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--queues", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        with BrokerProcess("--fsync", "never", data_dir=data_dir) as broker:
            assert broker.proc is not None
            t0 = time.perf_counter()
            fill(broker.url, args.messages, args.body, args.queues)
            fill_s = time.perf_counter() - t0
            idle_rss = _rss_mib(broker.proc.pid)
            broker.stop()
            t0 = time.perf_counter()
            broker.start(timeout=600)
            startup = time.perf_counter() - t0
            rss = _rss_mib(broker.proc.pid)
            conn = pika.BlockingConnection(pika.URLParameters(broker.url))
            count = sum(
                conn.channel().queue_declare(f"recovery-{i}", passive=True).method.message_count
                for i in range(args.queues)
            )
            conn.close()
        db_mib = sum(f.stat().st_size for f in data_dir.iterdir()) / 2**20
    print(f"messages on disk:        {count:,} ({args.body} B bodies, {db_mib:,.0f} MiB data dir)")
    print(f"fill (tx of 1000):       {fill_s:.1f} s; RSS before restart {idle_rss:,.0f} MiB")
    print(f"start-up to first AMQP:  {startup:.2f} s")
    print(f"RSS after recovery:      {rss:,.0f} MiB")


if __name__ == "__main__":
    main()
