"""The resource limit rules without sockets: sizes and watermarks read as RabbitMQ reads them,
alarm reasons joined as RabbitMQ joins them, and the monitor's decisions on given RSS and disk
readings (paging from the paging threshold, the memory alarm above the watermark, the disk
alarm under the free limit, each cleared when the reading recovers)."""

from __future__ import annotations

import pytest

from rabbitish.engine.alarms import Alarms
from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.errors import MAX_MESSAGE_SIZE, message_too_large
from rabbitish.engine.resources import Probes, ResourceMonitor, parse_size, parse_watermark

MiB = 1024 * 1024


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("100000", 100000),
        ("50MB", 50_000_000),
        ("512MiB", 512 * MiB),
        ("512M", 512 * MiB),
        ("1GB", 10**9),
        ("2GiB", 2 * 1024 * MiB),
        ("8kB", 8000),
        ("8k", 8192),
    ],
)
def test_sizes_read_as_rabbitmq_reads_information_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "12 apples", "-5MB", "1.5GB", "MB"])
def test_a_bad_size_is_refused(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_a_watermark_is_a_fraction_of_memory_or_a_size():
    assert parse_watermark("0.4", 1000 * MiB) == 400 * MiB
    assert parse_watermark("1.0", 1000) == 1000
    assert parse_watermark("512MiB", 1000) == 512 * MiB
    assert parse_watermark("2000000", 1000) == 2_000_000
    with pytest.raises(ValueError):
        parse_watermark("lots", 1000)


def test_alarm_reasons_are_joined_as_rabbitmq_joins_them():
    alarms = Alarms()
    assert alarms.reason is None
    alarms.raise_alarm("memory", "low on memory")
    assert alarms.reason == "low on memory"
    alarms.raise_alarm("disk", "low on disk")
    assert alarms.reason == "low on disk & memory"  # RabbitMQ 3.10.8's words, in its order
    alarms.clear("memory")
    alarms.raise_alarm("store", "store write failed (disk I/O error)")
    assert alarms.reason == "low on disk & store write failed (disk I/O error)"


def test_the_refusal_texts_are_rabbitmqs():
    assert message_too_large(1001, 1000).reply_text == (
        "PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000"
    )
    # RabbitMQ names its hard limit apart.
    assert message_too_large(MAX_MESSAGE_SIZE + 1, MAX_MESSAGE_SIZE).text.endswith(
        f"is larger than max size {MAX_MESSAGE_SIZE}"
    )


class Readings:
    def __init__(self) -> None:
        self.rss = 10 * MiB
        self.free = 10**12
        self.trims = 0

    def probes(self) -> Probes:
        return Probes(lambda: self.rss, lambda: self.free, self._trim)

    def _trim(self) -> None:
        self.trims += 1


def test_the_monitor_pages_then_alarms_then_clears():
    readings, alarms = Readings(), Alarms()
    monitor = ResourceMonitor(
        alarms, ManualScheduler(), readings.probes(), 100 * MiB, 0.5, 50_000_000
    )
    paging: list[bool] = []
    monitor.on_paging = paging.append
    monitor.start()
    assert (paging, alarms.active) == ([], {})

    readings.rss = 60 * MiB
    monitor.sample_memory()
    assert paging == [True] and not alarms.active and readings.trims >= 1

    readings.rss = 101 * MiB
    monitor.sample_memory()
    assert alarms.active == {"memory": "low on memory"}

    readings.rss = 48 * MiB  # just under the threshold: paging goes on a little longer
    monitor.sample_memory()
    assert paging == [True] and not alarms.active
    readings.rss = 40 * MiB
    monitor.sample_memory()
    assert paging == [True, False] and not alarms.active

    readings.free = 49_999_999
    monitor.sample_disk()
    assert alarms.active == {"disk": "low on disk"}
    readings.free = 50_000_000
    monitor.sample_disk()
    assert not alarms.active
    monitor.stop()


def test_publishing_enough_bytes_samples_before_the_timer():
    readings, alarms = Readings(), Alarms()
    monitor = ResourceMonitor(alarms, ManualScheduler(), readings.probes(), 100 * MiB, 0.5, 0)
    monitor.start()
    readings.rss = 200 * MiB
    monitor.published(1024)
    assert not alarms.active  # a small publish does not sample
    monitor.published(8 * MiB)
    assert alarms.active == {"memory": "low on memory"}
