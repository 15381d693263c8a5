"""Upgrades: a data dir written by every store schema the project has had (tests/fixtures/store/,
each made by the code of its version: see its NOTES.md) loads in today's broker with every durable
object and message intact, and is then a data dir of today's schema. A data dir of a newer,
unknown schema is refused in one line and left exactly as it was."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions
import pytest
from pamqp import commands
from pamqp.header import ContentHeader

from rabbitish.engine.exchanges.base import Exchange
from rabbitish.store import recovery
from rabbitish.store.schema import DB_NAME, SCHEMA_VERSION, open_database
from rabbitish.testing import call_in_loop, management_url, running_broker
from tests.support.raw_amqp import RawClient
from tests.support.raw_messages import raw_get
from tests.support.store_fixtures import (
    ACCESS_USER,
    ACCESS_VHOST,
    ARCHIVE,
    FIXTURES,
    MANIFEST,
    TXN_EXCHANGE,
    ManagementApi,
    body_matches,
    expand,
    typed_table,
)

SERVE = (sys.executable, "-m", "rabbitish", "serve", "--port", "0")
NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / MANIFEST).is_file())


def test_there_is_a_fixture_for_every_schema_version():
    versions = {json.loads((FIXTURES / n / MANIFEST).read_text())["schema_version"] for n in NAMES}
    assert versions == set(range(1, SCHEMA_VERSION + 1))
    kills = [
        n for n in NAMES if json.loads((FIXTURES / n / MANIFEST).read_text())["stop"] == "kill"
    ]
    assert kills, "one fixture must come from an unclean shutdown"


def unpack(name: str, dest: Path) -> tuple[Path, dict[str, Any]]:
    """A private copy of fixture `name`'s data dir, and its manifest."""
    manifest = json.loads((FIXTURES / name / MANIFEST).read_text())
    data = dest / "data"
    data.mkdir()
    with tarfile.open(FIXTURES / name / ARCHIVE) as tar:
        tar.extractall(data, filter="data")
    assert sorted(os.listdir(data)) == manifest["files"]
    return data, manifest


# ---------------------------------------------------------------------- what the broker holds
def _wiring(broker: Any, vhosts: list[str]) -> dict[str, Any]:
    """Exchanges, queues and bindings of the fixture's names (ug.*, amq.gen-*), on the loop."""
    found: dict[str, Any] = {}
    for name in vhosts:
        vhost = broker.node.vhosts[name]
        ours = [x for x in vhost.exchanges.values() if x.name.startswith("ug.")]
        found[name] = {
            "exchanges": {
                x.name: {
                    "type": x.type_name,
                    "durable": x.durable,
                    "auto_delete": x.auto_delete,
                    "internal": x.internal,
                    "arguments": typed_table(x.arguments),
                }
                for x in ours
            },
            "queues": {
                q.name: {
                    "durable": q.durable,
                    "auto_delete": q.auto_delete,
                    "arguments": typed_table(q.arguments),
                }
                for q in vhost.queues.values()
                if q.name.startswith(("ug.", "amq.gen-"))
            },
            "bindings": sorted(
                [
                    x.name,
                    "exchange" if isinstance(b.destination, Exchange) else "queue",
                    b.destination.name,
                    b.routing_key,
                    typed_table(b.arguments),
                ]
                for x in ours
                for b in x.bindings.values()
            ),
        }
    return found


def _expected_wiring(manifest: dict[str, Any]) -> dict[str, Any]:
    expected: dict[str, Any] = {}
    for name in manifest["queues"]:
        expected[name] = {
            "exchanges": {
                x: {**spec, "durable": True} for x, spec in manifest["exchanges"][name].items()
            },
            "queues": {
                q: {
                    "durable": True,
                    "auto_delete": spec["auto_delete"],
                    "arguments": spec["arguments"],
                }
                for q, spec in manifest["queues"][name].items()
            },
            "bindings": sorted(manifest["bindings"][name]),
        }
    return expected


def _half(broker: Any, vhost: str) -> dict[str, Any]:
    return {
        v.id: {
            "prepared": v.prepared,
            "check_queue": v.check_queue,
            "messages": v.messages,
            "acks": v.acks,
            "created_at": v.created_at,
        }
        for v in broker.node.vhosts[vhost].half.list()
    }


def _url(broker: Any, vhost: str, user: str = "guest", password: str = "guest") -> str:
    return f"amqp://{user}:{password}@127.0.0.1:{broker.port}/{quote(vhost, safe='')}"


