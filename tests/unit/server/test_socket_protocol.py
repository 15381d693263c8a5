"""How a large flush reaches the transport: bodies as they are, the frame headers around them
joined, nothing lost or reordered."""

from __future__ import annotations

import asyncio

from rabbitish.server.socket_protocol import LARGE_PIECE, write_unjoined


class RecordingTransport(asyncio.WriteTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes | memoryview] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(data if isinstance(data, memoryview) else bytes(data))


def test_large_pieces_pass_untouched_and_small_ones_between_are_joined() -> None:
    body = bytes(range(256)) * (3 * LARGE_PIECE // 256)
    view = memoryview(body)
    half = len(body) // 2
    parts = [b"head", b"er", view[:half], b"\xce", b"next", view[half:], b"\xce"]
    transport = RecordingTransport()
    write_unjoined(transport, parts)
    assert transport.writes[0] == b"header"
    assert transport.writes[1] is parts[2]
    assert transport.writes[2] == b"\xcenext"
    assert transport.writes[3] is parts[5]
    assert transport.writes[4] == b"\xce"
    assert b"".join(transport.writes) == b"".join(parts)
