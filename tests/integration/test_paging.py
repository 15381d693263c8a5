"""Bodies of long durable queues leave memory once on disk and come back, in order and
byte-exact, when consumers reach them: after a restart and while running."""

from __future__ import annotations

import pika

from rabbitish.store.pager import RECOVERED_BODIES
from rabbitish.testing import running_broker

COUNT = RECOVERED_BODIES * 2 + 500
LIMIT = 32 * 1024  # page_out_bytes: COUNT bodies of 6-300 bytes are about 375 KiB
PERSISTENT = pika.BasicProperties(delivery_mode=2)


def _publish(url: str, queue: str, count: int, also: str | None = None) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue, durable=True)
    if also:
        ch.queue_declare(also)
        ch.exchange_declare("paging-fan", "fanout", durable=True)
        ch.queue_bind(queue, "paging-fan")
        ch.queue_bind(also, "paging-fan")
    ch.tx_select()
    for i in range(count):
        ch.basic_publish("paging-fan" if also else "", "" if also else queue, _body(i), PERSISTENT)
        if i % 500 == 499:
            ch.tx_commit()
    ch.tx_commit()
    conn.close()


def _body(i: int) -> bytes:
    return f"{i:06d}".encode() * (1 + i % 50)


def _drain(url: str, queue: str) -> list[bytes]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=300)
    bodies: list[bytes] = []
    for method, _props, body in ch.consume(queue, inactivity_timeout=2):
        if method is None:
            break
        bodies.append(body)
        ch.basic_ack(method.delivery_tag)
    conn.close()
    return bodies


def _paged(broker) -> int:
    return len(broker.journal.pager.paged)


def test_a_long_queue_of_small_bodies_within_the_byte_limit_keeps_them(tmp_path):
    """The bound is in bytes: COUNT small bodies stay in memory while they fit in it."""
    with running_broker(data_dir=str(tmp_path)) as broker:
        _publish(broker.url, "small", COUNT)
        assert _paged(broker) == 0
        assert _drain(broker.url, "small") == [_body(i) for i in range(COUNT)]
        assert broker.journal.pager.reads == 0


def test_bodies_stay_on_disk_after_restart(tmp_path):
    with running_broker(data_dir=str(tmp_path)) as broker:
        _publish(broker.url, "long", COUNT)
    with running_broker(data_dir=str(tmp_path)) as broker:
        assert _paged(broker) == COUNT - RECOVERED_BODIES
        assert _drain(broker.url, "long") == [_body(i) for i in range(COUNT)]
        assert broker.journal.pager.reads < COUNT / 100  # read ahead in runs, not one by one


def test_long_queue_pages_out_while_running(tmp_path):
    with running_broker(data_dir=str(tmp_path), page_out_bytes=LIMIT) as broker:
        _publish(broker.url, "live", COUNT)
        queue = broker.node.vhosts["/"].queues["live"]
        kept = sum(entry.message.size for entry in queue.ready if entry.message.in_memory)
        assert _paged(broker) > 0 and kept <= LIMIT + 300
        assert _drain(broker.url, "live") == [_body(i) for i in range(COUNT)]


def test_message_also_on_a_transient_queue_keeps_its_body(tmp_path):
    with running_broker(data_dir=str(tmp_path), page_out_bytes=LIMIT) as broker:
        _publish(broker.url, "durable-copy", COUNT, also="transient-copy")
        assert _drain(broker.url, "durable-copy") == [_body(i) for i in range(COUNT)]
        # The durable copies are acked and gone from disk; the transient queue still has all.
        assert _drain(broker.url, "transient-copy") == [_body(i) for i in range(COUNT)]


def _publish_big(url: str, queue: str, count: int, size: int) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue, durable=True)
    ch.confirm_delivery()
    for i in range(count):
        ch.basic_publish("", queue, f"{i:06d}".encode() * (size // 6), PERSISTENT)
    conn.close()


def test_a_queue_past_its_byte_limit_pages_out_large_bodies(tmp_path):
    """Few messages, but more bytes than page_out_bytes: past the limit, bodies leave memory;
    they come back in order, also after a restart."""
    count, size, limit = 200, 6 * 1024, 96 * 1024
    expected = [f"{i:06d}".encode() * (size // 6) for i in range(count)]
    with running_broker(data_dir=str(tmp_path), page_out_bytes=limit) as broker:
        _publish_big(broker.url, "big", count, size)
        _publish_big(broker.url, "big-restart", count, size)
        queue = broker.node.vhosts["/"].queues["big"]
        kept = sum(entry.message.in_memory for entry in queue.ready)
        assert kept <= limit // size + 2
        assert _drain(broker.url, "big") == expected
    with running_broker(data_dir=str(tmp_path), page_out_bytes=limit) as broker:
        assert _paged(broker) >= count - (limit // size + 1)
        assert _drain(broker.url, "big-restart") == expected