def _drain(url: str, queue: str) -> list[tuple[bytes, bytes, bool]]:
    """Every ready message of `queue` as (raw content header, body, redelivered)."""
    got = []
    with RawClient(url).open() as raw:
        raw.open_channel(1)
        while True:
            raw.send_method(1, commands.Queue.Declare(queue=queue, passive=True))
            if raw.expect("Queue.DeclareOk").message_count == 0:
                return got
            method, header, body = raw_get(raw, queue)
            got.append((header, body, method.redelivered))


def _check_messages(url: str, queue: str, entries: list[dict[str, Any]], killed: bool) -> None:
    got = _drain(url, queue)
    entries = expand(entries)
    assert len(got) == len(entries), f"{queue}: {len(got)} messages, expected {len(entries)}"
    for i, ((header, body, redelivered), entry) in enumerate(zip(got, entries, strict=True)):
        where = f"{queue} message {i}"
        assert body_matches(entry, body), f"{where}: body {body[:40]!r}"
        assert redelivered == (entry["delivered"] or killed), f"{where}: redelivered {redelivered}"
        if entry["header"] is not None:
            assert header.hex() == entry["header"], f"{where}: properties differ"
        if "x_death" in entry:
            props = ContentHeader()
            props.unmarshal(header)
            death = props.properties.headers["x-death"][0]
            assert {k: death[k] for k in entry["x_death"]} == entry["x_death"], where


