"""The three formatters, banners and --quiet / --silent / --no-table-headers."""

from __future__ import annotations

import io

import pytest
from rabbitish.cli.ctl.arguments import UsageError, parse
from rabbitish.cli.ctl.output import Printer


def _printed(*argv: str, rows: list[list[object]], stream: bool = True) -> str:
    out = io.StringIO()
    printer = Printer(parse(["list_queues", *argv]), out)
    printer.info("Listing queues for vhost / ...")
    printer.rows(["name", "messages"], rows, stream)
    return out.getvalue()


def test_table_json_and_csv():
    rows: list[list[object]] = [["q1", 3], ['a"b', 0]]
    assert _printed(rows=rows) == 'Listing queues for vhost / ...\nname\tmessages\nq1\t3\na"b\t0\n'
    assert _printed("--formatter", "json", rows=rows) == (
        '[\n{"name":"q1","messages":3}\n,{"name":"a\\"b","messages":0}\n]\n'
    )
    assert _printed("--formatter", "csv", rows=rows) == (
        '"name","messages"\n"q1","3"\n"a""b","0"\n'
    )


def test_quiet_silent_and_empty_listings():
    assert _printed("-q", rows=[["q", 1]]) == "name\tmessages\nq\t1\n"
    assert _printed("-s", rows=[["q", 1]]) == "q\t1\n"
    assert _printed("--no-table-headers", rows=[["q", 1]]).endswith("...\nq\t1\n")
    assert _printed(rows=[]) == "Listing queues for vhost / ...\n"  # a stream: no header
    assert _printed(rows=[], stream=False) == "Listing queues for vhost / ...\n\n"
    assert _printed("--formatter", "json", rows=[]) == "[\n]\n"


def test_formatters_rabbitish_does_not_have_are_refused():
    with pytest.raises(UsageError):
        Printer(parse(["list_queues", "--formatter", "erlang"]))


def test_banners_wait_until_the_node_is_reached():
    out = io.StringIO()
    printer = Printer(parse(["list_queues"]), out)
    printer.info("Listing queues for vhost / ...")
    printer.info("Will ping ...", at_once=True)
    assert out.getvalue() == "Will ping ...\n"
    printer.reached()
    printer.info("later")
    assert out.getvalue() == "Will ping ...\nListing queues for vhost / ...\nlater\n"
