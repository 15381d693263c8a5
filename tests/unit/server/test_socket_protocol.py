"""The pieces a large flush is written in: bodies as they are, the frame headers around them
joined, nothing lost or reordered."""

from __future__ import annotations

from rabbitish.server.socket_protocol import LARGE_PIECE, unjoined


def test_large_pieces_pass_untouched_and_small_ones_between_are_joined() -> None:
    body = bytes(range(256)) * (3 * LARGE_PIECE // 256)
    view = memoryview(body)
    half = len(body) // 2
    parts = [b"head", b"er", view[:half], b"\xce", b"next", view[half:], b"\xce"]
    pieces = list(unjoined(parts))
    assert pieces[0] == b"header"
    assert pieces[1] is parts[2]
    assert pieces[2] == b"\xcenext"
    assert pieces[3] is parts[5]
    assert pieces[4] == b"\xce"
    assert b"".join(pieces) == b"".join(parts)
