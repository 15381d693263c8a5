"""Half transactions over HTTP (rabbitish's own resource: RabbitMQ has none to mirror): the
undecided ones as `engine/half.py` lists them, prepared ones with their locked acks (the
"recover" list a transaction manager reads after a crash), and an operator's commit or
rollback, answered only once the store has the decision, as a publisher confirm for it would
be."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rabbitish.engine.half import HalfView
    from rabbitish.engine.vhost import VirtualHost


def half_json(view: HalfView, now: float) -> dict[str, Any]:
    """One undecided half transaction; `age_seconds` counts from its first half message (or
    its prepare); `acks` counts the deliveries its settlements lock."""
    return {
        "id": view.id,
        "vhost": view.vhost,
        "prepared": view.prepared,
        "messages": view.messages,
        "acks": view.acks,
        "queues": list(view.queues),
        "created_at": view.created_at,
        "age_seconds": round(max(0.0, now - view.created_at), 3),
        "checks_sent": view.checks_sent,
        "check_queue": view.check_queue,
    }


async def decide(vhost: VirtualHost, txn_id: str, commit: bool) -> dict[str, Any] | None:
    """Commit or roll back `txn_id` and wait until the decision is durable; None when the vhost
    holds no such transaction (nor made this same decision before: repeating one is a no-op
    that reports no messages)."""
    held = vhost.half.get(txn_id)
    if not vhost.half.decide(txn_id, commit):
        return None
    journal = vhost.journal
    synced = asyncio.get_running_loop().create_future()

    def durable() -> None:
        if not synced.done():
            synced.set_result(None)

    journal.when_synced(journal.position, durable)
    await synced
    answer: dict[str, Any] = {
        "id": txn_id,
        "vhost": vhost.name,
        "decision": "commit" if commit else "rollback",
        "messages": held.messages if held is not None else 0,
        "queues": list(held.queues) if held is not None else [],
    }
    if held is not None and held.prepared:
        answer["acks"] = held.acks  # deliveries settled as staged (commit) or put back
    return answer
