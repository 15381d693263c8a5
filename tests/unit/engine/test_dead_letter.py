"""The x-death update follows RabbitMQ's layout (the first death, later deaths regrouped and
counted), and a loop of automatic deaths is detected."""

from __future__ import annotations

import datetime

import pytest

from rabbitish.engine.dead_letter import is_cycle, x_death_headers
from rabbitish.engine.message import Message
from tests.support.engine import CODEC, NO_PROPERTIES


def message(raw: bytes, exchange: str = "ex", key: str = "rk") -> Message:
    return Message(exchange, key, raw, b"", CODEC)


def test_first_death():
    raw = CODEC.encode(headers={"CC": ["c1"]}, expiration="500")
    updates = x_death_headers(CODEC.headers(raw), "q", "expired", message(raw), now=100)
    assert updates == {
        "x-death": [
            {
                "count": 1,
                "reason": "expired",
                "queue": "q",
                "time": datetime.datetime(1970, 1, 1, 0, 1, 40, tzinfo=datetime.UTC),
                "exchange": "ex",
                "routing-keys": ["rk", "c1"],
                "original-expiration": "500",
            }
        ],
        "x-first-death-reason": "expired",
        "x-first-death-queue": "q",
        "x-first-death-exchange": "ex",
    }
    assert list(updates["x-death"][0]) == [
        "count",
        "reason",
        "queue",
        "time",
        "exchange",
        "routing-keys",
        "original-expiration",
    ]


def test_later_deaths_regroup_and_count():
    record = {"count": 1, "reason": "rejected", "queue": "a", "exchange": "", "routing-keys": []}
    other = {**record, "queue": "b"}
    headers = {"x-death": [record, other], "x-first-death-queue": "a"}
    updates = x_death_headers(headers, "a", "rejected", message(NO_PROPERTIES), now=0)
    assert list(updates) == ["x-death"]  # first-death headers are not rewritten
    first, second = updates["x-death"]
    assert (first["queue"], first["count"], second["queue"]) == ("a", 2, "b")
    assert list(first) == sorted(first)
    new = x_death_headers(headers, "c", "maxlen", message(NO_PROPERTIES), now=0)["x-death"]
    assert [d["queue"] for d in new] == ["c", "b", "a"]  # two old records: reversed


@pytest.mark.parametrize(
    ("deaths", "queue", "cycle"),
    [
        ([{"queue": "a", "reason": "expired"}], "a", True),
        ([{"queue": "b", "reason": "expired"}, {"queue": "a", "reason": "expired"}], "a", True),
        ([{"queue": "b", "reason": "rejected"}, {"queue": "a", "reason": "expired"}], "a", False),
        ([{"queue": "b", "reason": "expired"}], "a", False),
        ([{"queue": "a", "reason": "expired"}, {"queue": "b", "reason": "rejected"}], "a", True),
    ],
)
def test_cycle_detection(deaths, queue, cycle):
    assert is_cycle(queue, deaths) is cycle
