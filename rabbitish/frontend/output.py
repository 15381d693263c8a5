"""The output side every front end's connection shares, sans-IO: frames queue here until the I/O
layer takes them, and the queue's size is the back-pressure consumers see (their credit drops to
0 while output is blocked; `output_drained` lets them deliver again). Writing is the hot path
(every delivery passes through `write`), so it stays one method with no call it does not need."""

from __future__ import annotations

from collections.abc import Callable

from mypy_extensions import mypyc_attr

Chunk = bytes | memoryview  # a piece of output: joined once when the I/O layer takes it


def _nothing() -> None:
    return None


@mypyc_attr(allow_interpreted_subclasses=True)
class BufferedOutput:
    """Frames written and not yet taken by the I/O layer. `wake` is called when the first frame
    of a batch is queued, so the I/O layer can schedule one flush for the batch. Once the socket
    is gone (`close_output`) everything written is dropped. Each front end says how to resume
    its consumers."""

    def __init__(self, max_pending_output: int, wake: Callable[[], None] | None = None) -> None:
        self.max_pending_output = max_pending_output
        self._wake = wake or _nothing
        self._out: list[Chunk] = []
        self.out_size = 0
        self.output_closed = False  # the socket is gone: nothing more is queued
        self.paused = False  # the transport asked us to stop writing
        self.consumers_starved = False  # a consumer was held back because output piled up
        self.deliveries_after_flush = False  # see `deliver_after_flush`

    def write(self, data: bytes) -> None:
        if self.output_closed:
            return
        if not self._out:
            self._wake()
        self._out.append(data)
        self.out_size += len(data)

    def write_many(self, parts: list[Chunk]) -> None:
        if self.output_closed or not parts:
            return
        if not self._out:
            self._wake()
        self._out.extend(parts)
        self.out_size += sum(map(len, parts))

    def deliver_after_flush(self) -> None:
        """Consumers deliver nothing more until what is queued now goes out. A tx.commit that
        only settles sends its commit-ok first and the deliveries its acks let out after it, as
        RabbitMQ's channel does: the client is not kept waiting for its commit-ok while the
        broker writes those deliveries, and acks the ones it already holds meanwhile."""
        self.deliveries_after_flush = True

    def close_output(self) -> None:
        """The socket is gone: drop what is queued and whatever is written from now on."""
        self.output_closed = True
        self._out.clear()

    def take_parts(self) -> list[Chunk]:
        """The frames written since the last take, as the pieces they were written in: the
        I/O layer hands them to the transport's writelines, which sends them without first
        joining them into one more copy where it can (Python 3.12+, uvloop)."""
        parts, self._out = self._out, []
        self.out_size = 0
        self.deliveries_after_flush = False
        return parts

    def take_output(self) -> bytes:
        return b"".join(self.take_parts())

    @property
    def output_blocked(self) -> bool:
        return self.paused or self.deliveries_after_flush or self.out_size > self.max_pending_output

    def output_drained(self) -> None:
        """The I/O layer wrote our output and the transport can take more: consumers held
        back may deliver again."""
        if self.consumers_starved and not self.output_blocked:
            self.consumers_starved = False
            self.resume_consumers()

    def resume_consumers(self) -> None:
        raise NotImplementedError
