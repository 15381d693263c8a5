"""Erlang terms as RabbitMQ prints them; expected texts come from Erlang/OTP 25's io_lib."""

from __future__ import annotations

import pytest

from rabbitish.engine import erlang_terms


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2000.0, "2.0e3"),
        (0.5, "0.5"),
        (100.0, "100.0"),
        (1.0e-5, "1.0e-5"),
        (0.001, "0.001"),
        (123456.789, "123456.789"),
        (-1.5, "-1.5"),
        (1.0e21, "1.0e21"),
        (0.0, "0.0"),
    ],
)
def test_floats(value, text):
    assert erlang_terms.float_text(value) == text


def test_terms_of_decoded_values():
    assert erlang_terms.term(True) == "true"
    assert erlang_terms.term(None) == "undefined"
    assert erlang_terms.term('a"b\\') == '<<"a\\"b\\\\">>'
    assert erlang_terms.term(b"\x01\x02") == "<<1,2>>"
    assert erlang_terms.term(b"") == "<<>>"
    assert erlang_terms.term(7) == "7"
    assert erlang_terms.char_list('1"') == '"1\\""'
    assert erlang_terms.written_binary(b"abc") == "<<97,98,99>>"


def test_a_tuple_moves_its_value_to_the_next_line_from_column_79():
    """`~ts: ~tp` of {value_too_large,315360000001} after prefixes of 47 and 48 characters."""
    term = "{value_too_large,315360000001}"
    assert erlang_terms.after("a" * 46 + ": ", term) == "a" * 46 + ": " + term
    assert erlang_terms.after("a" * 47 + ": ", term) == (
        "a" * 47 + ": {value_too_large,\n" + " " * 50 + "315360000001}"
    )


def test_a_list_goes_one_element_a_line_from_79_characters():
    fits = [f"{{key_missing,{'k' * 12}}}", "{key_missing,kkkkkkkkkk}", "{key_missing,kkkkkkkkkk}"]
    assert len(erlang_terms.term_list(fits)) == 78
    assert "\n" not in erlang_terms.term_list(fits)
    longer = [fits[0].replace("k}", "kk}"), *fits[1:]]
    assert erlang_terms.term_list(longer) == "[" + ",\n ".join(longer) + "]"
