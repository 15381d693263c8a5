"""The memory high watermark end to end, on `rabbitish serve` in its own process (so its RSS is
the broker's alone): a fast publisher (no confirms) sends many more small transient messages than
fit under a small watermark. Small messages, because their memory is the broker's own objects,
which paging to disk cannot remove: the watermark must stop the publisher. The test checks that
the publisher got connection.blocked with RabbitMQ's reason, that the broker's peak RSS (VmHWM)
stayed within the watermark plus a sampling margin, that after a consumer drains the queue the
publisher is unblocked and finishes, and that every message arrived once, in order, intact."""

from __future__ import annotations

import threading
from pathlib import Path

import pika

from tests.support.broker_process import BrokerProcess
from tests.support.waiting import wait_until

MIB = 1024 * 1024
HEADROOM = 24 * MIB  # watermark above the idle broker's RSS
MARGIN = 16 * MIB  # allowed above the watermark: what arrives between two samples, and more
MESSAGES = 80_000  # ~40 MiB of broker objects: well past the headroom
BODY = 100


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def _body(i: int) -> bytes:
    return i.to_bytes(4, "big") * (BODY // 4)


def _idle_rss() -> int:
    """The RSS of a broker that has taken one connection and declared one queue."""
    with BrokerProcess() as broker:
        assert broker.proc is not None
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        conn.channel().queue_declare("probe")
        rss = _status(broker.proc.pid, "VmRSS")
        conn.close()
        return rss


class Publisher(threading.Thread):
    def __init__(self, url: str, queue: str) -> None:
        super().__init__(daemon=True)
        self.url, self.queue = url, queue
        self.events: list[str] = []
        self.error: BaseException | None = None
        self.sent = 0

    def run(self) -> None:
        try:
            conn = pika.BlockingConnection(pika.URLParameters(self.url))
            # On the connection's I/O callbacks, so they are heard while a publish is stuck
            # behind a broker that stopped reading.
            conn._impl.add_on_connection_blocked_callback(
                lambda _c, f: self.events.append(f"blocked:{f.method.reason}")
            )
            conn._impl.add_on_connection_unblocked_callback(
                lambda _c, _f: self.events.append("unblocked")
            )
            ch = conn.channel()
            for i in range(MESSAGES - 1):
                ch.basic_publish("", self.queue, _body(i))
                self.sent = i + 1
            confirmed = conn.channel()
            confirmed.confirm_delivery()
            confirmed.basic_publish("", self.queue, _body(MESSAGES - 1))  # after all the others
            self.sent = MESSAGES
            conn.close()
        except BaseException as err:  # reported by the test
            self.error = err


def test_a_fast_publisher_is_held_under_the_watermark_and_loses_nothing(uid):
    watermark = _idle_rss() + HEADROOM
    with BrokerProcess("--memory-high-watermark", str(watermark)) as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        conn = pika.BlockingConnection(pika.URLParameters(broker.url))
        ch = conn.channel()
        ch.queue_declare(uid)
        publisher = Publisher(broker.url, uid)
        publisher.start()
        wait_until(
            lambda: publisher.events or publisher.error,
            timeout=120,
            message=lambda: f"never blocked ({publisher.sent} sent)",
        )
        assert publisher.error is None
        assert publisher.events[0] == "blocked:low on memory"
        assert publisher.sent < MESSAGES  # held back while blocked

        ch.basic_qos(prefetch_count=500)
        expected = 0
        for method, _props, body in ch.consume(uid, inactivity_timeout=60):
            assert method is not None, f"stalled at {expected} ({publisher.events})"
            assert body == _body(expected)
            ch.basic_ack(method.delivery_tag)
            expected = expected + 1
            if expected == MESSAGES:
                break
        ch.cancel()
        publisher.join(timeout=60)
        assert publisher.error is None and publisher.sent == MESSAGES
        assert "unblocked" in publisher.events
        peak = _status(pid, "VmHWM")
        blocks = sum(e.startswith("blocked") for e in publisher.events)
        print(  # the figures docs/reliability.md quotes (pytest -s shows them)
            f"\nwatermark {watermark / MIB:.1f} MiB, peak RSS {peak / MIB:.1f} MiB, "
            f"{MESSAGES} messages, {blocks} blocks, RSS now {_status(pid, 'VmRSS') / MIB:.1f} MiB"
        )
        assert peak <= watermark + MARGIN, (peak / MIB, watermark / MIB)
        assert ch.queue_declare(uid, passive=True).method.message_count == 0
        conn.close()
