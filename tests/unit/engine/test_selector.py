"""JMS selectors: the SQL-92 subset JMS defines, three-valued logic, JMS identifiers and
literals, the column of a parse error, and the JMS header names read from engine fields."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rabbitish.engine.message import QueueEntry
from rabbitish.engine.selector import MessageSelector, SelectorError, parse
from tests.support.engine import message

PROPS = {
    "colour": "green",
    "size": 7,
    "weight": 2.5,
    "flag": True,
    "off": False,
    "name": "a_b%c",
    "quote": "it's",
}


def select(text: str, props: dict | None = None) -> bool:
    values = PROPS if props is None else props
    return parse(text).matches(values.get)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("colour = 'green'", True),
        ("colour <> 'green'", False),
        ("colour = 'GREEN'", False),  # string comparison is exact
        ("size > 5 AND size < 10", True),
        ("size >= 7 AND size <= 7", True),
        ("size = 7.0", True),  # numeric promotion
        ("weight * 2 = 5", True),
        ("size + 1 = 8 AND size - 1 = 6 AND size / 2 = 3", True),  # exact division truncates
        ("-size = -7 AND +size = 7", True),
        ("size BETWEEN 7 AND 9", True),
        ("size NOT BETWEEN 7 AND 9", False),
        ("colour IN ('red', 'green')", True),
        ("colour NOT IN ('red', 'green')", False),
        ("name LIKE 'a\\_b\\%c' ESCAPE '\\'", True),
        ("name LIKE 'a_b%'", True),
        ("name LIKE 'a%c'", True),
        ("name NOT LIKE 'b%'", True),
        ("quote = 'it''s'", True),
        ("flag", True),
        ("flag = TRUE", True),
        ("off = false", True),
        ("NOT off", True),
        ("missing IS NULL", True),
        ("colour IS NOT NULL", True),
        ("7E0 = size AND 70E-1 = size AND .5 < 1 AND 7. = size", True),
        ("(colour = 'red' OR size = 7) AND NOT (flag = FALSE)", True),
        ("colour = 'green' and size = 7 or false", True),  # keywords in any case
        ("", True),  # no selector: every message
    ],
)
def test_the_jms_subset(text, expected):
    assert select(text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "missing = 1",  # NULL compares UNKNOWN
        "NOT (missing = 1)",  # NOT UNKNOWN is UNKNOWN
        "missing = 1 AND flag",
        "missing IN ('a')",
        "missing NOT IN ('a')",
        "missing LIKE '%'",
        "missing NOT LIKE '%'",
        "missing BETWEEN 1 AND 2",
        "colour > 'a'",  # strings compare only with = and <>
        "colour = 1",  # kinds differ: UNKNOWN, not false
        "flag > off",
        "size / 0 = 1",
        "size",  # a number is no condition
    ],
)
def test_unknown_is_not_selected(text):
    assert select(text) is False


def test_three_valued_or_and_and():
    # UNKNOWN OR TRUE is TRUE; UNKNOWN AND FALSE is FALSE, so NOT of it is TRUE.
    assert select("missing = 1 OR flag")
    assert select("NOT (missing = 1 AND off)")
    assert not select("NOT (missing = 1 OR off)")


def test_identifiers_are_case_sensitive():
    assert not select("Colour = 'green'")


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("colour = ", 10, "expected a value, an identifier or '(', found end of selector"),
        ("colour == 'a'", 9, "expected a value, an identifier or '(', found '='"),
        ("colour = 'green", 10, "unterminated string literal"),
        ("size # 3", 6, "unexpected character '#'"),
        ("a = 1 b = 2", 7, "expected AND, OR or the end of the selector, found 'b'"),
        ("(a = 1", 7, "expected ')', found end of selector"),
        ("a IN (1)", 7, "expected a string literal, found '1'"),
        ("a LIKE 'x' ESCAPE 'ab'", 19, "the escape must be one character"),
        ("1 LIKE 'x'", 1, "LIKE needs an identifier on its left"),
        ("a NOT = 1", 7, "expected BETWEEN, IN or LIKE after NOT, found '='"),
        ("a IS 1", 6, "expected NULL, found '1'"),
        ("a BETWEEN 1 OR 2", 13, "expected AND, found 'OR'"),
        ("AND = 1", 1, "expected a value, an identifier or '(', found 'AND'"),
    ],
)
def test_a_malformed_selector_names_the_column(text, column, reason):
    with pytest.raises(SelectorError) as caught:
        parse(text)
    assert (caught.value.position, caught.value.reason) == (column, reason)
    assert str(caught.value) == f"{reason} at column {column}"


_names = st.text(string.ascii_letters + "_$", min_size=1, max_size=6).filter(
    lambda name: (
        name.upper()
        not in {"AND", "OR", "NOT", "IN", "IS", "LIKE", "NULL", "TRUE", "FALSE", "ESCAPE"}
        and name.upper() != "BETWEEN"
    )
)
_literals = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.text(string.ascii_letters + " '", max_size=5).map(
        lambda s: "'" + s.replace("'", "''") + "'"
    ),
)
_ops = st.sampled_from(["=", "<>", "<", ">", "<=", ">="])
_comparisons = st.builds(lambda n, o, v: f"{n} {o} {v}", _names, _ops, _literals)
_conditions = st.recursive(
    _comparisons,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_conditions, st.dictionaries(_names, st.one_of(st.integers(), st.text(max_size=3))))
def test_generated_selectors_parse_and_evaluate_to_a_boolean(text, props):
    assert parse(text).matches(props.get) in (True, False)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_any_text_parses_or_fails_with_a_column_inside_it(text):
    try:
        parse(text)
    except SelectorError as err:
        assert 1 <= err.position <= len(text) + 1


def entry_of(**fields) -> QueueEntry:
    return QueueEntry(None, 0, message(**fields), None)


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("JMSDeliveryMode = 'PERSISTENT'", {"delivery_mode": 2}),
        ("JMSDeliveryMode = 'NON_PERSISTENT'", {}),
        ("JMSPriority = 4", {}),  # the default priority
        ("JMSPriority = 9", {"priority": 9}),
        ("JMSMessageID = 'm1'", {"message_id": "m1"}),
        ("JMSCorrelationID = 'c1'", {"correlation_id": "c1"}),
        ("JMSType = 't'", {"type": "t"}),
        ("JMSTimestamp = 5000", {"timestamp": 5}),
        ("JMSExpiration = 6000", {"timestamp": 5, "expiration": "1000"}),
        ("JMSExpiration = 0", {}),
        ("JMSXUserID = 'guest'", {"user_id": "guest"}),
        ("JMSXDeliveryCount = 1", {}),
        ("JMSXGroupID IS NULL", {}),
        ("colour = 'green' AND n = 3", {"headers": {"colour": "green", "n": 3}}),
        ("bin IS NULL", {"headers": {"bin": b"\xff"}}),
    ],
)
def test_jms_names_and_application_properties_from_engine_fields(text, fields):
    assert MessageSelector(parse(text))(entry_of(**fields))


def test_an_overlay_answers_the_names_it_holds_first():
    selector = MessageSelector(
        parse("JMSType = 'subject' AND colour = 'green'"),
        overlay=lambda message: {"JMSType": "subject"},
        overlay_names=frozenset({"JMSType"}),
    )
    assert selector(entry_of(type="t", headers={"colour": "green"}))
