"""Start-up time: from starting the process to the first completed AMQP handshake, for
`rabbitish serve` on an empty in-memory store (median of several starts) and, when installed,
a RabbitMQ node started the same way the differential tests start one.

    python -m benchmarks.startup [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import RawClient
from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq


def rabbitish_start() -> float:
    started = time.monotonic()
    with BrokerProcess() as broker:
        RawClient(broker.url, timeout=5).open().close()
        return time.monotonic() - started


def rabbitmq_start() -> float:
    started = time.monotonic()
    with real_rabbitmq() as node:
        RawClient(node.url, timeout=5).open().close()
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    ours = statistics.median(rabbitish_start() for _ in range(args.runs))
    print(f"rabbitish        {ours * 1000:8.0f} ms to the first handshake (median of {args.runs})")
    if rabbitmq_available():
        theirs = rabbitmq_start()
        print(f"RabbitMQ         {theirs * 1000:8.0f} ms to the first handshake (one start)")
        print(f"ratio            {theirs / ours:8.1f}x faster")


if __name__ == "__main__":
    main()