def _decide(url: str, txn: str, outcome: str) -> str:
    """Publish a decision in confirm mode, mandatory: "routed" or "returned"."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        props = pika.BasicProperties(headers={"x-half-txn": txn})
        try:
            ch.basic_publish(TXN_EXCHANGE, outcome, b"", props, mandatory=True)
        except pika.exceptions.UnroutableError:
            return "returned"
        return "routed"
    finally:
        conn.close()


def _check_access(broker: Any, manifest: dict[str, Any]) -> None:
    access = manifest["access"]
    api = ManagementApi(management_url(broker))
    for name, spec in access["vhosts"].items():
        got = api.get(f"/api/vhosts/{quote(name, safe='')}")
        assert got["description"] == spec["description"]
        tags = got["tags"] if isinstance(got["tags"], list) else got["tags"].split(",")
        assert sorted(tags) == sorted(spec["tags"])
    for name, spec in access["users"].items():
        got = api.get(f"/api/users/{name}")
        tags = got["tags"] if isinstance(got["tags"], list) else got["tags"].split(",")
        assert tags == spec["tags"]
        pika.BlockingConnection(
            pika.URLParameters(_url(broker, ACCESS_VHOST, name, spec["password"]))
        ).close()  # the stored password hash still checks
    for key, spec in access["permissions"].items():
        vhost, user = key.split(" ")
        got = api.get(f"/api/permissions/{quote(vhost, safe='')}/{user}")
        assert {k: got[k] for k in spec} == spec
    for kind, resource in (("policies", "policies"), ("operator_policies", "operator-policies")):
        for key, spec in access[kind].items():
            vhost, name = key.split(" ")
            got = api.get(f"/api/{resource}/{quote(vhost, safe='')}/{name}")
            assert {k: got[k] for k in spec} == spec
    queue = api.get("/api/queues/%2F/ug.q.policy")
    assert (queue["policy"], queue["operator_policy"]) == ("ug-policy", "ug-operator")
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(pika.URLParameters(_url(broker, ACCESS_VHOST, ACCESS_USER, "x")))


def _columns(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        return {
            "version": version,
            "indexes": indexes,
            "tables": {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in tables},
        }
    finally:
        conn.close()


class _FixtureClock:
    """The wall clock as recovery reads it: the moment the fixture was made, plus the time
    since the test began. Expiry times and half transactions' creation and check-back times
    are stored as wall-clock instants; the fixtures' messages carry TTLs of minutes to a day
    (per message, per queue, by policy, some with dead-lettering) and their open half
    transaction a check immunity of a day: read at its making, the fixture's state is the one
    its manifest records, whatever day the suite runs."""

    def __init__(self, made_at: str) -> None:
        self.behind = time.time() - datetime.fromisoformat(made_at).timestamp()

    def time(self) -> float:
        return time.time() - self.behind

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


# ---------------------------------------------------------------------- the tests
@pytest.mark.parametrize("name", NAMES)
def test_fixture_loads_intact_and_is_migrated(name, tmp_path, monkeypatch):
    data, manifest = unpack(name, tmp_path)
    monkeypatch.setattr(recovery, "time", _FixtureClock(manifest["made_at"]))
    killed = manifest["stop"] == "kill"
    vhosts = list(manifest["queues"])
    with running_broker(data_dir=str(data), management=True) as broker:
        assert call_in_loop(broker, _wiring, broker, vhosts) == _expected_wiring(manifest)
        for vhost, absent in manifest["absent"].items():
            present = call_in_loop(broker, lambda v=vhost: set(broker.node.vhosts[v].queues))
            assert not present & set(absent["queues"])
            exchanges = call_in_loop(broker, lambda v=vhost: set(broker.node.vhosts[v].exchanges))
            assert not exchanges & set(absent["exchanges"])
        for vhost, queues in manifest["queues"].items():
            for queue, spec in queues.items():
                _check_messages(_url(broker, vhost), queue, spec["messages"], killed)
        # Half and prepared transactions: still held, then decided.
        for vhost, txns in manifest["half"].items():
            held = call_in_loop(broker, _half, broker, vhost)
            assert set(held) == set(txns)
            for txn, spec in txns.items():
                got = held[txn]
                assert (
                    got["prepared"] == spec["prepared"]
                    and got["check_queue"] == spec["check_queue"]
                )
                assert got["messages"] == sum(len(m) for m in spec["publishes"].values())
                assert got["acks"] == sum(len(m) for m in spec["locked"].values())
                low, high = spec["created_between"]
                assert low <= got["created_at"] <= high  # its check-back clock kept its start
                assert _decide(_url(broker, vhost), txn, "commit") == "routed"
                # Held messages were never deliverable, so not redelivered even after a crash.
                for queue, entries in spec["publishes"].items():
                    _check_messages(_url(broker, vhost), queue, entries, killed=False)
                for queue in spec["locked"]:  # the commit applied the locked acks
                    assert _drain(_url(broker, vhost), queue) == []
            assert call_in_loop(broker, _half, broker, vhost) == {}
        for vhost, decided in manifest["decided"].items():
            for txn, outcome in decided.items():
                other = "rollback" if outcome == "commit" else "commit"
                assert _decide(_url(broker, vhost), txn, outcome) == "routed"  # a repeat: no-op
                assert _decide(_url(broker, vhost), txn, other) == "returned"
        if manifest["access"]:
            _check_access(broker, manifest)
    # The data dir is now one of today's schema, exactly as a new one would be.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    open_database(fresh / DB_NAME, fsync=False).close()
    assert _columns(data / DB_NAME) == _columns(fresh / DB_NAME)
    assert _columns(data / DB_NAME)["version"] == str(SCHEMA_VERSION)


def _bump_to_99(data: Path) -> None:
    """Make `data` look written by a future rabbitish, keeping a crash's -wal file if any."""
    db = data / DB_NAME
    wal = Path(f"{db}-wal").exists()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    if not wal:
        conn.close()
        return
    # Keep the update in the -wal file, as a crash would leave it: copy before closing.
    saved = data.with_name("saved")
    shutil.copytree(data, saved)
    conn.close()
    shutil.rmtree(data)
    saved.rename(data)


def _state(data: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(data.iterdir())}


@pytest.mark.parametrize("name", [NAMES[-1], *[n for n in NAMES if "kill" in n]])
def test_a_newer_schema_is_refused_in_one_line_and_not_modified(name, tmp_path):
    data, _ = unpack(name, tmp_path)
    _bump_to_99(data)
    before = _state(data)
    for extra in ([], ["--check"]):
        result = subprocess.run(
            [*SERVE, "--data-dir", str(data), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "newer rabbitish (schema 99, this one reads up to" in lines[0], lines[0]
        assert str(data / DB_NAME) in lines[0]
        assert _state(data) == before


@pytest.mark.parametrize("name", NAMES)
def test_serve_check_loads_each_fixture_without_touching_it(name, tmp_path):
    """`serve --check` migrates an older schema in a temporary copy: the summary says how the
    last stop went (inferred from the -wal file for schemas 1 and 2), and not a byte changes."""
    data, manifest = unpack(name, tmp_path)
    before = _state(data)
    result = subprocess.run(
        [*SERVE, "--data-dir", str(data), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    clean = manifest["stop"] == "clean"
    assert ("last stop clean" in result.stdout) == clean, result.stdout
    assert _state(data) == before
