"""Scenario modules, by area; importing this package registers every scenario."""

from compat_matrix.scenarios import (
    aio,
    arg_checks,
    basic,
    closing,
    content,
    dead_letter,
    exchanges,
    flow,
    ordering,
    queue_args,
    queues,
    restart,
    routing,
    tx,
    tx_wire,
    wire,
)

__all__ = [
    "aio",
    "arg_checks",
    "basic",
    "closing",
    "content",
    "dead_letter",
    "exchanges",
    "flow",
    "ordering",
    "queue_args",
    "queues",
    "restart",
    "routing",
    "tx",
    "tx_wire",
    "wire",
]
