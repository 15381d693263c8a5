"""The 0-9-1 PropertyCodec's marks for the engine's quick CC / BCC check: a mark may be found
where there is no such header (then the engine decodes and finds nothing), never missed where
there is one, or sender-selected routing would be skipped."""

from __future__ import annotations

import pytest

from rabbitish.protocol.codec import CODEC
from rabbitish.protocol.properties import encode_properties


def marked(raw: bytes) -> bool:
    """The engine's check (engine/routing.py): is either mark in the raw properties?"""
    cc, bcc = CODEC.sender_selected_marks
    return cc in raw or bcc in raw


@pytest.mark.parametrize(
    "headers",
    [{"CC": ["a"]}, {"BCC": ["b"]}, {"x": 1, "CC": ["a"], "BCC": ["b"]}, {"CC": "not a list"}],
)
def test_a_header_that_is_there_is_always_seen(headers):
    raw = encode_properties(headers=headers)
    assert marked(raw)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"headers": {}},
        {"headers": {"ACCEPT": 1, "cc": ["a"], "XBCC": 2}},  # other names, even similar ones
        {"headers": {"x": "CC "}},  # the name inside a value
    ],
)
def test_no_such_header_key_means_no(fields):
    assert not marked(encode_properties(**fields))


@pytest.mark.parametrize(
    "fields",
    [{"headers": {"x": "\x02CC"}}, {"content_type": "CC"}],  # short strings like a key
)
def test_a_value_that_looks_like_a_key_may_be_a_false_yes_but_decoding_settles_it(fields):
    raw = encode_properties(**fields)
    assert marked(raw)
    assert "CC" not in CODEC.headers(raw)
