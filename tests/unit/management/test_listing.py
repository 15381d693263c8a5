"""RabbitMQ's list query parameters: a default sort applies to the columns asked for only."""

from __future__ import annotations

from rabbitish.management.listing import apply

BINDINGS = [
    {"vhost": "/", "source": "", "destination": "q1"},
    {"vhost": "/", "source": "x", "destination": "q1"},
    {"vhost": "v1", "source": "", "destination": "vq"},
    {"vhost": "v1", "source": "amq.direct", "destination": "vq"},
]
ORDER = ("vhost", "source", "destination")


def _pairs(items: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(i["source"], i["destination"]) for i in items]


def test_default_sort_uses_every_key_without_columns() -> None:
    assert _pairs(apply(list(reversed(BINDINGS)), {}, ORDER)) == _pairs(BINDINGS)


def test_default_sort_skips_the_keys_the_columns_leave_out() -> None:
    found = apply(BINDINGS, {"columns": "source,destination"}, ORDER)
    assert _pairs(found) == [("", "q1"), ("", "vq"), ("amq.direct", "vq"), ("x", "q1")]
    assert found[0] == {"source": "", "destination": "q1"}


def test_an_explicit_sort_comes_before_the_default_one() -> None:
    found = apply(BINDINGS, {"sort": "destination", "sort_reverse": "true"}, ORDER)
    assert _pairs(found) == [("amq.direct", "vq"), ("", "vq"), ("x", "q1"), ("", "q1")]


def test_without_a_default_sort_the_order_is_kept() -> None:
    assert apply(list(reversed(BINDINGS)), {"columns": "source"}) == [
        {"source": s} for s in ("amq.direct", "", "x", "")
    ]
