"""Policies and operator policies of a virtual host: RabbitMQ's validation (same texts), which
policy applies to a queue or exchange (pattern, apply-to, highest priority) and how a policy and
an operator policy merge into one definition. How a definition combines with a queue's own
x- arguments is queue_args.effective_arguments, the one place queue settings are decided."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rabbitish.engine import erlang_terms
from rabbitish.engine.queue_args import OVERFLOW_MODES, QUEUE_MODES

if TYPE_CHECKING:
    from rabbitish.engine.exchanges.base import Exchange
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

APPLY_TO = ("queues", "exchanges", "all")
# Numeric keys where a policy and an operator policy both set a value: the lower one wins.
LOWEST_WINS = frozenset(
    {
        "expires",
        "message-ttl",
        "max-length",
        "max-length-bytes",
        "max-in-memory-length",
        "max-in-memory-bytes",
        "delivery-limit",
    }
)
# What an operator policy may set (RabbitMQ 3.10 refuses any other key in one).
OPERATOR_KEYS = LOWEST_WINS


class PolicyError(ValueError):
    """A policy RabbitMQ would refuse; the text follows "Validation failed" in its reply."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _p(value: Any) -> str:
    """A JSON value as Erlang's ~p prints its decoded term."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(_p(v) for v in value) + "]"
    if isinstance(value, dict):
        return "#{" + ",".join(f"{_p(k)} => {_p(v)}" for k, v in value.items()) + "}"
    return erlang_terms.term(value)


def _check(accept: Callable[[Any], bool], what: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if accept(value) else f"{_p(value)} is not a valid {what}"

    return check


def _non_negative(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _one_of(*allowed: str) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and value in allowed


VALIDATORS: dict[str, Callable[[Any], str | None]] = {
    "alternate-exchange": _check(lambda v: isinstance(v, str), "alternate exchange name"),
    "dead-letter-exchange": _check(lambda v: isinstance(v, str), "dead letter exchange name"),
    "dead-letter-routing-key": _check(lambda v: isinstance(v, str), "dead letter routing key"),
    "message-ttl": _check(_non_negative, "message TTL"),
    "expires": _check(lambda v: _is_int(v) and v >= 1, "queue expiry"),
    "max-length": _check(_non_negative, "maximum length"),
    "max-length-bytes": _check(_non_negative, "maximum length in bytes"),
    "max-in-memory-length": _check(_non_negative, "maximum memory in bytes"),
    "max-in-memory-bytes": _check(_non_negative, "maximum memory in bytes"),
    "delivery-limit": _check(_non_negative, "delivery limit"),
    "overflow": _check(_one_of(*OVERFLOW_MODES), "overflow value"),
    "queue-mode": _check(_one_of(*QUEUE_MODES), "queue-mode value"),
    "queue-version": _check(lambda v: v in (1, 2) and _is_int(v), "queue version"),
    "queue-master-locator": _check(
        _one_of("min-masters", "client-local", "random"), "queue master locator"
    ),
    # Classic mirroring settings: accepted so definitions written for a cluster load; a single
    # node has nothing to mirror to, so they change nothing.
    "ha-mode": _check(_one_of("all", "exactly", "nodes"), "ha-mode value"),
    "ha-params": lambda value: None,
    "ha-sync-mode": _check(_one_of("manual", "automatic"), "ha-sync-mode value"),
    "ha-sync-batch-size": _check(lambda v: _is_int(v) and v > 0, "ha-sync-batch-size value"),
    "ha-promote-on-shutdown": _check(_one_of("always", "when-synced"), "ha-promote-on-shutdown"),
    "ha-promote-on-failure": _check(_one_of("always", "when-synced"), "ha-promote-on-failure"),
}


@dataclass(frozen=True)
class Policy:
    vhost: str
    name: str
    pattern: str
    apply_to: str
    priority: int | float
    definition: dict[str, Any]
    operator: bool = False
    regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))

    def applies_to(self, kind: str, name: str) -> bool:
        """`kind` is "queues" or "exchanges"; RabbitMQ's match is an unanchored search."""
        return self.apply_to in (kind, "all") and self.regex.search(name) is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "vhost": self.vhost,
            "name": self.name,
            "pattern": self.pattern,
            "apply-to": self.apply_to,
            "definition": dict(self.definition),
            "priority": self.priority,
        }


