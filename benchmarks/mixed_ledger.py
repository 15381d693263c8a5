"""The mixed soak's ledgers (format in benchmarks/mixed_workers.py) and the rules they must obey
once every queue is drained:

- lost: every confirmed or committed message (C) was delivered from its queue; a message for
  soak.ttl or soak.len may instead be delivered from the dead-letter queue soak.dead, with
  x-death reason `expired` (soak.ttl) or `maxlen` (soak.len), and only that way out; an input
  of soak.prep.in counts as delivered when an output of it was delivered from soak.prep.out;
- phantom: nothing delivered that was never sent, rolled back (R), or made by a transaction
  that `decision` rolls back;
- duplicate: a message delivered more than once from one queue is marked redelivered on every
  delivery after the first (an unacked delivery of a killed consumer comes back so, as in
  RabbitMQ); two first deliveries are a duplicate. An input of soak.prep.in has exactly one
  delivered output (a rolled-back prepared transaction's output is never seen);
- atomic: the parts of one transaction (`<batch>.<n>`) are delivered all or none, in doubt
  (sent, no commit-ok) or not; for a half transaction, from its local transaction on (T): a
  producer killed while publishing the parts leaves a transaction of the parts held so far,
  which its status check then decides.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.mixed_workers import decision

DEAD_REASON = {"soak.ttl": "expired", "soak.len": "maxlen"}


@dataclass
class Ledgers:
    sent: dict[str, str] = field(default_factory=dict)  # id -> queue
    confirmed: set[str] = field(default_factory=set)
    rolled_back: set[str] = field(default_factory=set)
    txn_of: dict[str, str] = field(default_factory=dict)
    deliveries: dict[str, list[tuple[str, bool, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    blocked: int = 0
    checks_answered: int = 0

    def read(self, folder: Path) -> Ledgers:
        for path in sorted(folder.glob("*.log")):
            for line in path.read_text().splitlines():
                fields = line.split()
                if not fields:
                    continue
                kind = fields[0]
                if kind == "S" and len(fields) == 3:
                    self.sent[fields[1]] = fields[2]
                elif kind == "C" and len(fields) >= 2:
                    self.confirmed.add(fields[1])
                elif kind == "R" and len(fields) == 2:
                    self.rolled_back.add(fields[1])
                elif kind == "T" and len(fields) == 3:
                    self.txn_of[fields[1]] = fields[2]
                elif kind == "D" and len(fields) == 5:
                    self.deliveries[fields[2]].append((fields[1], fields[3] == "1", fields[4]))
                elif kind == "B":
                    self.blocked += 1
                elif kind == "K":
                    self.checks_answered += 1
        return self


def _txn(ledgers: Ledgers, msg_id: str) -> str | None:
    """The half or prepared transaction of a message (a prepared output names it: `in>txn`)."""
    if ">" in msg_id:
        return msg_id.split(">", 1)[1]
    return ledgers.txn_of.get(msg_id)


def check(ledgers: Ledgers) -> dict[str, list[str]]:
    """Each rule's violations (message ids, with what went wrong), empty when all hold."""
    problems: dict[str, list[str]] = {"lost": [], "phantom": [], "duplicate": [], "atomic": []}
    outputs: dict[str, list[str]] = defaultdict(list)  # prep input -> delivered outputs
    for msg_id, seen in ledgers.deliveries.items():
        if msg_id not in ledgers.sent and ">" not in msg_id:
            problems["phantom"].append(f"{msg_id}: never sent")
            continue
        queue = ledgers.sent.get(msg_id, "")
        txn = _txn(ledgers, msg_id)
        undone = msg_id in ledgers.rolled_back or (txn is not None and not decision(txn))
        if undone and any(q == queue or q == "soak.dead" for q, _, _ in seen):
            problems["phantom"].append(f"{msg_id}: rolled back, delivered")
        firsts: dict[str, int] = defaultdict(int)
        for q, redelivered, reason in seen:
            if not redelivered:
                firsts[q] += 1
            if q == "soak.dead" and reason != DEAD_REASON.get(queue):
                problems["phantom"].append(f"{msg_id}: dead-lettered from {queue} ({reason})")
        problems["duplicate"] += [
            f"{msg_id}: {n} first deliveries from {q}" for q, n in firsts.items() if n > 1
        ]
        if queue == "soak.prep.out":
            outputs[msg_id.split(">", 1)[0]].append(msg_id)
    for msg_id in ledgers.confirmed:
        queue = ledgers.sent.get(msg_id, "")
        if queue == "soak.prep.in":
            if len(outputs.get(msg_id, [])) != 1:
                problems["lost" if not outputs.get(msg_id) else "duplicate"].append(
                    f"{msg_id}: {len(outputs.get(msg_id, []))} outputs in soak.prep.out"
                )
            continue
        if queue == "soak.prep.out" or msg_id in ledgers.rolled_back:
            continue  # a prepared output: checked through its input
        txn = ledgers.txn_of.get(msg_id)
        if txn is not None and not decision(txn):
            continue
        places = {q for q, _, _ in ledgers.deliveries.get(msg_id, [])}
        if queue not in places and not (queue in DEAD_REASON and "soak.dead" in places):
            problems["lost"].append(f"{msg_id} ({queue})")
    batches: dict[str, list[str]] = defaultdict(list)
    for msg_id, queue in ledgers.sent.items():
        if "." in msg_id.rsplit(":", 1)[-1] and queue != "soak.prep.out":
            batches[msg_id.rsplit(".", 1)[0]].append(msg_id)
    for batch, parts in batches.items():
        if batch.startswith("half:") and not any(p in ledgers.txn_of for p in parts):
            continue  # killed before its local transaction: maybe not every part was held
        seen = [p for p in parts if p in ledgers.deliveries]
        if seen and len(seen) != len(parts):
            problems["atomic"].append(f"{batch}: {len(seen)} of {len(parts)} parts delivered")
    return problems


def totals(ledgers: Ledgers) -> dict[str, int]:
    dead = sum(
        1 for seen in ledgers.deliveries.values() if any(q == "soak.dead" for q, _, _ in seen)
    )
    redelivered = sum(1 for seen in ledgers.deliveries.values() for _, r, _ in seen if r)
    in_doubt = len(set(ledgers.sent) - ledgers.confirmed - ledgers.rolled_back)
    return {
        "messages sent": len(ledgers.sent),
        "confirmed or committed": len(ledgers.confirmed),
        "rolled back or aborted": len(ledgers.rolled_back),
        "in doubt (sent, no confirm / commit-ok)": in_doubt,
        "in doubt and delivered": sum(
            1
            for m in set(ledgers.sent) - ledgers.confirmed - ledgers.rolled_back
            if m in ledgers.deliveries
        ),
        "delivered (distinct)": len(ledgers.deliveries),
        "redeliveries": redelivered,
        "dead-lettered (distinct)": dead,
        "connection.blocked events": ledgers.blocked,
        "status checks answered": ledgers.checks_answered,
    }
