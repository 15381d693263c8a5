"""Restart fidelity, differential: one scenario (tests/support/restart_scenario.py) creates every
kind of durable thing a client can make, the broker restarts (a clean stop, or kill -9) on the
same data dir, and what is observed afterwards must be what a real RabbitMQ 3.10 shows after the
same restart: queues, arguments, exchanges, bindings, message contents and flags, in order.

Each broker is a real process: `rabbitish serve` (tests/support/broker_process.py) and a
private RabbitMQ node (tests/support/real_rabbitmq.py). Without rabbitmq-server installed the
rabbitish run still checks its own observations against the facts listed here."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.real_rabbitmq import rabbitmq_available, real_rabbitmq
from tests.support.restart_scenario import SERVER_NAMED, Context, observe, populate

# Differences from RabbitMQ 3.10.8 that are allowed, by observation key, with the reason.
ALLOWED: dict[str, str] = {}
# ...and after kill -9 only.
ALLOWED_AFTER_KILL: dict[str, str] = {
    "contents/rs.q.expired": (
        "RabbitMQ may dead-letter an expired message a second time after a crash, when the "
        "removal from the source queue had not reached its disk yet; rabbitish has it once"
    ),
}


def _wait_for(deadline: float) -> None:
    """The broker is down: let the short TTLs run out before it starts again."""
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(left)


def run_scenario(
    url: Callable[[], str], stop: Callable[[], None], start: Callable[[], None], kill: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    ctx: Context | None = None
    try:
        ctx, outcomes = populate(url(), quorum=not kill)
        stop()
        _wait_for(ctx.expired_by)
        start()
        return outcomes, observe(url(), ctx)
    finally:
        if ctx is not None:
            ctx.drop()


def on_rabbitish(tmp_path: Path, kill: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    broker = BrokerProcess(data_dir=tmp_path / "data", keep_port=True)
    broker.start()
    try:
        return run_scenario(
            lambda: broker.url, broker.kill if kill else broker.stop, broker.start, kill
        )
    finally:
        broker.close()


def on_rabbitmq(kill: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    with real_rabbitmq() as node:
        return run_scenario(lambda: node.url, node.kill if kill else node.stop, node.start, kill)


def flatten(prefix: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from flatten(f"{prefix}/{key}" if prefix else str(key), inner)
    else:
        yield prefix, json.dumps(value, sort_keys=True, default=repr)


def differences(ours: dict[str, Any], theirs: dict[str, Any], allowed: dict[str, str]) -> list[str]:
    """Observation keys whose values differ (and are not allowed to), one line each."""
    mine, reference = dict(flatten("", ours)), dict(flatten("", theirs))
    lines = []
    for key in sorted(set(mine) | set(reference)):
        if mine.get(key) != reference.get(key) and key not in allowed:
            lines.append(f"{key}:\n  rabbitish: {mine.get(key)}\n  rabbitmq:  {reference.get(key)}")
    return lines


def check_facts(outcomes: dict[str, Any], seen: dict[str, Any], kill: bool) -> None:
    """What must hold whatever the reference does (and what the rabbitish-only run checks).
    After a kill -9 every recovered message comes back redelivered, as on RabbitMQ: which
    deliveries reached the disk before the crash is not known."""
    contents, queues = seen["contents"], seen["queues"]
    if kill:
        assert {m[1] for messages in contents.values() for m in messages} == {True}

    def redelivered(flag: bool) -> bool:
        return flag or kill

    assert seen["props raw"] == {"header identical": True, "body identical": True}
    assert [m[0] for m in contents["rs.q.order"]] == [f"o{i}" for i in range(12) if i % 3]
    assert [m[0] for m in contents[SERVER_NAMED]] == ["server-named"]
    assert [m[0] for m in contents["rs.q.prio"]] == ["p9", "p5a", "p5b", "p3", "p1", "p0", "pnone"]
    assert [(m[0], m[1]) for m in contents["rs.q.unacked"]] == [
        ("u0", True),
        ("u2", True),
        ("u3", redelivered(False)),
        ("u4", redelivered(False)),
        ("u5", redelivered(False)),
        ("barrier", redelivered(False)),
    ]
    assert [m[0] for m in contents["rs.q.tx"]] == ["committed-1", "committed-2", "barrier"]
    assert [(m[0], m[1]) for m in contents["rs.q.txack"]] == [
        ("t0", True),
        ("t1", redelivered(False)),
        ("barrier", redelivered(False)),
    ]
    assert [m[0] for m in contents["rs.q.msg-ttl"]] == ["long", "no ttl"]
    assert contents["rs.q.ttl-short"] == []
    for queue, reason in (("rs.q.dead", "rejected"), ("rs.q.expired", "expired")):
        assert reason in contents[queue][0][2]["headers"]
    assert "maxlen" in contents["rs.q.dead-overflow"][0][2]["headers"]
    assert outcomes == {"maxbytes": ["ack", "ack", "nack"], "dlx-reject": ["ack", "nack"]}
    for gone in ("rs.q.exclusive", "rs.q.transient"):
        assert queues[f"{gone} passive"][:2] == ["closed", 404]
    assert seen["exchanges"]["rs.x.transient passive"][:2] == ["closed", 404]
    routing = seen["routing"]
    assert routing["into rs.q.e2e"] == ["probe-5"]
    assert routing["into rs.q.hdr-typed"] == ["probe-10"]
    assert routing["into rs.q.hdr-typed after unbind"] == 0


@pytest.mark.parametrize("kill", [False, True], ids=["graceful", "kill-9"])
def test_rabbitish_restart_keeps_every_durable_thing(tmp_path, kill):
    outcomes, seen = on_rabbitish(tmp_path, kill)
    check_facts(outcomes, seen, kill)


@pytest.mark.rabbitmq
@pytest.mark.timeout(400)  # two starts of a RabbitMQ node, each up to a minute on a busy machine
@pytest.mark.parametrize("kill", [False, True], ids=["graceful", "kill-9"])
def test_restart_observations_match_rabbitmq(tmp_path, kill):
    if not rabbitmq_available():
        pytest.skip("rabbitmq-server is not installed")
    ours = on_rabbitish(tmp_path, kill)
    theirs = on_rabbitmq(kill)
    assert ours[0] == theirs[0], "publish outcomes differ"
    allowed = {**ALLOWED, **(ALLOWED_AFTER_KILL if kill else {})}
    for seen in (ours[1], theirs[1]):  # what may be repeated must still all be there
        expired = seen["contents"]["rs.q.expired"]
        seen["expired distinct"] = sorted({json.dumps([m[0], m[2]]) for m in expired})
    diff = differences(ours[1], theirs[1], allowed)
    assert not diff, f"{len(diff)} observations differ from RabbitMQ:\n" + "\n".join(diff)
