"""The output buffer both front ends write to (rabbitish/frontend/output.py)."""

from __future__ import annotations

from rabbitish.bridge.connection import Connection10

from rabbitish.frontend.output import BufferedOutput
from rabbitish.protocol.connection import Connection


class Output(BufferedOutput):
    def __init__(self, limit: int = 10) -> None:
        self.wakes = 0
        self.resumed = 0
        super().__init__(limit, self._woken)

    def _woken(self) -> None:
        self.wakes += 1

    def resume_consumers(self) -> None:
        self.resumed += 1


def test_both_front_ends_write_through_the_one_buffer():
    for connection in (Connection, Connection10):
        assert connection.write is BufferedOutput.write
        assert connection.write_many is BufferedOutput.write_many


def test_frames_queue_in_the_pieces_written_and_wake_the_io_layer_once_per_batch():
    out = Output()
    out.write(b"ab")
    out.write_many([b"c", memoryview(b"de")])
    out.write_many([])
    assert out.wakes == 1 and out.out_size == 5
    assert out.take_parts() == [b"ab", b"c", memoryview(b"de")]
    assert out.out_size == 0 and out.take_output() == b""
    out.write(b"f")
    assert out.wakes == 2 and out.take_output() == b"f"


def test_once_the_socket_is_gone_nothing_is_queued():
    out = Output()
    out.write(b"lost")
    out.close_output()
    out.write(b"x")
    out.write_many([b"y"])
    assert out.take_output() == b"" and out.wakes == 1


def test_back_pressure_holds_consumers_until_output_drains():
    out = Output(limit=3)
    out.write(b"1234")
    assert out.output_blocked
    out.consumers_starved = True
    out.output_drained()
    assert out.resumed == 0  # still too much queued
    out.take_parts()
    out.paused = True
    out.output_drained()
    assert out.resumed == 0  # the transport asked us to wait
    out.paused = False
    out.output_drained()
    assert out.resumed == 1 and not out.consumers_starved
    out.output_drained()
    assert out.resumed == 1


def test_deliveries_after_flush_wait_for_what_is_queued_to_be_taken():
    out = Output(limit=100)
    out.write(b"commit-ok")
    out.deliver_after_flush()
    assert out.output_blocked  # a consumer asking now finds no credit
    out.consumers_starved = True
    out.output_drained()
    assert out.resumed == 0
    assert out.take_parts() == [b"commit-ok"]
    assert not out.output_blocked
    out.output_drained()
    assert out.resumed == 1