def _validate_definition(definition: dict[str, Any], operator: bool) -> None:
    allowed = OPERATOR_KEYS if operator else VALIDATORS.keys()
    for key in sorted(definition):
        if key in allowed:
            error = VALIDATORS[key](definition[key])
            if error is not None:
                raise PolicyError(error)
    unknown = [f"{{{_p(k)},{_p(definition[k])}}}" for k in sorted(definition) if k not in allowed]
    if unknown:
        raise PolicyError(f"{erlang_terms.term_list(unknown)} are not recognised policy settings")
    if not definition:
        raise PolicyError("no policy provided")


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        message = err.msg.split(",")[0]
        position = len(pattern) if message == "missing )" else (err.pos or 0)
        raise PolicyError(
            f'pattern should be regular expression but is invalid: {{"{message}",{position}}}'
        ) from None


def make_policy(vhost: str, name: str, body: dict[str, Any], operator: bool = False) -> Policy:
    """A policy from its JSON form (`pattern`, `definition`, optional `apply-to`, `priority`),
    checked in RabbitMQ's order: priority, pattern, apply-to, definition. Raises PolicyError,
    or TypeError where RabbitMQ fails with an internal error (a definition or apply-to that is
    not of the right JSON type)."""
    priority = body.get("priority", 0)
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        raise PolicyError(f"priority should be a number, actually was {_p(priority)}")
    pattern = body.get("pattern")
    if not isinstance(pattern, str):
        raise PolicyError(f"pattern should be a binary but was {_p(pattern)}")
    regex = _compile(pattern)
    apply_to = body.get("apply-to", "all")
    if apply_to is None:
        apply_to = "all"
    if not isinstance(apply_to, str):
        raise TypeError("apply-to must be a string")
    if apply_to not in APPLY_TO:
        raise PolicyError(
            f"apply-to '{apply_to}' unrecognised; should be 'queues', 'exchanges' or 'all'"
        )
    definition = body.get("definition")
    if not isinstance(definition, dict):
        raise TypeError("definition must be an object")
    _validate_definition(definition, operator)
    return Policy(vhost, name, pattern, apply_to, priority, dict(definition), operator, regex)


def effective_definition(policy: Policy | None, operator: Policy | None) -> dict[str, Any]:
    """The policy's definition with the operator policy's merged in: keys of both, and where
    both set one, the lower number for limits and the operator's value otherwise."""
    merged = dict(policy.definition) if policy is not None else {}
    if operator is not None:
        for key, value in operator.definition.items():
            if key in merged and key in LOWEST_WINS:
                merged[key] = min(merged[key], value)
            else:
                merged[key] = value
    return dict(sorted(merged.items()))


def _best(policies: dict[str, Policy], kind: str, name: str) -> Policy | None:
    best = None
    for _, policy in sorted(policies.items()):
        if policy.applies_to(kind, name) and (best is None or policy.priority > best.priority):
            best = policy
    return best


class VhostPolicies:
    """A vhost's policies and operator policies, kept applied to its queues and exchanges."""

    def __init__(self, vhost: VirtualHost) -> None:
        self.vhost = vhost
        self.policies: dict[str, Policy] = {}
        self.operator: dict[str, Policy] = {}

    def _table(self, operator: bool) -> dict[str, Policy]:
        return self.operator if operator else self.policies

    def listed(self, operator: bool) -> list[Policy]:
        return [p for _, p in sorted(self._table(operator).items())]

    def get(self, name: str, operator: bool) -> Policy | None:
        return self._table(operator).get(name)

    def put(self, policy: Policy) -> bool:
        """Add or replace a policy and apply it; True when it is new."""
        table = self._table(policy.operator)
        new = policy.name not in table
        table[policy.name] = policy
        self.vhost.journal.policy_set(policy)
        self.reapply()
        return new

    def restore(self, policy: Policy) -> None:
        """Recovery: the store's policy, before any queue or exchange comes back."""
        self._table(policy.operator)[policy.name] = policy

    def delete(self, name: str, operator: bool) -> bool:
        policy = self._table(operator).pop(name, None)
        if policy is None:
            return False
        self.vhost.journal.policy_cleared(policy)
        self.reapply()
        return True

    def apply_to_queue(self, queue: Queue) -> None:
        queue.apply_policies(
            _best(self.policies, "queues", queue.name),
            _best(self.operator, "queues", queue.name),
        )

    def apply_to_exchange(self, exchange: Exchange) -> None:
        if exchange.name:  # the default exchange takes no policy
            exchange.policy = _best(self.policies, "exchanges", exchange.name)

    def reapply(self) -> None:
        for queue in list(self.vhost.queues.values()):
            if not queue.deleted:
                self.apply_to_queue(queue)
        for exchange in self.vhost.exchanges.values():
            self.apply_to_exchange(exchange)
