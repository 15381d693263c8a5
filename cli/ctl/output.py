"""How rabbitmqctl writes: informational lines (banners) unless --quiet, results in the chosen
formatter (table: tab-separated with a header row unless --silent or --no-table-headers; json:
one compact object per line inside `[` `]`; csv: every cell quoted), all on standard output;
errors on standard error."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rabbitish.cli.ctl.arguments import Invocation, UsageError
from rabbitish.cli.ctl.terms import info_item, json_item, json_line

FORMATTERS = ("table", "json", "csv")
REFUSED_FORMATTERS = ("pretty_table", "erlang")


class Printer:
    def __init__(self, invocation: Invocation, out: TextIO | None = None) -> None:
        formatter = invocation.formatter
        if formatter not in FORMATTERS:
            supported = ", ".join(FORMATTERS)
            raise UsageError(f"formatter '{formatter}' is not supported here (use {supported})")
        self.formatter = formatter
        self.quiet = invocation.quiet
        self.headers = not invocation.silent and "no_table_headers" not in invocation.flags
        self.out = out or sys.stdout
        self.held: list[str] | None = []  # info lines until the node is reached

    @property
    def machine(self) -> bool:
        """json and csv write no informational lines."""
        return self.formatter != "table"

    def info(self, line: str, at_once: bool = False) -> None:
        """An informational line: the banner ("Listing queues for vhost / ..."), hints. As
        rabbitmqctl prints its banner once it has reached the node, the line waits for
        `reached()` (a node that is down gets no banner) unless `at_once` (ping's)."""
        if self.quiet or self.machine:
            return
        if at_once or self.held is None:
            self.out.write(line + "\n")
        else:
            self.held.append(line)

    def reached(self) -> None:
        """The node answered: write what waited, and from now on write at once."""
        if self.held:
            self.out.write("".join(line + "\n" for line in self.held))
        self.held = None

    def result(self, line: str) -> None:
        """A verb's result line, written even with --quiet."""
        self.reached()
        self.out.write(line + "\n")

    def message(self, line: str) -> None:
        """A result that the json formatter writes as {"message": ...}."""
        if self.formatter == "json":
            self.out.write(json_line({"message": line}) + "\n")
        else:
            self.result(line)

    def rows(self, columns: Sequence[str], rows: list[list[Any]], stream: bool) -> None:
        """A listing. `stream`: the verb streams its rows (queues, exchanges, connections ...),
        so an empty listing has no header; the others write an empty line when empty."""
        self.reached()
        if self.formatter == "json":
            objects = [
                json_line(dict(zip(columns, map(json_item, row), strict=True))) for row in rows
            ]
            self.out.write(
                "[\n"
                + "".join(("," if i else "") + o + "\n" for i, o in enumerate(objects))
                + "]\n"
            )
            return
        if self.formatter == "csv":
            if rows or not stream:
                self.out.write(",".join(_csv(c) for c in columns) + "\n")
            for row in rows:
                self.out.write(",".join(_csv(info_item(v)) for v in row) + "\n")
            return
        if not rows:
            if not stream:
                self.out.write("\n")
            return
        if self.headers:
            self.out.write("\t".join(columns) + "\n")
        for row in rows:
            self.out.write("\t".join(info_item(v) for v in row) + "\n")


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
