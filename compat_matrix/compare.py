"""Diffing the records of two targets against the list of allowed differences.

An allowed difference names a scenario and a one-line reason; it may also name the event labels
that are allowed to differ, and then every other part of the record must still match. Any
other difference is unexpected and fails the run."""

from __future__ import annotations

import difflib
import json
import tomllib
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


@dataclass
class Comparison:
    """One scenario on both targets."""

    scenario: Scenario
    ours: Result
    reference: Result
    status: str  # "same" | "expected" | "unexpected"
    reason: str = ""
    diff: str = ""

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
) -> list[Comparison]:
    """Compare each scenario's records; the reference is the first name in `names`."""
    out: list[Comparison] = []
    for scenario in scenarios:
        mine, theirs = ours[scenario.key], reference[scenario.key]
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
