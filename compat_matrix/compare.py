"""Diffing the records of two targets against the list of allowed differences.

An allowed difference names a scenario and a one-line reason; it may also name the event labels
that are allowed to differ, and then every other part of the record must still match. Any
other difference is unexpected and fails the run.

When the reference ran a scenario more than once and its records differ, the scenario is not
deterministic on the reference: comparing against one of its records would be luck either way,
so the comparison is "unstable" (never "same") and fails the run too."""

from __future__ import annotations

import difflib
import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_matrix.record import canonical
from compat_matrix.registry import Scenario
from compat_matrix.runner import Result

EXPECTED_FILE = Path(__file__).with_name("expected_differences.toml")


@dataclass(frozen=True)
class Allowed:
    """One entry of the expected-differences file."""

    scenario: str
    reason: str
    events: tuple[str, ...] = ()


@dataclass(frozen=True)
class Instability:
    """How the reference's record of one scenario changed from its first pass to a later one."""

    run: int  # the pass (2, 3, ...) whose record first differed from pass 1's
    first: tuple[str, str]  # the first line that differs: in pass 1, in pass `run`
    diff: str  # pass 1 against pass `run`
    ours_matches: tuple[int, ...]  # the reference passes whose record equals ours

    def describe(self) -> str:
        """One line: where the two passes part."""
        return f"pass 1: {self.first[0]} | pass {self.run}: {self.first[1]}"


@dataclass
class Comparison:
    """One scenario on both targets."""

    scenario: Scenario
    ours: Result
    reference: Result
    status: str  # "same" | "expected" | "unexpected" | "unstable"
    reason: str = ""
    diff: str = ""
    instability: Instability | None = None

    @property
    def reference_ok(self) -> bool:
        """The scenario ran through on the reference and its documented checks held."""
        checks_hold = all(
            value is True for label, value in self.reference.events if label.startswith("check: ")
        )
        return self.reference.outcome == "ok" and checks_hold


def load_expected(path: Path = EXPECTED_FILE) -> dict[str, Allowed]:
    """Entries by scenario key; each needs a non-empty one-line reason."""
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    allowed: dict[str, Allowed] = {}
    for entry in data.get("difference", []):
        reason = str(entry.get("reason", "")).strip()
        if not reason or "\n" in reason:
            raise ValueError(f"{path}: {entry.get('scenario')} needs a one-line reason")
        item = Allowed(str(entry["scenario"]), reason, tuple(entry.get("events", ())))
        allowed[item.scenario] = item
    return allowed


def _without(record: dict[str, Any], labels: tuple[str, ...]) -> dict[str, Any]:
    events = [event for event in record["events"] if event[0] not in labels]
    return {"outcome": record["outcome"], "events": events}


def _lines(record: dict[str, Any]) -> list[str]:
    """One line per recorded event, so a diff shows whole events."""
    events = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in record["events"]]
    return [f"outcome: {record['outcome']}", *events]


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    """The first line (outcome or event) where two records differ."""
    left, right = _lines(a), _lines(b)
    for one, other in zip(left, right, strict=False):
        if one != other:
            return one, other
    end = "(end of record)"
    if len(left) > len(right):
        return left[len(right)], end
    if len(right) > len(left):
        return end, right[len(left)]
    return end, end


def instability(key: str, ours: Result, passes: Sequence[dict[str, Result]]) -> Instability | None:
    """None when every pass of the reference recorded `key` alike."""
    records = [canonical(results[key].record) for results in passes]
    changed = next((run for run in range(1, len(records)) if records[run] != records[0]), None)
    if changed is None:
        return None
    first, later = passes[0][key].record, passes[changed][key].record
    mine = canonical(ours.record)
    return Instability(
        changed + 1,
        first_difference(first, later),
        diff_text(first, later, ("pass 1", f"pass {changed + 1}")),
        tuple(run + 1 for run, record in enumerate(records) if record == mine),
    )


def diff_text(reference: dict[str, Any], ours: dict[str, Any], names: tuple[str, str]) -> str:
    lines = difflib.unified_diff(
        _lines(reference),
        _lines(ours),
        fromfile=names[0],
        tofile=names[1],
        lineterm="",
        n=1,
    )
    return "\n".join(lines)


def compare(
    scenarios: list[Scenario],
    ours: dict[str, Result],
    reference: dict[str, Result],
    allowed: dict[str, Allowed],
    names: tuple[str, str] = ("RabbitMQ", "rabbitish"),
    again: Sequence[dict[str, Result]] = (),
) -> list[Comparison]:
    """Compare each scenario's records; the reference is the first name in `names`. `again`
    holds the reference's later passes: a scenario they recorded differently is "unstable"."""
    out: list[Comparison] = []
    for scenario in scenarios:
        mine, theirs = ours[scenario.key], reference[scenario.key]
        unstable = instability(scenario.key, mine, [reference, *again])
        if unstable is not None:
            diff = diff_text(theirs.record, mine.record, names)
            out.append(Comparison(scenario, mine, theirs, "unstable", "", diff, unstable))
            continue
        if canonical(mine.record) == canonical(theirs.record):
            out.append(Comparison(scenario, mine, theirs, "same"))
            continue
        diff = diff_text(theirs.record, mine.record, names)
        entry = allowed.get(scenario.key)
        status = "unexpected"
        if entry is not None:
            if not entry.events:
                status = "expected"
            else:
                rest_same = canonical(_without(mine.record, entry.events)) == canonical(
                    _without(theirs.record, entry.events)
                )
                status = "expected" if rest_same else "unexpected"
        reason = entry.reason if entry is not None and status == "expected" else ""
        out.append(Comparison(scenario, mine, theirs, status, reason, diff))
    return out


def unknown_entries(allowed: dict[str, Allowed], scenarios: list[Scenario]) -> list[str]:
    """Entries naming no scenario (a renamed scenario must not leave a stale allowance)."""
    keys = {s.key for s in scenarios}
    return sorted(name for name in allowed if name not in keys)
